/* remaps.c - mappings made, unmapped or moved under the guard.
 *
 * What the guard keeps about a page - the protection key a freed page kept
 * (keys_park.c), the protection the program gave it (program_prot.c) - lives
 * in the mapping: a munmap, an mremap or a fixed mmap over the page takes it
 * away, and the page that comes back there is readable, writable and has
 * key 0 (the real driver maps each chunk of managed memory anew and maps
 * anonymous memory over it at the free). The shim's wrappers of those calls,
 * from any thread, the driver's included, note the range here without a
 * lock; each reader reads the notes under the model lock before it believes
 * what it keeps. A mapping changed by a raw system call is not seen.
 *
 * A ring: a writer takes a ticket, clears its entry's stamp, fills it and
 * stamps it with the ticket + 1; a reader takes the entries in ticket order
 * from its own place, reading the stamp before and after the range (a
 * sequence lock), and one not stamped yet, or overwritten meanwhile, loses
 * the ring for that reader. Only remaps within the span some reader
 * watches are noted, so the program's own mapping calls elsewhere cost two
 * loads.
 */
#include "remaps.h"

#include "guard_internal.h"
#include "shim.h"

#define REMAPS_MAX 256
static struct {
  uintptr_t start, end;
  unsigned long stamp;
} remaps[REMAPS_MAX];
static unsigned long remap_head; /* atomic */
static struct ac_guard_span watched = AC_GUARD_SPAN_EMPTY;

void ac_guard_remaps_watch(uintptr_t start, uintptr_t end) {
  AC_ASSERT_MODEL_HELD();
  ac_guard_span_widen(&watched, start, end);
}

AC_NO_SANITIZE_ADDRESS void ac_guard_note_remap(uintptr_t start, size_t len) {
  uintptr_t end = start + len;
  if (!ac_guard_span_meets(&watched, start, end)) return;
  unsigned long ticket = __atomic_fetch_add(&remap_head, 1, __ATOMIC_ACQ_REL);
  size_t at = ticket % REMAPS_MAX;
  /* The range stored with release: a reader that sees it sees the stamp
   * cleared before it (no fences: ThreadSanitizer takes none). */
  __atomic_store_n(&remaps[at].stamp, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&remaps[at].start, start, __ATOMIC_RELEASE);
  __atomic_store_n(&remaps[at].end, end, __ATOMIC_RELEASE);
  __atomic_store_n(&remaps[at].stamp, ticket + 1, __ATOMIC_RELEASE);
}

bool ac_guard_remaps_read(struct ac_remap_reader *r,
                          void (*fn)(uintptr_t start, uintptr_t end, void *ctx), void *ctx) {
  AC_ASSERT_MODEL_HELD();
  unsigned long head = __atomic_load_n(&remap_head, __ATOMIC_ACQUIRE);
  bool whole = head - r->tail <= REMAPS_MAX;
  for (unsigned long t = r->tail; whole && t != head; t++) {
    size_t at = t % REMAPS_MAX;
    bool stamped = __atomic_load_n(&remaps[at].stamp, __ATOMIC_ACQUIRE) == t + 1;
    /* Acquire: the stamp is read again after the range, and a range a
     * writer stored is seen with its clearing of the stamp. */
    uintptr_t start = __atomic_load_n(&remaps[at].start, __ATOMIC_ACQUIRE);
    uintptr_t end = __atomic_load_n(&remaps[at].end, __ATOMIC_ACQUIRE);
    if (!stamped || __atomic_load_n(&remaps[at].stamp, __ATOMIC_RELAXED) != t + 1) {
      whole = false; /* not written yet, or rewritten while read */
      break;
    }
    fn(start, end, ctx);
  }
  r->tail = head;
  return whole;
}

void ac_guard_remaps_after_fork_child(void) {
  remap_head = 0;
}
