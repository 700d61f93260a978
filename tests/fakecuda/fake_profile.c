/* fake_profile.c - the device the stand-in driver plays: FAKECUDA_PROFILE.
 *
 *   h100   (default) a discrete GPU with concurrent managed access;
 *   tegra  a Jetson: no concurrent managed access, and a CPU access to
 *          managed memory the GPU owns kills the process;
 *   grace  a Grace Hopper: the GPU reaches pageable memory
 *          (PAGEABLE_MEMORY_ACCESS 1), so malloc'd memory may be attached.
 *
 * On a Jetson the GPU owns managed memory from the moment a stream that may
 * use it has work (a kernel launched, a host function queued) until the host
 * has seen that stream's work complete: globally attached memory while any
 * stream has such work, memory single-attached to a stream while that stream
 * has, host-attached memory never (the programming guide's rules without
 * concurrent managed access). A page holding memory the GPU owns is the
 * GPU's. No mprotect by the process gives it back: the fault comes from the
 * driver's mapping, not from the page protection the process can change. The stand-in plays that
 * with page protection of its own, which therefore has to win over the program's and the shim's
 * page guard: it exports mprotect, which the dynamic linker binds every caller in the global scope
 * to (the shim included, when the program links libcuda.so.1), and on managed pages it records the
 * protection asked for while keeping them PROT_NONE until the host synchronises; then it applies
 * what was asked. (A program that opens libcuda with dlopen keeps libc's mprotect: the tegra
 * profile needs a program linked with it.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake.h"

enum fake_profile fake_profile(void) {
  static int cached = -1;
  int p = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (p >= 0) return (enum fake_profile)p;
  const char *name = getenv("FAKECUDA_PROFILE");
  if (!name || !*name || strcmp(name, "h100") == 0)
    p = FAKE_PROFILE_H100;
  else if (strcmp(name, "tegra") == 0)
    p = FAKE_PROFILE_TEGRA;
  else if (strcmp(name, "grace") == 0)
    p = FAKE_PROFILE_GRACE;
  else
    p = FAKE_PROFILE_UNKNOWN;
  __atomic_store_n(&cached, p, __ATOMIC_RELAXED);
  return (enum fake_profile)p;
}

/* ---- the tegra profile's managed memory ---- */

#define MAX_REGIONS 1024
#define MAX_ACTIVE 256

/* One mapping of managed memory; desired[i] is the protection last asked for
 * page i, plus one (0: never asked, read-write); owned[i] whether the GPU
 * owns it now. Regions are never removed, only marked unmapped, so the
 * mprotect below reads them without fake_lock. */
struct region {
  uintptr_t base;
  size_t pages;
  unsigned char *desired, *owned;
  bool unmapped;
};
static struct region regions[MAX_REGIONS];
static size_t region_count;
/* The streams with work the host has not seen complete (fake_lock held). */
static const void *active[MAX_ACTIVE];
static size_t active_count;
static int spin; /* guards desired[] and owned[] against mprotect */

static void take_spin(void) {
  while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE))
    ;
}
static void drop_spin(void) {
  __atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
}

static size_t page_size(void) {
  static size_t page;
  if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
  return page;
}

static long real_mprotect(uintptr_t start, size_t len, int prot) {
  return syscall(SYS_mprotect, start, len, prot);
}

static bool is_tegra(void) {
  return fake_profile() == FAKE_PROFILE_TEGRA;
}

/* What page i of r should be now: the GPU's, or what was asked for it. */
static int page_prot(const struct region *r, size_t i) {
  if (r->owned[i]) return PROT_NONE;
  return r->desired[i] ? r->desired[i] - 1 : PROT_READ | PROT_WRITE;
}

/* Applies pages [first, last) of r, in runs. Spin held. */
static void apply(const struct region *r, size_t first, size_t last) {
  for (size_t i = first; i < last;) {
    size_t j = i;
    int prot = page_prot(r, i);
    while (j < last && page_prot(r, j) == prot)
      j++;
    real_mprotect(r->base + i * page_size(), (j - i) * page_size(), prot);
    i = j;
  }
}

static bool stream_active(const void *stream) {
  for (size_t i = 0; i < active_count; i++)
    if (active[i] == stream) return true;
  return false;
}

/* Whether the GPU owns allocation a now. */
static bool alloc_owned(const struct fake_alloc *a) {
  if (a->kind != FAKE_MANAGED || a->assoc == CU_MEM_ATTACH_HOST) return false;
  if (a->assoc == CU_MEM_ATTACH_SINGLE) return stream_active(a->stream);
  return active_count > 0;
}

static void mark_owned(const struct fake_alloc *a, void *fresh) {
  if (!alloc_owned(a)) return;
  uintptr_t start = a->base, end = a->base + a->size;
  for (size_t i = 0; i < region_count; i++) {
    const struct region *r = &regions[i];
    uintptr_t r_end = r->base + r->pages * page_size();
    if (r->unmapped || end <= r->base || start >= r_end) continue;
    size_t first = (start > r->base ? start - r->base : 0) / page_size();
    size_t last = ((end < r_end ? end : r_end) - r->base + page_size() - 1) / page_size();
    memset(((unsigned char **)fresh)[i] + first, 1, last - first);
  }
}

/* Ownership follows what changed: each page the GPU owns now, from the
 * allocations on it, applied where it differs from before (fake_lock held). */
static void recompute(void) {
  if (!is_tegra() || region_count == 0) return;
  static unsigned char *fresh[MAX_REGIONS];
  for (size_t i = 0; i < region_count; i++) {
    if (!fresh[i]) fresh[i] = calloc(regions[i].pages, 1);
    if (!fresh[i]) return;
    memset(fresh[i], 0, regions[i].pages);
  }
  fake_for_each_alloc(mark_owned, fresh);
  take_spin();
  for (size_t i = 0; i < region_count; i++) {
    struct region *r = &regions[i];
    if (r->unmapped) continue;
    for (size_t p = 0; p < r->pages;) {
      if (r->owned[p] == fresh[i][p]) {
        p++;
        continue;
      }
      size_t q = p;
      while (q < r->pages && r->owned[q] != fresh[i][q])
        r->owned[q] = fresh[i][q], q++;
      apply(r, p, q);
      p = q;
    }
  }
  drop_spin();
}

void fake_managed_mapped(uintptr_t base, size_t len) {
  if (!is_tegra() || region_count == MAX_REGIONS) return;
  size_t pages = (len + page_size() - 1) / page_size();
  unsigned char *desired = calloc(pages, 1), *owned = calloc(pages, 1);
  if (!desired || !owned) {
    free(desired);
    free(owned);
    return;
  }
  take_spin();
  regions[region_count] = (struct region){base, pages, desired, owned, false};
  __atomic_store_n(&region_count, region_count + 1, __ATOMIC_RELEASE);
  drop_spin();
}

void fake_managed_unmapped(uintptr_t base) {
  take_spin();
  for (size_t i = 0; i < region_count; i++)
    if (regions[i].base == base) regions[i].unmapped = true;
  drop_spin();
}

void fake_tegra_active(const void *stream) {
  if (!is_tegra() || stream_active(stream) || active_count == MAX_ACTIVE) return;
  active[active_count++] = stream;
  recompute();
}

void fake_tegra_idle(const void *stream) {
  if (!is_tegra()) return;
  for (size_t i = 0; i < active_count; i++)
    if (active[i] == stream) {
      active[i] = active[--active_count];
      recompute();
      return;
    }
}

void fake_tegra_all_idle(void) {
  if (!is_tegra() || active_count == 0) return;
  active_count = 0;
  recompute();
}

void fake_tegra_changed(void) {
  recompute();
}

/* The part of [start, end) in region r, as page indices; false if none. */
static bool overlap(const struct region *r, uintptr_t start, uintptr_t end, size_t *first,
                    size_t *last) {
  uintptr_t r_end = r->base + r->pages * page_size();
  if (r->unmapped || end <= r->base || start >= r_end) return false;
  *first = (start > r->base ? start - r->base : 0) / page_size();
  *last = ((end < r_end ? end : r_end) - r->base + page_size() - 1) / page_size();
  return true;
}

/* The program's (or the shim's) protection: recorded for managed pages, and
 * applied where the GPU does not own them. */
FAKE_EXPORT int mprotect(void *addr, size_t len, int prot) {
  uintptr_t start = (uintptr_t)addr, end = start + len;
  size_t count = __atomic_load_n(&region_count, __ATOMIC_ACQUIRE);
  if (count == 0) return (int)real_mprotect(start, len, prot);
  take_spin();
  long r = real_mprotect(start, len, prot);
  for (size_t i = 0; r == 0 && i < count; i++) {
    size_t first, last;
    if (!overlap(&regions[i], start, end, &first, &last)) continue;
    memset(regions[i].desired + first, prot + 1, last - first);
    apply(&regions[i], first, last);
  }
  drop_spin();
  return (int)r;
}
