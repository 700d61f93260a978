/* own_code.c - the address ranges of attachcheck's private libraries. */
#define _GNU_SOURCE
#include "own_code.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#define OWN_MAX 8

struct own_range {
  uintptr_t lo, hi;
};
static struct own_range ranges[OWN_MAX];
static int count; /* atomic: ranges[0, count) are filled */

struct finding {
  const void *base;
  uintptr_t lo, hi;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct finding *f = arg;
  if ((const void *)info->dlpi_addr != f->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    uintptr_t hi = lo + info->dlpi_phdr[i].p_memsz;
    if (lo < f->lo) f->lo = lo;
    if (hi > f->hi) f->hi = hi;
  }
  return 1;
}

bool ac_code_range_of(const void *code, uintptr_t *lo, uintptr_t *hi) {
  Dl_info info;
  if (!code || !dladdr(code, &info)) return false;
  struct finding f = {info.dli_fbase, UINTPTR_MAX, 0};
  dl_iterate_phdr(find_object, &f);
  *lo = f.lo, *hi = f.hi;
  return f.hi != 0;
}

void ac_own_code_add(const void *code) {
  uintptr_t lo, hi;
  int n = __atomic_load_n(&count, __ATOMIC_ACQUIRE);
  if (!ac_code_range_of(code, &lo, &hi) || n == OWN_MAX || ac_own_code_contains(lo)) return;
  ranges[n] = (struct own_range){lo, hi};
  __atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);
}

bool ac_own_code_contains(uintptr_t pc) {
  int n = __atomic_load_n(&count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (pc >= ranges[i].lo && pc < ranges[i].hi) return true;
  return false;
}
