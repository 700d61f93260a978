/* test_kernel_image.c - kernel parameter layouts read from module images
 * (shim/kernel_image.c): PTX text, an sm_90 cubin and a fatbin built by nvcc
 * from data/params.cu, which must agree with each other and with the layout
 * the compiler chose (offsets 0, 8, 16, 40, 42 for tiny's five parameters). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../shim/kernel_image.h"
#include "test.h"

#define MAX_KERNELS 8

struct found {
  int n;
  struct ac_image_kernel k[MAX_KERNELS];
};

static void collect(void *ctx, const struct ac_image_kernel *k) {
  struct found *f = ctx;
  if (f->n < MAX_KERNELS) f->k[f->n++] = *k;
}

static const struct ac_image_kernel *kernel(const struct found *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->k[i].name, name)) return &f->k[i];
  return NULL;
}

static char *slurp(const char *dir, const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = calloc(1, (size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, fp) != (size_t)len) b[0] = 0;
  fclose(fp);
  return b;
}

static bool has_layout(const struct ac_image_kernel *k, int count, const uint32_t *off,
                       const uint32_t *size) {
  if (!k || k->count != count) return false;
  for (int i = 0; i < count; i++)
    if (k->offset[i] != off[i] || k->size[i] != size[i]) return false;
  return true;
}

/* The three kernels of data/params.cu, whichever image they come from. */
static void check_params_cu(const char *image) {
  static const uint32_t tiny_off[] = {0, 8, 16, 40, 42}, tiny_size[] = {8, 8, 24, 1, 2};
  static const uint32_t other_off[] = {0}, other_size[] = {8};
  struct found f = {0};
  CHECK(image && ac_image_kernels(image, collect, &f) == 3);
  CHECK(has_layout(kernel(&f, "tiny"), 5, tiny_off, tiny_size));
  CHECK(has_layout(kernel(&f, "other"), 1, other_off, other_size));
  CHECK(has_layout(kernel(&f, "none"), 0, NULL, NULL));
}

static void test_handwritten_ptx(void) {
  /* Comments and strings that look like entries are not; attributes such as
   * .ptr .global sit between the type and the name; an .align pads. */
  const char *ptx = ".version 7.0\n.target sm_70\n.address_size 64\n"
                    "// .entry commented(.param .u64 x)\n"
                    "/* .entry block(.param .u32 y) */\n"
                    ".visible .entry k(\n"
                    "  .param .u32 k_a,\n"
                    "  .param .u64 .ptr .global .align 8 k_p,\n"
                    "  .param .align 16 .b8 k_s[20],\n"
                    "  .param .u8 k_c,\n"
                    "  .param .u32 .ptr .global .align 16 k_q\n"
                    ")\n{\n  .reg .b32 %r<2>;\n  ret;\n}\n"
                    ".visible .entry odd(.param .u64 a, .param <what> b, .param .u64 c)\n{\n}\n"
                    ".func (.param .u32 r) helper(.param .u64 q)\n{\n  ret;\n}\n";
  /* k_q's .align 16 is its pointee's: the parameter itself sits at 40. */
  static const uint32_t off[] = {0, 8, 16, 36, 40}, size[] = {4, 8, 20, 1, 4};
  struct found f = {0};
  CHECK(ac_image_kernels(ptx, collect, &f) == 2);
  CHECK(has_layout(kernel(&f, "k"), 5, off, size));
  /* A parameter that cannot be read: no layout rather than a shifted one. */
  CHECK(kernel(&f, "odd") && kernel(&f, "odd")->count == -1);
  CHECK(!kernel(&f, "commented") && !kernel(&f, "block") && !kernel(&f, "helper"));
}

/* The runtime hands the driver its wrapper of the fatbin nvcc embedded. */
static void check_wrapped_fatbin(const char *fatbin) {
  struct {
    int magic, version;
    const void *data, *unused;
  } wrapper = {0x466243b1, 1, fatbin, NULL};
  check_params_cu(fatbin ? (const char *)&wrapper : NULL);
}

/* Only a compressed PTX: nothing can be read, and that is said (-1). */
static void check_compressed_only(const char *fatbin) {
  struct found f = {0};
  CHECK(fatbin && ac_image_kernels(fatbin, collect, &f) == -1 && f.n == 0);
}

static void test_not_an_image(void) {
  static const unsigned char fatbin[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
  struct found f = {0};
  CHECK(ac_image_kernels(fatbin, collect, &f) == -1);
  CHECK(ac_image_kernels("just some text", collect, &f) == -1);
  CHECK(ac_image_kernels(NULL, collect, &f) == -1);
  CHECK(f.n == 0);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "data";
  char *ptx = slurp(dir, "params.ptx"), *cubin = slurp(dir, "params_sm90.cubin");
  char *fatbin = slurp(dir, "params_sm90.fatbin"), *ptx_only = slurp(dir, "params_ptx_only.fatbin");
  check_params_cu(ptx);
  check_params_cu(cubin);
  check_params_cu(fatbin);
  check_wrapped_fatbin(fatbin);
  check_compressed_only(ptx_only);
  test_handwritten_ptx();
  test_not_an_image();
  free(ptx);
  free(cubin);
  free(fatbin);
  free(ptx_only);
  return TEST_SUMMARY("test_kernel_image");
}
