/* fake_profile.c - the device the stand-in driver plays: FAKECUDA_PROFILE.
 *
 *   h100   (default) a discrete GPU with concurrent managed access;
 *   tegra  a Jetson: no concurrent managed access, and a CPU access to
 *          managed memory while GPU work is pending - a host function not
 *          yet run, or any kernel launched since the host last
 *          synchronised - kills the process;
 *   grace  a Grace Hopper: the GPU reaches pageable memory
 *          (PAGEABLE_MEMORY_ACCESS 1), so malloc'd memory may be attached.
 *
 * On a Jetson the GPU owns all managed memory from the moment work is
 * pending until the host synchronises, and no mprotect by the process gives
 * it back: the fault comes from the driver's mapping, not from the page
 * protection the process can change. The stand-in plays that with page
 * protection of its own, which therefore has to win over the program's and
 * the shim's page guard: it exports mprotect, which the dynamic linker binds
 * every caller in the global scope to (the shim included, when the program
 * links libcuda.so.1), and on managed pages it records the protection asked
 * for while keeping them PROT_NONE until the host synchronises; then it
 * applies what was asked. (A program that opens libcuda with dlopen keeps
 * libc's mprotect: the tegra profile needs a program linked with it.)
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

/* One mapping of managed memory; desired[i] is the protection last asked for
 * page i, plus one (0: never asked, read-write). Regions are never removed,
 * only marked unmapped, so the mprotect below reads them without fake_lock. */
struct region {
  uintptr_t base;
  size_t pages;
  unsigned char *desired;
  bool unmapped;
};
static struct region regions[MAX_REGIONS];
static size_t region_count;
static bool gpu_owns_managed; /* tegra: work pending and not yet synchronised */
static int spin;              /* guards desired[] and gpu_owns_managed against mprotect */

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

void fake_managed_mapped(uintptr_t base, size_t len) {
  if (fake_profile() != FAKE_PROFILE_TEGRA || region_count == MAX_REGIONS) return;
  size_t pages = (len + page_size() - 1) / page_size();
  unsigned char *desired = calloc(pages, 1);
  if (!desired) return;
  take_spin();
  regions[region_count] = (struct region){base, pages, desired, false};
  if (gpu_owns_managed) real_mprotect(base, pages * page_size(), PROT_NONE);
  __atomic_store_n(&region_count, region_count + 1, __ATOMIC_RELEASE);
  drop_spin();
}

void fake_managed_unmapped(uintptr_t base) {
  take_spin();
  for (size_t i = 0; i < region_count; i++)
    if (regions[i].base == base) regions[i].unmapped = true;
  drop_spin();
}

/* Applies to region r what was asked for each page, in runs. Spin held. */
static void apply_desired(const struct region *r) {
  size_t page = page_size();
  for (size_t i = 0; i < r->pages;) {
    size_t j = i;
    while (j < r->pages && r->desired[j] == r->desired[i])
      j++;
    int prot = r->desired[i] ? r->desired[i] - 1 : PROT_READ | PROT_WRITE;
    real_mprotect(r->base + i * page, (j - i) * page, prot);
    i = j;
  }
}

static void set_gpu_owns_managed(bool owns) {
  take_spin();
  if (owns != gpu_owns_managed) {
    gpu_owns_managed = owns;
    for (size_t i = 0; i < region_count; i++) {
      if (regions[i].unmapped) continue;
      if (owns)
        real_mprotect(regions[i].base, regions[i].pages * page_size(), PROT_NONE);
      else
        apply_desired(&regions[i]);
    }
  }
  drop_spin();
}

void fake_work_pending(void) {
  if (fake_profile() == FAKE_PROFILE_TEGRA) set_gpu_owns_managed(true);
}

void fake_host_synchronized(bool work_pending) {
  if (fake_profile() == FAKE_PROFILE_TEGRA && !work_pending) set_gpu_owns_managed(false);
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

FAKE_EXPORT int mprotect(void *addr, size_t len, int prot) {
  uintptr_t start = (uintptr_t)addr, end = start + len;
  size_t count = __atomic_load_n(&region_count, __ATOMIC_ACQUIRE);
  if (count == 0) return (int)real_mprotect(start, len, prot);
  size_t managed_bytes = 0;
  take_spin();
  for (size_t i = 0; i < count; i++) {
    size_t first, last;
    if (!overlap(&regions[i], start, end, &first, &last)) continue;
    memset(regions[i].desired + first, prot + 1, last - first);
    managed_bytes += (last - first) * page_size();
  }
  long r;
  if (gpu_owns_managed && managed_bytes >= len) {
    r = real_mprotect(start, len, PROT_NONE); /* all of it the GPU's: only recorded */
  } else {
    r = real_mprotect(start, len, prot);
    for (size_t i = 0; r == 0 && gpu_owns_managed && i < count; i++) {
      size_t first, last;
      if (overlap(&regions[i], start, end, &first, &last))
        real_mprotect(regions[i].base + first * page_size(), (last - first) * page_size(),
                      PROT_NONE);
    }
  }
  drop_spin();
  return (int)r;
}
