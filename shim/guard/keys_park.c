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
 * pages is noted here (interceptors_protect.c), from any thread, without a
 * lock, and the parked pages there are forgotten before the list is next
 * believed (keys_park_settle). A mapping changed by a raw system call is
 * not seen. A parked page that faults or is handed to a system call is
 * given key 0 (ac_guard_keys_unpark): its key means nothing any more.
 * Everything here is under the model lock but ac_guard_note_remap.
 */
#define _GNU_SOURCE
#include "guard_internal.h"
#include "keys_internal.h"
#include "shim.h"

/* ---- remaps, noted without the lock ---- */

/* A ring of the ranges remapped since the lock last read it: a writer takes
 * a ticket, fills its entry and stamps it with the ticket + 1; the reader
 * takes the entries in ticket order, and one not stamped yet, or already
 * overwritten, loses the ring (every parked page is forgotten). */
#define REMAPS_MAX 64
static struct {
  uintptr_t start, end;
  unsigned long stamp;
} remaps[REMAPS_MAX];
static unsigned long remap_head, remap_tail;         /* head atomic; tail under the lock */
static uintptr_t parked_lo = UINTPTR_MAX, parked_hi; /* atomic: what parked pages span */

AC_NO_SANITIZE_ADDRESS void ac_guard_note_remap(uintptr_t start, size_t len) {
  uintptr_t end = start + len;
  if (end <= __atomic_load_n(&parked_lo, __ATOMIC_ACQUIRE) ||
      start >= __atomic_load_n(&parked_hi, __ATOMIC_ACQUIRE))
    return;
  unsigned long ticket = __atomic_fetch_add(&remap_head, 1, __ATOMIC_ACQ_REL);
  size_t at = ticket % REMAPS_MAX;
  remaps[at].start = start;
  remaps[at].end = end;
  __atomic_store_n(&remaps[at].stamp, ticket + 1, __ATOMIC_RELEASE);
}

static void forget_all_parked(void) {
  for (int s = 0; s < ac_keys.key_count; s++)
    ac_keys.parked[s].n = 0;
  __atomic_store_n(&parked_lo, UINTPTR_MAX, __ATOMIC_RELEASE);
  __atomic_store_n(&parked_hi, 0, __ATOMIC_RELEASE);
}

static void forget_parked_in(uintptr_t start, uintptr_t end) {
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
  unsigned long head = __atomic_load_n(&remap_head, __ATOMIC_ACQUIRE);
  bool lost = head - remap_tail > REMAPS_MAX;
  for (unsigned long t = remap_tail; !lost && t != head; t++) {
    size_t at = t % REMAPS_MAX;
    if (__atomic_load_n(&remaps[at].stamp, __ATOMIC_ACQUIRE) != t + 1) {
      lost = true;
      break;
    }
    forget_parked_in(remaps[at].start, remaps[at].end);
  }
  remap_tail = head;
  if (!lost) return;
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
  if (pages->r[0].start < parked_lo)
    __atomic_store_n(&parked_lo, pages->r[0].start, __ATOMIC_RELEASE);
  if (pages->r[pages->n - 1].end > parked_hi)
    __atomic_store_n(&parked_hi, pages->r[pages->n - 1].end, __ATOMIC_RELEASE);
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
  remap_head = remap_tail = 0;
}
