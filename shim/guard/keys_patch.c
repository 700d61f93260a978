/* keys_patch.c - the protection keys' layout patched between layouts, and
 * what the keys shut.
 *
 * Laying the keys out looks at every class whole, and until it is done again
 * after a move the keys stand aside: a program that allocates, frees or
 * attaches a little at every step of its loop (a temporary buffer each
 * iteration) would never have its keys. When a few bytes moved, the pages
 * they lie on - the only ones whose owners can have changed, as a page's
 * owners are the classes of the bytes in it - are looked at again: one
 * where a keyed class's bytes now lie alone carries its key (a page of
 * freed memory kept it, keys_park.c: a temporary made again where the last
 * one was changes no tag), one shared with other bytes gets key 0 and goes
 * to mprotect, and each keyed class's and all managed memory's unkeyed
 * bytes are brought up to date there (elsewhere nothing changed). That
 * costs what moved. Past an eighth of the pages that had keys looked at
 * since the last layout, the keys stand aside until the next one. */
#define _GNU_SOURCE
#include <string.h>

#include "classes.h"
#include "guard_internal.h"
#include "keys_internal.h"
#include "shim.h"

/* The patch under way: its pages, the pages of them that carry each slot's
 * key now (listed or parked), and each slot's class's bytes there, which with
 * all managed bytes there decide each page's key at the end - in place, a
 * binary search and as many ranges coming as going, so a patch costs what
 * moved, not the length of what is alive (patches were quadratic in the
 * allocations: 20,000 attaches one by one, 2 s). */
static struct range_list patch_pages, patch_held[AC_PKEYS_HW_MAX], patch_bytes[AC_PKEYS_HW_MAX];
/* The patch gives the keys of its pages up whatever their bytes: a running
 * thread disagrees with their verdict (keys_follow.c's agree_with_threads). */
static bool patch_gives_up;

/* The pages (normalised, page-aligned) where bytes moved class are looked at
 * again; false, and nothing changed, when the keys stand aside or so many
 * keyed pages were looked at since the last layout that they should. Each
 * class's bytes there follow (ac_guard_keys_patch_class, _end). */

bool ac_guard_keys_patch_begin(const struct range_list *pages, bool give_up) {
  static struct range_list parked;
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_keys_active() || ac_keys.standing_aside) return false;
  patch_gives_up = give_up;
  keys_park_settle();
  size_t count = 0;
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_clip(&patch_held[s], &ac_keys.tagged[s], pages);
    count += keys_pages_in(&patch_held[s]);
  }
  if (ac_keys.demoted_pages + count > 32 + ac_keys.keyed_pages / 8) return false;
  ac_keys.demoted_pages += count;
  ac_guard_keys_restore_lifted(); /* the tags compared below are then the kernel's */
  for (int s = 0; s < ac_keys.key_count; s++) {
    /* In place: the lists are as long as what is alive, pages a few. */
    if (patch_held[s].n) range_subtract_from(&ac_keys.tagged[s], pages);
    range_clip(&parked, &ac_keys.parked[s], pages);
    if (parked.n) {
      range_subtract_from(&ac_keys.parked[s], pages);
      range_union_into(&patch_held[s], &parked);
    }
    patch_bytes[s].n = 0;
  }
  patch_pages.n = 0;
  return range_append_list(&patch_pages, pages);
}

/* Class id's bytes inside the patched pages (normalised). */
void ac_guard_keys_patch_class(const void *id, const struct range_list *bytes) {
  int s = keys_slot_of_class(id);
  if (s < 0 || !bytes->n) return;
  range_union_into(&patch_bytes[s], bytes);
}

/* The patched pages where slot s's class's bytes lie alone, into alone
 * (managed: every managed byte there). */
static void alone_on_pages(int s, const struct range_list *managed, struct range_list *alone) {
  static struct range_list others, others_pages;
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  alone->n = 0;
  if (patch_gives_up) return;
  range_subtract(&others, managed, &patch_bytes[s]);
  range_round_out(&others_pages, &others, page);
  range_round_out(alone, &patch_bytes[s], page);
  range_subtract_from(alone, &others_pages);
}

/* All managed bytes inside the patched pages (normalised): each page where a
 * keyed class's bytes lie alone carries its key - tagged only where it does
 * not already, so a page of freed memory that kept its key and gets bytes of
 * the same class again changes nothing -; a page holding other bytes gets key
 * 0, to the page tables; a page holding none keeps its key, parked. */
void ac_guard_keys_patch_end(const struct range_list *managed) {
  static struct range_list alone[AC_PKEYS_HW_MAX], all_alone, managed_pages, change, rest, joined,
      residual;
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  all_alone.n = 0;
  for (int s = 0; s < ac_keys.key_count; s++) {
    alone_on_pages(s, managed, &alone[s]);
    range_union(&joined, &all_alone, &alone[s]);
    range_swap(&all_alone, &joined);
  }
  range_round_out(&managed_pages, managed, page);
  ac_keys.patch_touched.n = 0;
  size_t keyed = 0;
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_subtract(&change, &alone[s], &patch_held[s]);
    keys_tag_ranges(&change, ac_keys.keys[s], &ac_keys.patch_touched);
    range_subtract(&rest, &patch_held[s], &all_alone);
    range_clip(&change, &rest, &managed_pages);
    keys_tag_ranges(&change, 0, &ac_keys.patch_touched);
    range_subtract_from(&rest, &managed_pages);
    keys_park(s, &rest);
    range_union_into(&ac_keys.tagged[s], &alone[s]);
    keyed += keys_pages_in(&alone[s]);
    range_subtract(&residual, &patch_bytes[s], &alone[s]);
    range_replace_within(&ac_keys.residual[s], &patch_pages, &residual);
  }
  /* The pages that kept or got a key are not demoted. */
  ac_keys.demoted_pages -= keyed < ac_keys.demoted_pages ? keyed : ac_keys.demoted_pages;
  range_subtract(&residual, managed, &all_alone);
  range_replace_within(&ac_keys.managed_residual, &patch_pages, &residual);
  ac_guard.stats.patches++;
  keys_forget_protection_of(&ac_keys.patch_touched); /* normalises it */
  keys_note_rekeyed(&patch_pages);
  keys_publish_tags();
}

/* The slots whose tagged pages no thread can touch now: disabled, with
 * every tagged page holding its key (none lifted) and the keys not
 * standing aside. */
static uint32_t shut_slots(void) {
  if (!ac_guard_keys_active() || ac_keys.standing_aside || ac_keys.key_lifted_count) return 0;
  return __atomic_load_n(&ac_keys.disabled_now, __ATOMIC_SEQ_CST);
}

/* The pages tagged with a key disabled now, normalised (lock held). */
void ac_guard_keys_shut_pages(struct range_list *out) {
  static struct range_list joined;
  AC_ASSERT_MODEL_HELD();
  out->n = 0;
  uint32_t shut = shut_slots();
  for (int s = 0; s < ac_keys.key_count; s++)
    if (shut & (1u << s)) {
      range_union(&joined, out, &ac_keys.tagged[s]);
      range_swap(out, &joined);
    }
}

/* Where l covers at, the end of that cover; at itself where it does not. */
static uintptr_t covered_until(const struct range_list *l, uintptr_t at) {
  size_t i = range_first_ending_after(l, at);
  return i < l->n && l->r[i].start <= at ? l->r[i].end : at;
}

/* Whether no thread can touch any page the bytes [start, end) lie on: each
 * is in mprotected (normalised) or tagged with a key disabled now. */
bool ac_guard_keys_pages_shut(const struct range_list *mprotected, uintptr_t start, uintptr_t end) {
  AC_ASSERT_MODEL_HELD();
  uint32_t shut = shut_slots();
  uintptr_t at = ac_guard_page_floor(start);
  while (at < end) {
    uintptr_t next = covered_until(mprotected, at);
    for (int s = 0; next == at && s < ac_keys.key_count; s++)
      if (shut & (1u << s)) next = covered_until(&ac_keys.tagged[s], at);
    if (next == at) return false;
    at = next;
  }
  return true;
}

/* --guard-verify: what is wrong with the keys as they stand against the
 * classes offered since ac_guard_keys_layout_begin (not laid out), or NULL:
 * each slot's pages hold bytes of its class alone, and what no key covers of
 * its class and of all managed memory is exactly the rest. Standing aside
 * the keys protect nothing, and nothing is wrong. */
const char *ac_guard_keys_layout_wrong(const struct range_list *all_managed) {
  static struct range_list others, pages, x, all_tagged, joined;
  static const struct range_list none;
  if (!ac_guard_keys_active() || ac_keys.standing_aside) return NULL;
  all_tagged.n = 0;
  for (int s = 0; s < ac_keys.key_count; s++) {
    const struct range_list *bytes = &none;
    for (size_t i = 0; i < ac_keys.offered_count; i++)
      if (ac_keys.offered[i].id == ac_keys.slot_owner[s]) bytes = &ac_keys.offered[i].bytes;
    range_subtract(&others, all_managed, bytes);
    range_round_out(&pages, &others, (uintptr_t)ac_guard.page_size);
    range_clip(&x, &ac_keys.tagged[s], &pages);
    if (x.n) return "a keyed page holds bytes of another class";
    range_subtract(&x, bytes, &ac_keys.tagged[s]);
    if (!range_equal(&x, &ac_keys.residual[s]))
      return "a class's bytes without a key are not its rest";
    range_union(&joined, &all_tagged, &ac_keys.tagged[s]);
    range_swap(&all_tagged, &joined);
  }
  /* A parked page holds no managed bytes, and is no slot's listed page. */
  range_round_out(&pages, all_managed, (uintptr_t)ac_guard.page_size);
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_clip(&x, &ac_keys.parked[s], &pages);
    if (x.n) return "a page that kept its key for freed memory holds managed bytes";
    range_clip(&x, &ac_keys.parked[s], &all_tagged);
    if (x.n) return "a page that kept its key for freed memory is a slot's listed page";
  }
  range_subtract(&x, all_managed, &all_tagged);
  if (!range_equal(&x, &ac_keys.managed_residual))
    return "the managed bytes without a key are not the rest";
  return NULL;
}

/* The bytes of class id that mprotect must protect when it is forbidden. */
const struct range_list *ac_guard_keys_unkeyed(const void *id, const struct range_list *bytes) {
  if (!ac_guard_keys_active() || ac_keys.standing_aside) return bytes;
  int s = keys_slot_of_class(id);
  return s < 0 ? bytes : &ac_keys.residual[s];
}

const struct range_list *ac_guard_keys_unkeyed_managed(const struct range_list *all_managed) {
  return ac_guard_keys_active() && !ac_keys.standing_aside ? &ac_keys.managed_residual
                                                           : all_managed;
}

void ac_guard_keys_program_keyed(uintptr_t start, uintptr_t end, int key) {
  AC_ASSERT_MODEL_HELD();
  if (key < 0 || !ac_guard_keys_active() || ac_keys.standing_aside) return;
  for (int s = 0; s < ac_keys.key_count; s++) {
    if (range_meets(&ac_keys.tagged[s], start, end)) {
      ac_guard_keys_stand_aside(); /* opening keeps the program's new key (pages.c) */
      return;
    }
  }
}
