/* kernel_image.c - kernel parameter layouts read from a module image.
 *
 * Drivers before 12.4 (JetPack 5 and 6) have no cuFuncGetParamInfo, so the
 * layout comes from the image the program loaded:
 *   PTX text: `.entry NAME( .param .u64 p, .param .align 8 .b8 s[24], ... )`;
 *     each parameter is placed at the next multiple of its alignment (the
 *     .align given, else the element size), as the driver lays them out.
 *   ELF cubin: the section `.nv.info.NAME` is a list of attributes, each a
 *     format byte, an attribute byte and a value; EIATTR_KPARAM_INFO (0x17,
 *     format EIFMT_SVAL: a 16-bit length, then 12 bytes) holds a u32 index,
 *     u16 ordinal, u16 offset and a u32 whose bits 18..31 are the size in
 *     bytes (bits 12..16 the constant bank). Checked against nvcc's cubins.
 *   fatbin (what nvcc embeds in programs, alone or behind the runtime's
 *     wrapper): its first uncompressed cubin or PTX entry.
 */
#include "kernel_image.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- PTX ---- */

/* Skips white space and comments. */
static const char *skip_space(const char *p) {
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr(p + 2, "*/");
      p = end ? end + 2 : p + strlen(p);
    } else {
      return p;
    }
  }
}

static bool ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* Copies the token at p (an identifier or directive) into out; returns its end. */
static const char *token(const char *p, char *out, size_t cap) {
  size_t n = 0;
  while (ident_char(*p)) {
    if (n + 1 < cap) out[n++] = *p;
    p++;
  }
  out[n] = 0;
  return p;
}

/* Bytes of a PTX scalar type (".u64", ".b8", ".f16x2" is not a param type). */
static uint32_t scalar_size(const char *t) {
  if (t[0] != '.' || !strchr("usbf", t[1])) return 0;
  if (!strcmp(t + 2, "8")) return 1;
  if (!strcmp(t + 2, "16")) return 2;
  if (!strcmp(t + 2, "32")) return 4;
  if (!strcmp(t + 2, "64")) return 8;
  return 0;
}

/* One `.param ...` declaration, from p to the ',' or ')' that ends it. */
static const char *ptx_param(const char *p, uint32_t *size, uint32_t *align, bool *ok) {
  uint32_t elem = 0, count = 1;
  bool pointee = false; /* after .ptr, .align is the pointee's, not the parameter's */
  *size = *align = 0;
  *ok = false;
  while (*(p = skip_space(p)) && *p != ',' && *p != ')') {
    char tok[64];
    if (*p == '[') { /* s[24] */
      count = (uint32_t)strtoul(p + 1, NULL, 10);
      while (*p && *p != ']')
        p++;
      if (*p) p++;
      continue;
    }
    const char *next = token(p, tok, sizeof tok);
    if (next == p) return p + 1; /* not PTX we know: the kernel's layout is not known */
    p = next;
    if (!strcmp(tok, ".ptr")) {
      pointee = true;
    } else if (!strcmp(tok, ".align")) {
      p = skip_space(p);
      if (!pointee) *align = (uint32_t)strtoul(p, NULL, 10);
      while (isdigit((unsigned char)*p))
        p++;
    } else if (scalar_size(tok)) {
      elem = scalar_size(tok);
    } else if (tok[0] != '.' && elem) {
      *ok = true; /* the parameter's name */
    }
  }
  *size = elem * (count ? count : 1);
  if (!*align) *align = elem;
  *ok = *ok && elem;
  return p;
}

/* The parameter list after `.entry NAME`; p at '('. A parameter that cannot
 * be read leaves the whole layout unknown (count -1): a layout with one
 * parameter missing would misplace every one after it. */
static const char *ptx_params(const char *p, struct ac_image_kernel *k) {
  uint32_t offset = 0;
  bool unreadable = false;
  p++;
  while (*(p = skip_space(p)) && *p != ')') {
    uint32_t size, align;
    bool ok;
    p = ptx_param(p, &size, &align, &ok);
    unreadable |= !ok;
    if (ok && k->count < AC_IMAGE_MAX_PARAMS) {
      if (align) offset = (offset + align - 1) / align * align;
      k->offset[k->count] = offset;
      k->size[k->count++] = size;
      offset += size;
    }
    if (*p == ',') p++;
  }
  if (unreadable) k->count = -1;
  return *p ? p + 1 : p;
}

/* Every `.entry` of the module, found at the top level (kernel bodies are
 * skipped by their braces). */
static int ptx_kernels(const char *p, ac_image_kernel_fn fn, void *ctx) {
  int found = 0, depth = 0;
  struct ac_image_kernel k;
  while (*(p = skip_space(p))) {
    if (*p == '{' || *p == '}') {
      depth += *p == '{' ? 1 : -1;
      p++;
      continue;
    }
    if (*p == '"') { /* a string: its text is no directive */
      for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
      if (*p) p++;
      continue;
    }
    char tok[AC_IMAGE_MAX_NAME];
    const char *next = token(p, tok, sizeof tok);
    if (next == p) {
      p++;
      continue;
    }
    p = next;
    if (depth || strcmp(tok, ".entry")) continue;
    memset(&k, 0, sizeof k);
    p = token(skip_space(p), k.name, sizeof k.name);
    p = skip_space(p);
    if (*p == '(') p = ptx_params(p, &k);
    fn(ctx, &k);
    found++;
  }
  return found;
}

/* ---- ELF cubin ---- */

#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17

static uint16_t u16(const unsigned char *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t u32(const unsigned char *p) {
  return u16(p) | (uint32_t)u16(p + 2) << 16;
}
static uint64_t u64(const unsigned char *p) {
  return u32(p) | (uint64_t)u32(p + 4) << 32;
}

/* The KPARAM_INFO records of one .nv.info.NAME section. */
static void cubin_params(const unsigned char *a, uint64_t len, struct ac_image_kernel *k) {
  uint64_t i = 0;
  while (i + 2 <= len) {
    unsigned fmt = a[i], attr = a[i + 1];
    if (fmt == EIFMT_NVAL) {
      i += 2;
    } else if (fmt == EIFMT_BVAL || fmt == EIFMT_HVAL) {
      i += 4;
    } else if (fmt == EIFMT_SVAL && i + 4 <= len) {
      uint16_t n = u16(a + i + 2);
      if (i + 4 + n > len) return;
      const unsigned char *v = a + i + 4;
      if (attr == EIATTR_KPARAM_INFO && n >= 12) {
        uint16_t ordinal = u16(v + 4);
        if (ordinal < AC_IMAGE_MAX_PARAMS) {
          k->offset[ordinal] = u16(v + 6);
          k->size[ordinal] = u32(v + 8) >> 18;
          if (ordinal >= k->count) k->count = ordinal + 1;
        }
      }
      i += 4 + (uint64_t)n;
    } else {
      return; /* a format we do not know: the rest cannot be read */
    }
  }
}

/* 64-bit little-endian ELF, as every cubin of a 64-bit program is. Its
 * extent comes from its own header (the driver reads it the same way). */
static int cubin_kernels(const unsigned char *e, ac_image_kernel_fn fn, void *ctx) {
  if (e[4] != 2 || e[5] != 1) return -1;
  uint64_t shoff = u64(e + 0x28);
  uint16_t shentsize = u16(e + 0x3a), shnum = u16(e + 0x3c), shstrndx = u16(e + 0x3e);
  if (!shoff || shentsize < 0x40 || shstrndx >= shnum) return -1;
  const unsigned char *names = e + u64(e + shoff + (uint64_t)shstrndx * shentsize + 0x18);
  static const char prefix[] = ".nv.info.";
  int found = 0;
  struct ac_image_kernel k;
  for (uint16_t i = 0; i < shnum; i++) {
    const unsigned char *sh = e + shoff + (uint64_t)i * shentsize;
    const char *name = (const char *)names + u32(sh);
    if (strncmp(name, prefix, sizeof prefix - 1)) continue;
    memset(&k, 0, sizeof k);
    size_t n = strnlen(name + sizeof prefix - 1, sizeof k.name - 1);
    memcpy(k.name, name + sizeof prefix - 1, n);
    cubin_params(e + u64(sh + 0x18), u64(sh + 0x20), &k);
    fn(ctx, &k);
    found++;
  }
  return found;
}

/* ---- fatbin ---- */

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2

static int image_kernels(const unsigned char *b, ac_image_kernel_fn fn, void *ctx, int depth);

static bool is_elf(const unsigned char *b) {
  return b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

/* A fatbin: a 16-byte header (magic, version, header size, size of the
 * entries) and entries, each a header (kind, header size, payload size at
 * 0, 4, 8) and a payload. The first entry read wins: every entry of one
 * fatbin is the same source for another architecture, with the same
 * parameter layout. Compressed payloads (nvcc compresses PTX by default,
 * cubins when that pays) are not read: they do not start as an image does. */
static int fatbin_kernels(const unsigned char *b, ac_image_kernel_fn fn, void *ctx, int depth) {
  const unsigned char *e = b + u16(b + 6), *end = e + u64(b + 8);
  while (e + 16 <= end) {
    uint16_t kind = u16(e);
    const unsigned char *payload = e + u32(e + 4);
    uint64_t size = u64(e + 8);
    if (payload < e + 16 || payload + size > end) return -1;
    bool readable = kind == FATBIN_KIND_ELF ? size >= 0x40 && is_elf(payload)
                                            : kind == FATBIN_KIND_PTX && memchr(payload, 0, size);
    if (readable) {
      int found = image_kernels(payload, fn, ctx, depth + 1);
      if (found >= 0) return found;
    }
    e = payload + size;
  }
  return -1;
}

static int image_kernels(const unsigned char *b, ac_image_kernel_fn fn, void *ctx, int depth) {
  if (!b || depth > 2) return -1;
  if (is_elf(b)) return cubin_kernels(b, fn, ctx);
  uint32_t magic = u32(b);
  if (magic == FATBIN_MAGIC) return fatbin_kernels(b, fn, ctx, depth);
  /* The runtime's wrapper: magic, version, then a pointer to the fatbin. */
  if (magic == FATBIN_WRAPPER_MAGIC) {
    const unsigned char *fatbin;
    memcpy(&fatbin, b + 8, sizeof fatbin);
    return image_kernels(fatbin, fn, ctx, depth + 1);
  }
  /* PTX is text that says its version and target. */
  const char *text = (const char *)b;
  if (!strstr(text, ".version") || !strstr(text, ".target")) return -1;
  return ptx_kernels(text, fn, ctx);
}

int ac_image_kernels(const void *image, ac_image_kernel_fn fn, void *ctx) {
  return image_kernels(image, fn, ctx, 0);
}
