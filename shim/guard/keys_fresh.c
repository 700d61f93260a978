/* keys_fresh.c - a managed allocation's fresh mapping gets its class's key
 * at birth, whole.
 *
 * A framework that makes fresh arrays at every step (CuPy with one
 * cuMemAllocManaged per array) gets no reuse from parked keys (keys_park.c):
 * the real driver maps each allocation's 2 MiB chunk of its device file anew
 * (a fixed, shared mapping) and maps anonymous memory over it at the free,
 * so every array is a mapping with no key. The patch after the allocation
 * then tags its pages - 1 MiB of a 2 MiB mapping, splitting it, on pages the
 * GPU is already using, and again for the chunk's second array: 6-13 us a
 * call on an H200, each holding the address space's lock that the driver's
 * fault servicing also takes (docs/gpu-results.md).
 *
 * So the mappings the driver makes while it allocates managed memory are
 * noted on the allocating thread, and when the allocation is recorded (its
 * flags say its class), the fresh mappings that hold it are tagged whole
 * with that class's key - once, before any page of them has a page-table
 * entry - and parked: the patch that follows finds the class's bytes alone
 * on parked pages of its slot and lists them with no tag changed, and so
 * does the next allocation of that class in the rest of the chunk. A chunk
 * whose rest later gets bytes of another class is retagged there as any
 * page is.
 *
 * Only the GLOBAL class is tagged so: an allocation made with
 * CU_MEM_ATTACH_HOST has no keyed class until it is attached. The noting is
 * the allocating thread's own (no lock); the tagging is under the model
 * lock.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "guard_internal.h"
#include "keys_internal.h"
#include "shim.h"

/* The fixed, shared mappings the driver made on this thread during the
 * managed allocation under way: one hull, grown while they are adjacent. */
static __thread struct {
  bool armed;
  uintptr_t start, end;
} fresh;

void ac_guard_fresh_begin(void) {
  fresh.armed = true;
  fresh.start = fresh.end = 0;
}

void ac_guard_fresh_end(void) {
  fresh.armed = false;
}

AC_NO_SANITIZE_ADDRESS void ac_guard_note_mapped(uintptr_t start, size_t len, int flags, int fd) {
  if (flags & MAP_FIXED) ac_guard_note_remap(start, len);
  if (!fresh.armed) return; /* the common case: not inside a managed allocation */
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  if (!page || !(flags & MAP_FIXED) || (flags & MAP_TYPE) == MAP_PRIVATE || fd < 0 ||
      start % page || len == 0)
    return;
  uintptr_t end = start + ((len + page - 1) & ~(page - 1));
  if (fresh.end && start == fresh.end)
    fresh.end = end;
  else if (fresh.end && end == fresh.start)
    fresh.start = start;
  else {
    fresh.start = start;
    fresh.end = end;
  }
}

/* Whether a slot lists a page of [start, end) as tagged, parked or lifted:
 * then the mapping is not as fresh as it looks, and is left to the patch. */
static bool keys_listed_in(uintptr_t start, uintptr_t end) {
  for (int s = 0; s < ac_keys.key_count; s++)
    if (range_meets(&ac_keys.tagged[s], start, end) || range_meets(&ac_keys.parked[s], start, end))
      return true;
  for (size_t i = 0; i < ac_keys.key_lifted_count; i++)
    if (ac_keys.key_lifted[i].page >= start && ac_keys.key_lifted[i].page < end) return true;
  return false;
}

void ac_guard_fresh_allocation_locked(uintptr_t base, size_t size, bool global) {
  static struct range_list pages, touched;
  AC_ASSERT_MODEL_HELD();
  uintptr_t start = fresh.start, end = fresh.end;
  fresh.start = fresh.end = 0; /* one allocation takes them */
  if (!global || !fresh.armed || !end || base < start || base + size > end) return;
  if (!ac_guard_keys_active() || ac_keys.standing_aside) return;
  int s = keys_slot_of_class(&ac_guard_global_class);
  if (s < 0) return;
  keys_park_settle(); /* what the driver's mapping replaced is forgotten */
  if (keys_listed_in(start, end)) return;
  touched.n = 0;
  keys_pages_of(&pages, start, end);
  keys_tag_ranges(&pages, ac_keys.keys[s], &touched);
  keys_forget_protection_of(&touched);
  keys_note_rekeyed(&touched);
  keys_park(s, &pages);
  ac_guard_note_guardable(start, end); /* the chunk's rest is keyed too */
  ac_guard.stats.fresh_tagged++;
  keys_publish_tags();
}
