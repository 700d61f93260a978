/* keys_park.c - freed memory keeps its class's key.
 *
 * A loop that makes a temporary at each step - a scratch buffer, a
 * framework's fresh tensor - gets the same addresses back from the driver
 * each time. Giving a freed page key 0 and the next allocation there its
 * class's key again costs two protection changes a step, and on a GPU each
 * waits on the page tables the driver and the GPU use (5.7 us for a page
 * the CPU wrote: docs/gpu-results.md). So the pages of freed memory keep
 * their key, *parked*: listed by slot, holding no managed bytes. The next
 * patch or layout that finds a class's bytes alone on a parked page of its
 * slot lists it as that slot's again without a system call; a parked page
 * that gets bytes of another class is retagged as any page is.
 *
 * The list says what the page tables hold only while the mapping lives: a
 * driver that unmaps freed memory, or maps something else over it, takes the
 * key with it. Every munmap, mremap and fixed mmap that may touch parked
 * pages is noted (remaps.c), from any thread, without a lock, and the parked
 * pages there are forgotten before the list is next believed
 * (keys_park_settle). A mapping changed by a raw system call is not seen.
 * A parked page that faults or is handed to a system call is given key 0
 * (ac_guard_keys_unpark): its key means nothing any more. Everything here
 * is under the model lock.
 */
#define _GNU_SOURCE
#include "guard_internal.h"
#include "keys_internal.h"
#include "remaps.h"
#include "shim.h"

/* ---- remaps (remaps.c) ---- */

static struct ac_remap_reader reader;

static void forget_all_parked(void) {
  for (int s = 0; s < ac_keys.key_count; s++)
    ac_keys.parked[s].n = 0;
}

static void forget_parked_in(uintptr_t start, uintptr_t end, void *unused) {
  (void)unused;
  static struct range_list cut, lost;
  keys_pages_of(&cut, start, end);
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_clip(&lost, &ac_keys.parked[s], &cut);
    if (!lost.n) continue;
    ac_guard.stats.remapped += keys_pages_in(&lost);
    range_subtract_from(&ac_keys.parked[s], &cut);
  }
}

/* The remaps noted since last time: their parked pages forgotten. */
void keys_park_settle(void) {
  AC_ASSERT_MODEL_HELD();
  if (ac_guard_remaps_read(&reader, forget_parked_in, NULL)) return;
  for (int s = 0; s < ac_keys.key_count; s++) /* each may have been remapped */
    ac_guard.stats.remapped += keys_pages_in(&ac_keys.parked[s]);
  forget_all_parked();
}

/* ---- parking ---- */

/* pages (normalised) keep slot s's key with no bytes on them. */
void keys_park(int s, const struct range_list *pages) {
  AC_ASSERT_MODEL_HELD();
  if (!pages->n) return;
  ac_guard.stats.parked += keys_pages_in(pages);
  range_union_into(&ac_keys.parked[s], pages);
  ac_guard_remaps_watch(pages->r[0].start, pages->r[pages->n - 1].end);
}

/* Every parked page gets key 0 (the keys are given up or handed back, or
 * stand aside, when the page tables may retag them without telling). */
void keys_unpark_all(struct range_list *touched) {
  AC_ASSERT_MODEL_HELD();
  keys_park_settle();
  for (int s = 0; s < ac_keys.key_count; s++)
    keys_tag_ranges(&ac_keys.parked[s], 0, touched);
  forget_all_parked();
}

bool ac_guard_keys_unpark(uintptr_t start, uintptr_t end) {
  static struct range_list window, found, touched;
  AC_ASSERT_MODEL_HELD();
  touched.n = 0;
  keys_pages_of(&window, start, end);
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_clip(&found, &ac_keys.parked[s], &window);
    if (!found.n) continue;
    range_subtract_from(&ac_keys.parked[s], &window);
    keys_tag_ranges(&found, 0, &touched);
  }
  if (!touched.n) return false;
  keys_publish_tags();
  return true;
}

void keys_park_after_fork_child(void) {
  forget_all_parked();
  reader.tail = 0;
}
