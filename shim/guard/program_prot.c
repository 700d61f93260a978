/* program_prot.c - the protection the program itself gave its managed memory
 * (mprotect, pkey_mprotect), which the guard's own changes keep.
 *
 * The guard closes pages and opens them again; opening used to make them
 * readable and writable, so a program that made its own idle managed pages
 * read-only never got the SIGSEGV it waited for, and a program making busy
 * pages readable and writable itself took the guard's protection off them.
 * The shim wraps mprotect and pkey_mprotect (interceptors_memory.c): what
 * the program sets on managed memory is kept here, page-aligned pieces that
 * differ from readable-writable with key 0; opening a page gives it the
 * program's protection and key back (pages.c), and pages the guard holds
 * closed are closed again after the program's call.
 *
 * A piece with a key of the program's own cannot take a key of the guard's
 * too (a page has one key): it is closed with PROT_NONE, keeping its key,
 * and the guard's keys leave it out.
 *
 * The protection lives in the mapping: when the driver unmaps freed memory
 * or maps anew over it (remaps.c), the pages that come back are readable and
 * writable with key 0, and the pieces there are forgotten before the next is
 * read - a stale read-only piece opened a fresh allocation read-only, and
 * the program's first write crashed (`ok.protected_then_freed`). Should the
 * notes overflow, the pieces are kept as they are. Everything here is under
 * the model lock; the SIGSEGV handler reads the pieces with the lock held
 * too.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "classes.h"
#include "grow.h"
#include "guard_internal.h"
#include "remaps.h"
#include "shim.h"

#define DEFAULT_PROT (PROT_READ | PROT_WRITE)

struct piece {
  uintptr_t start, end;
  int prot, key;
};
static struct piece *pieces; /* sorted, disjoint, none with the default */
/* piece_count is written under the model lock, with atomic stores: the
 * SIGSEGV handler reads it without the lock (maybe_set_any). */
static size_t piece_count, piece_cap;

/* The index of the first piece that ends after at. */
static size_t first_after(uintptr_t at) {
  size_t lo = 0, hi = piece_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (pieces[mid].end <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Room for k more pieces at index at. */
static bool make_room(size_t at, size_t k) {
  for (size_t i = 0; i < k; i++)
    if (!AC_GROW(pieces, piece_count + i, piece_cap, 16)) return false;
  memmove(pieces + at + k, pieces + at, (piece_count - at) * sizeof *pieces);
  __atomic_store_n(&piece_count, piece_count + k, __ATOMIC_RELAXED);
  return true;
}

/* [start, end) set to prot and key (key >= 0). */
static void assign(uintptr_t start, uintptr_t end, int prot, int key) {
  /* Cut the pieces that straddle the range's ends, then drop those inside. */
  size_t i = first_after(start);
  if (i < piece_count && pieces[i].start < start && pieces[i].end > end) {
    if (!make_room(i, 1)) return;
    pieces[i + 1] = pieces[i];
    pieces[i].end = start;
    pieces[i + 1].start = end;
    i++;
  } else if (i < piece_count && pieces[i].start < start) {
    pieces[i].end = start;
    i++;
  }
  size_t j = i;
  while (j < piece_count && pieces[j].end <= end)
    j++;
  if (j < piece_count && pieces[j].start < end) pieces[j].start = end;
  if (j > i) { /* pieces is NULL until the first piece: no pointer arithmetic on it */
    memmove(pieces + i, pieces + j, (piece_count - j) * sizeof *pieces);
    __atomic_store_n(&piece_count, piece_count - (j - i), __ATOMIC_RELAXED);
  }
  if ((prot != DEFAULT_PROT || key != 0) && make_room(i, 1))
    pieces[i] = (struct piece){start, end, prot, key};
}

/* [start, end) set to prot and key; key -1 (mprotect): each part keeps the
 * key it had. */
static void set_range(uintptr_t start, uintptr_t end, int prot, int key) {
  if (key >= 0) {
    assign(start, end, prot, key);
    return;
  }
  while (start < end) {
    size_t i = first_after(start);
    bool inside = i < piece_count && pieces[i].start <= start;
    uintptr_t e = inside ? pieces[i].end : i < piece_count ? pieces[i].start : end;
    if (e > end) e = end;
    assign(start, e, prot, inside ? pieces[i].key : 0);
    start = e;
  }
}

/* The pieces of mappings replaced since the last read: gone with them. */
static struct ac_remap_reader reader;
static void forget_remapped(uintptr_t start, uintptr_t end, void *unused) {
  (void)unused;
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  if (piece_count) assign(start & ~(page - 1), (end + page - 1) & ~(page - 1), DEFAULT_PROT, 0);
}
/* Set while the SIGSEGV handler opens a page without the lock (fault.c's
 * lift_without_lock): the code it interrupted may be in the middle of
 * these pieces, so the remaps wait for the next reader under the lock. */
static __thread bool unlocked_reader;
void ac_guard_program_unlocked(bool on) {
  unlocked_reader = on;
}
static void settle(void) {
  if (unlocked_reader) return;
  AC_ASSERT_MODEL_HELD();
  ac_guard_remaps_read(&reader, forget_remapped, NULL);
}

void ac_guard_program_pieces(uintptr_t start, uintptr_t end,
                             void (*fn)(uintptr_t start, uintptr_t end, int prot, int key,
                                        void *ctx),
                             void *ctx) {
  settle();
  for (size_t i = first_after(start); start < end; i++) {
    if (i >= piece_count || pieces[i].start >= end) {
      fn(start, end, DEFAULT_PROT, 0, ctx);
      return;
    }
    if (pieces[i].start > start) fn(start, pieces[i].start, DEFAULT_PROT, 0, ctx);
    uintptr_t e = pieces[i].end < end ? pieces[i].end : end;
    fn(pieces[i].start > start ? pieces[i].start : start, e, pieces[i].prot, pieces[i].key, ctx);
    start = e;
  }
}

bool ac_guard_program_maybe_set_any(void) {
  return __atomic_load_n(&piece_count, __ATOMIC_RELAXED) > 0;
}

bool ac_guard_program_set_any(void) {
  settle();
  return ac_guard_program_maybe_set_any();
}

static void note_keyed(uintptr_t start, uintptr_t end, int prot, int key, void *keyed) {
  (void)start, (void)end, (void)prot;
  if (key != 0) *(bool *)keyed = true;
}

bool ac_guard_program_keyed_in(uintptr_t start, uintptr_t end) {
  bool keyed = false;
  if (piece_count) ac_guard_program_pieces(start, end, note_keyed, &keyed);
  return keyed;
}

int ac_guard_program_prot_at(uintptr_t addr) {
  settle();
  size_t i = first_after(addr);
  return i < piece_count && pieces[i].start <= addr ? pieces[i].prot : DEFAULT_PROT;
}

/* Closed pages of [start, end) the program's call opened: closed again. */
static void close_again(uintptr_t start, uintptr_t end) {
  static struct range_list range, closed;
  range.n = 0;
  range_push(&range, start, end);
  range_clip(&closed, &ac_guard.protected_now, &range);
  for (size_t i = 0; i < closed.n; i++)
    ac_guard_close_pages(closed.r[i].start, closed.r[i].end);
}

void ac_guard_program_protects(uintptr_t start, size_t len, int prot, int key) {
  if (!ac_guard_on() || !len || __atomic_load_n(&ac_foreign_child, __ATOMIC_RELAXED)) return;
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  uintptr_t end = (start + len + page - 1) & ~(page - 1);
  start &= ~(page - 1);
  ac_model_enter();
  settle();
  static struct range_list window;
  window.n = 0;
  range_push(&window, start, end);
  bool managed = ac_guard_classes_all_managed(&window)->n > 0;
  size_t i = first_after(start);
  if (managed || (i < piece_count && pieces[i].start < end)) {
    set_range(start, end, prot, key);
    ac_guard_remaps_watch(start, end); /* a remap there takes the protection away */
    close_again(start, end);
    ac_guard_keys_program_keyed(start, end, key);
  }
  ac_model_leave();
}

void ac_guard_program_prot_after_fork_child(void) {
  __atomic_store_n(&piece_count, 0, __ATOMIC_RELAXED);
  reader.tail = 0;
}
