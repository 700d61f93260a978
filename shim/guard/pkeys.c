/* pkeys.c - the processor's memory protection keys (pkeys.h): detection, the
 * PKRU register, the PKRU of a signal frame, and the assignment of keys to
 * protection classes. The system calls are made with syscall(2), so the shim
 * needs no glibc of any particular age for them.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "pkeys.h"

/* Under AddressSanitizer: the kernel writes a signal frame on whatever stack
 * the signal is delivered, and on a program's alternate stack that may be
 * memory where a frame of the shim's own handler was abandoned (the program's
 * handler left it by siglongjmp) and is still marked as that frame's redzones.
 * The frame the kernel wrote is fresh data: it is unmarked before it is read. */
#if defined(__SANITIZE_ADDRESS__)
#define AC_FRAME_UNPOISON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AC_FRAME_UNPOISON 1
#endif
#endif
#ifdef AC_FRAME_UNPOISON
#include <sanitizer/asan_interface.h>
#define frame_written_by_kernel(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define frame_written_by_kernel(p, n) ((void)(p), (void)(n))
#endif

uint32_t ac_pkru_bits_of(uint32_t mask, const int *keys, int key_count) {
  uint32_t bits = 0;
  for (int i = 0; i < key_count; i++)
    if (mask & (1u << i)) bits |= ac_pkru_disable_bits(keys[i]);
  return bits;
}

/* ---- the XSAVE area of a signal frame ----
 * The kernel puts the FXSAVE image (512 bytes) first; its last 48 bytes,
 * unused by the processor, say whether the extended state follows
 * (magic 0x46505853) and how large it is; the XSAVE header (the bitmap of the
 * states present) comes at byte 512. A component the bitmap leaves out is in
 * its initial state and is not read back at sigreturn, so a written PKRU sets
 * its bit. */
#define FXSAVE_SIZE 512
#define SW_BYTES_OFFSET 464
#define XSTATE_MAGIC1 0x46505853u
#define XFEATURE_PKRU 9

struct sw_bytes { /* the kernel's struct _fpx_sw_bytes */
  uint32_t magic1, extended_size;
  uint64_t xfeatures;
  uint32_t xstate_size;
};

uint32_t *ac_pkeys_frame_pkru_at(void *fpstate, uint32_t pkru_offset) {
  if (!fpstate || pkru_offset < FXSAVE_SIZE + 64) return NULL;
  unsigned char *area = fpstate;
  struct sw_bytes sw;
  frame_written_by_kernel(area, FXSAVE_SIZE + 64);
  memcpy(&sw, area + SW_BYTES_OFFSET, sizeof sw);
  if (sw.magic1 != XSTATE_MAGIC1 || !(sw.xfeatures & (1ull << XFEATURE_PKRU)) ||
      (uint64_t)pkru_offset + 4 > sw.xstate_size)
    return NULL;
  frame_written_by_kernel(area, sw.xstate_size);
  uint64_t present;
  memcpy(&present, area + FXSAVE_SIZE, sizeof present);
  if (!(present & (1ull << XFEATURE_PKRU))) {
    /* Initial state: every key enabled. Make it explicit before editing. */
    uint32_t init = 0;
    memcpy(area + pkru_offset, &init, sizeof init);
    present |= 1ull << XFEATURE_PKRU;
    memcpy(area + FXSAVE_SIZE, &present, sizeof present);
  }
  return (uint32_t *)(void *)(area + pkru_offset);
}

#if defined(__x86_64__)

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static uint32_t pkru_offset_in_xsave(void) {
  static uint32_t offset = UINT32_MAX;
  if (offset == UINT32_MAX) {
    uint32_t r[4];
    cpuid(0xd, XFEATURE_PKRU, r);
    __atomic_store_n(&offset, r[0] >= 4 ? r[1] : 0, __ATOMIC_RELAXED);
  }
  return offset;
}

bool ac_pkeys_supported(const char **why) {
  uint32_t r[4];
  cpuid(0, 0, r);
  if (r[0] < 0xd) return *why = "this CPU has no protection keys", false;
  cpuid(7, 0, r);
  if (!(r[2] & (1u << 3))) return *why = "this CPU has no protection keys", false;
  if (!(r[2] & (1u << 4))) return *why = "the kernel has not enabled protection keys", false;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (!(lo & (1u << XFEATURE_PKRU)) || !pkru_offset_in_xsave())
    return *why = "the kernel does not save PKRU in signal frames", false;
  return true;
}

uint32_t ac_pkru_read(void) {
  uint32_t eax, edx;
  __asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0)); /* rdpkru */
  return eax;
}

void ac_pkru_write(uint32_t pkru) {
  __asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(pkru), "c"(0), "d"(0) : "memory"); /* wrpkru */
}

uint32_t *ac_pkeys_frame_pkru(void *ucontext) {
  ucontext_t *uc = ucontext;
  frame_written_by_kernel(uc, sizeof *uc);
  return ac_pkeys_frame_pkru_at(uc->uc_mcontext.fpregs, pkru_offset_in_xsave());
}

int ac_pkeys_alloc(void) {
  /* Access disabled for the calling thread, as every other thread has it
   * (the kernel's default PKRU disables every key but 0). */
  return (int)syscall(SYS_pkey_alloc, 0UL, 1UL /* PKEY_DISABLE_ACCESS */);
}

void ac_pkeys_free(int key) {
  syscall(SYS_pkey_free, (long)key);
}

static unsigned tags_made;

int ac_pkeys_protect(uintptr_t start, uintptr_t end, int prot, int key) {
  int r = (int)syscall(SYS_pkey_mprotect, start, end - start, prot, key);
  if (r == 0) __atomic_add_fetch(&tags_made, 1, __ATOMIC_RELEASE);
  return r;
}

int ac_pkeys_tag(uintptr_t start, uintptr_t end, int key) {
  return ac_pkeys_protect(start, end, PROT_READ | PROT_WRITE, key);
}

unsigned ac_pkeys_tags_made(void) {
  return __atomic_load_n(&tags_made, __ATOMIC_ACQUIRE);
}

#else /* no protection keys on this processor */

bool ac_pkeys_supported(const char **why) {
  *why = "this processor has no protection keys";
  return false;
}
uint32_t ac_pkru_read(void) {
  return 0;
}
void ac_pkru_write(uint32_t pkru) {
  (void)pkru;
}
uint32_t *ac_pkeys_frame_pkru(void *ucontext) {
  (void)ucontext;
  return NULL;
}
int ac_pkeys_alloc(void) {
  return -1;
}
void ac_pkeys_free(int key) {
  (void)key;
}
int ac_pkeys_protect(uintptr_t start, uintptr_t end, int prot, int key) {
  (void)start, (void)end, (void)prot, (void)key;
  return -1;
}
int ac_pkeys_tag(uintptr_t start, uintptr_t end, int key) {
  return ac_pkeys_protect(start, end, PROT_READ | PROT_WRITE, key);
}
unsigned ac_pkeys_tags_made(void) {
  return 0;
}

#endif

/* ---- keys for classes ---- */

void ac_pkeys_assign(struct ac_key_class *classes, size_t count, int slot_count) {
  bool taken[AC_PKEYS_HW_MAX] = {false};
  for (size_t i = 0; i < count; i++) {
    int s = classes[i].slot;
    if (!classes[i].pages || s < 0 || s >= slot_count || taken[s])
      classes[i].slot = -1;
    else
      taken[s] = true;
  }
  for (int s = 0; s < slot_count; s++) {
    if (taken[s]) continue;
    size_t best = count; /* the largest class still without a key */
    for (size_t i = 0; i < count; i++)
      if (classes[i].slot < 0 && classes[i].pages &&
          (best == count || classes[i].pages > classes[best].pages))
        best = i;
    if (best == count) break;
    classes[best].slot = s;
    taken[s] = true;
  }
}
