/* keys.c - the page guard on protection keys (pkeys.h): which classes get
 * keys, and their pages' tags.
 *
 * A protection class (globally attached memory under strict semantics, the
 * memory single-attached to one stream) that holds pages alone gets a key,
 * and its pages are tagged with it once per change of layout. A transition
 * then costs a register write instead of page-table changes: the class's key
 * is disabled in each thread's PKRU exactly while the model forbids the CPU
 * its memory. What has no key (classes beyond the keys there are, pages
 * shared between classes, pending attaches, globally attached memory under
 * device semantics) is closed through the page tables (refresh.c, pages.c):
 * with the closing key, which no thread enables; the two never cover one page.
 *
 * PKRU is per thread and only a thread writes its own (threads.c). Every
 * thread's PKRU enables a class's key exactly while the class is allowed -
 * not lazily on its first touch: a system call given allowed memory would
 * fail with EFAULT in a thread whose key is disabled. When a transition
 * changes a verdict that some running thread has not caught up with, the
 * slot gives its pages up to the page tables (ac_guard_keys_agree) until the
 * keys are laid out again. Everything here is under ac_model_lock unless
 * said otherwise.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "grow.h"
#include "classes.h"
#include "guard_internal.h"
#include "keys_internal.h"
#include "shim.h"

const char ac_guard_global_class = 'G'; /* the GLOBAL class's identity */

struct ac_keys_state ac_keys = {.closing_key = -1, .lift_key = -1};

uint32_t ac_guard_keys_disabled_now(void) {
  return __atomic_load_n(&ac_keys.disabled_now, __ATOMIC_SEQ_CST);
}

unsigned ac_guard_keys_verdicts_epoch(void) {
  return __atomic_load_n(&ac_keys.verdicts_epoch, __ATOMIC_SEQ_CST);
}

uint32_t ac_guard_keys_pkru_for(uint32_t pkru, uint32_t disabled) {
  uint32_t bits = ac_pkru_bits_of(disabled, ac_keys.keys, ac_keys.key_count) | ac_keys.closing_bits;
  if (disabled & (1u << LIFT_SLOT)) bits |= ac_keys.lift_bits;
  return ac_pkru_merge(pkru, ac_keys.our_bits | ac_keys.closing_bits | ac_keys.lift_bits, bits);
}

int ac_guard_keys_closing(void) {
  return ac_guard_keys_active() ? ac_keys.closing_key : -1;
}

/* ---- classes and tags ---- */

void keys_note_rekeyed(const struct range_list *pages) {
  if (ac_keys.rekeyed_all) return;
  if (ac_keys.rekeyed.n + pages->n > 4096) range_normalise(&ac_keys.rekeyed);
  if (ac_keys.rekeyed.n + pages->n > 4096 || !range_append_list(&ac_keys.rekeyed, pages)) {
    ac_keys.rekeyed_all = true;
    ac_keys.rekeyed.n = 0;
  }
}

/* out = the pages [start, end) lies on, one range. */
void keys_pages_of(struct range_list *out, uintptr_t start, uintptr_t end) {
  out->n = 0;
  range_push(out, ac_guard_page_floor(start),
             ac_guard_page_floor(end - 1) + (uintptr_t)ac_guard.page_size);
}

/* How many pages l (page-aligned) covers. */
size_t keys_pages_in(const struct range_list *l) {
  size_t count = 0;
  for (size_t j = 0; j < l->n; j++)
    count += (l->r[j].end - l->r[j].start) / (uintptr_t)ac_guard.page_size;
  return count;
}

/* No lock: a thread that starts asks (threads.c). */
bool ac_guard_keys_active(void) {
  return __atomic_load_n(&ac_keys.key_count, __ATOMIC_ACQUIRE) > 0 &&
         !__atomic_load_n(&ac_keys.keys_broken, __ATOMIC_RELAXED);
}

const struct range_list *ac_guard_keys_take_rekeyed(bool *all) {
  static struct range_list taken;
  range_swap(&taken, &ac_keys.rekeyed);
  ac_keys.rekeyed.n = 0;
  *all = ac_keys.rekeyed_all;
  ac_keys.rekeyed_all = false;
  return &taken;
}

void ac_guard_keys_layout_begin(void) {
  for (size_t i = 0; i < ac_keys.offered_count; i++)
    ac_keys.offered[i].bytes.n = 0;
  ac_keys.offered_count = 0;
}

void ac_guard_keys_layout_class(const void *id, const struct range_list *bytes) {
  if (!ac_guard_keys_active() || !bytes->n) return;
  size_t old_cap = ac_keys.offered_cap;
  if (!AC_GROW(ac_keys.offered, ac_keys.offered_count, ac_keys.offered_cap, 8)) return;
  if (ac_keys.offered_cap != old_cap) /* new slots own no list yet */
    memset(ac_keys.offered + old_cap, 0, (ac_keys.offered_cap - old_cap) * sizeof *ac_keys.offered);
  struct offered_class *c = &ac_keys.offered[ac_keys.offered_count++];
  c->id = id;
  c->bytes.n = 0;
  range_append_list(&c->bytes, bytes);
}

static int by_start(const void *a, const void *b) {
  const struct keyed_range *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* entries[0, *n) and owner slot's list (sorted, as every owner's is), merged
 * in address order into spare, which then swaps with entries. Owners are
 * disjoint, so no two starts tie. */
static void merge_owner(struct keyed_range **entries, struct keyed_range **spare, size_t *n,
                        const struct range_list *l, int slot) {
  size_t i = 0, j = 0, k = 0;
  while (i < *n || j < l->n) {
    if (j >= l->n || (i < *n && (*entries)[i].start <= l->r[j].start))
      (*spare)[k++] = (*entries)[i++];
    else
      (*spare)[k++] = (struct keyed_range){l->r[j].start, l->r[j].end, slot}, j++;
  }
  struct keyed_range *t = *entries;
  *entries = *spare, *spare = t, *n = k;
}

/* The pages that hold bytes of more than one owner (a class, or managed
 * memory of no class): each owner's list is sorted already, so they are
 * merged in address order, not sorted (a sort of every range at every
 * layout was most of laying the keys out), and neighbours sharing a page
 * with another owner mark it. */
static void mixed_pages(struct range_list *mixed, const struct range_list *all_managed) {
  static struct range_list classed, spare_list, unclassed;
  static struct keyed_range *entries, *spare;
  static size_t entry_cap;
  size_t n = 0, total = 0;
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  classed.n = mixed->n = 0;
  /* One class that is all managed memory (every allocation globally
   * attached, as at most programs' first launch): no page has two owners. */
  if (ac_keys.offered_count == 1 && range_equal(&ac_keys.offered[0].bytes, all_managed)) return;
  for (size_t i = 0; i < ac_keys.offered_count; i++) {
    if (!range_union(&spare_list, &classed, &ac_keys.offered[i].bytes)) return;
    range_swap(&classed, &spare_list);
    total += ac_keys.offered[i].bytes.n;
  }
  range_subtract(&unclassed, all_managed, &classed);
  total += unclassed.n;
  if (total > entry_cap) {
    struct keyed_range *grown = realloc(entries, total * sizeof *entries);
    if (grown) entries = grown;
    struct keyed_range *grown_spare = grown ? realloc(spare, total * sizeof *spare) : NULL;
    if (grown_spare) spare = grown_spare;
    if (!grown || !grown_spare) return;
    entry_cap = total;
  }
  for (size_t i = 0; i < ac_keys.offered_count; i++)
    merge_owner(&entries, &spare, &n, &ac_keys.offered[i].bytes, (int)i);
  merge_owner(&entries, &spare, &n, &unclassed, -1);
  for (size_t i = 1; i < n; i++) {
    uintptr_t last = (entries[i - 1].end - 1) & ~(page - 1);
    if (entries[i].slot != entries[i - 1].slot && (entries[i].start & ~(page - 1)) == last)
      range_push(mixed, last, last + page);
  }
  range_normalise(mixed);
}

void keys_publish_tags(void) {
  static struct keyed_range all[AC_PUBLISHED_MAX];
  static struct range ranges[AC_PUBLISHED_MAX];
  static int slots[AC_PUBLISHED_MAX];
  size_t n = 0;
  bool overflow = false;
  for (int s = 0; s < ac_keys.key_count && !overflow; s++)
    for (int parked = 0; parked < 2 && !overflow; parked++) {
      const struct range_list *l = parked ? &ac_keys.parked[s] : &ac_keys.tagged[s];
      for (size_t j = 0; j < l->n; j++) {
        if (n == AC_PUBLISHED_MAX) {
          overflow = true;
          break;
        }
        all[n++] = (struct keyed_range){l->r[j].start, l->r[j].end, s};
      }
    }
  ac_sort_unless_sorted(all, n, sizeof all[0], by_start);
  for (size_t i = 0; i < n; i++) {
    ranges[i] = (struct range){all[i].start, all[i].end};
    slots[i] = all[i].slot;
  }
  ac_published_set(&ac_keys.published, ranges, slots, overflow ? AC_PUBLISHED_MAX + 1 : n);
}

/* Tagging a page makes it readable and writable again (pkey_mprotect sets
 * both): mprotect's record of what it protected must forget those pages, so
 * that what is still wanted is protected again. */
void keys_tag_ranges(const struct range_list *l, int key, struct range_list *made_accessible) {
  for (size_t i = 0; i < l->n; i++) {
    ac_guard_tag_pages(l->r[i].start, l->r[i].end, key);
    range_push(made_accessible, l->r[i].start, l->r[i].end);
  }
}

void keys_forget_protection_of(struct range_list *made_accessible) {
  static struct range_list rest;
  if (!made_accessible->n) return;
  range_normalise(made_accessible);
  range_subtract(&rest, &ac_guard.protected_now, made_accessible);
  range_swap(&ac_guard.protected_now, &rest);
}

/* Every keyed page gives its key up - tagged 0, as a patch does - so that
 * the page tables, which close a page by tagging it with the closing key,
 * cover everything until the next layout. */
void ac_guard_keys_stand_aside(void) {
  static struct range_list touched;
  if (ac_keys.standing_aside) return;
  touched.n = 0;
  ac_guard_keys_restore_lifted(); /* the tags given up below are then the kernel's */
  for (int s = 0; s < ac_keys.key_count; s++) {
    keys_note_rekeyed(&ac_keys.tagged[s]);
    keys_tag_ranges(&ac_keys.tagged[s], 0, &touched);
    ac_keys.tagged[s].n = 0;
  }
  /* Standing aside, nothing patches the keys: a parked page that gets bytes
   * would keep a key that no longer says whose they are. */
  keys_unpark_all(&touched);
  keys_forget_protection_of(&touched);
  keys_publish_tags();
  ac_keys.standing_aside = true;
  ac_guard.stats.stood_aside++;
}

/* Tags slot s's pages with its key where they do not carry it yet - listed
 * or parked -, gives key 0 back to those that left every slot and hold
 * managed bytes, and parks the rest (all: the union of the new tags;
 * managed_pages: the pages holding managed bytes). */
static void retag(struct range_list *next, const struct range_list *all,
                  const struct range_list *managed_pages) {
  static struct range_list change, zero, touched, moved_in, held[AC_PKEYS_HW_MAX],
      parked[AC_PKEYS_HW_MAX];
  touched.n = moved_in.n = 0;
  for (int s = 0; s < ac_keys.key_count; s++)
    range_union(&held[s], &ac_keys.tagged[s], &ac_keys.parked[s]);
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_subtract(&change, &held[s], all);
    range_subtract(&parked[s], &change, managed_pages);
    range_clip(&zero, &change, managed_pages);
    keys_tag_ranges(&zero, 0, &touched);
    range_subtract(&change, &next[s], &held[s]);
    keys_tag_ranges(&change, ac_keys.keys[s], &touched);
    range_subtract(&change, &next[s], &ac_keys.tagged[s]);
    range_append_list(&moved_in, &change);
  }
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_swap(&ac_keys.tagged[s], &next[s]);
    ac_keys.parked[s].n = 0;
    keys_park(s, &parked[s]);
  }
  keys_forget_protection_of(&touched); /* normalises touched */
  keys_note_rekeyed(&touched);
  range_normalise(&moved_in);
  keys_note_rekeyed(&moved_in); /* parked pages listed again: no tag changed */
  keys_publish_tags();
}

void ac_guard_keys_layout_end(const struct range_list *all_managed) {
  static struct range_list mixed, pages, next[AC_PKEYS_HW_MAX], all_tagged, swap, managed_pages;
  static struct range_list *exclusive;
  static struct ac_key_class *wanted;
  static size_t wanted_cap;
  if (!ac_guard_keys_active()) return;
  ac_guard_keys_restore_lifted(); /* the tags compared below are then the kernel's */
  keys_park_settle();
  mixed_pages(&mixed, all_managed);
  if (ac_keys.offered_count > wanted_cap) {
    struct ac_key_class *grown = realloc(wanted, ac_keys.offered_count * sizeof *wanted);
    struct range_list *more = realloc(exclusive, ac_keys.offered_count * sizeof *exclusive);
    if (more) {
      memset(more + wanted_cap, 0, (ac_keys.offered_count - wanted_cap) * sizeof *more);
      exclusive = more;
    }
    if (grown) wanted = grown;
    if (!grown || !more) return;
    wanted_cap = ac_keys.offered_count;
  }
  for (size_t i = 0; i < ac_keys.offered_count; i++) {
    range_round_out(&pages, &ac_keys.offered[i].bytes, (uintptr_t)ac_guard.page_size);
    range_subtract(&exclusive[i], &pages, &mixed);
    size_t count = keys_pages_in(&exclusive[i]);
    int had = -1;
    for (int s = 0; s < ac_keys.key_count; s++)
      if (ac_keys.slot_owner[s] == ac_keys.offered[i].id) had = s;
    wanted[i] = (struct ac_key_class){ac_keys.offered[i].id, count, had};
  }
  ac_pkeys_assign(wanted, ac_keys.offered_count, ac_keys.key_count);
  for (int s = 0; s < ac_keys.key_count; s++) {
    ac_keys.slot_owner[s] = NULL;
    next[s].n = ac_keys.residual[s].n = 0;
  }
  all_tagged.n = 0;
  ac_keys.keyed_pages = ac_keys.demoted_pages = 0;
  for (size_t i = 0; i < ac_keys.offered_count; i++) {
    int s = wanted[i].slot;
    if (s < 0) continue;
    ac_keys.keyed_pages += wanted[i].pages;
    ac_keys.slot_owner[s] = ac_keys.offered[i].id;
    range_append_list(&next[s], &exclusive[i]);
    range_subtract(&ac_keys.residual[s], &ac_keys.offered[i].bytes, &exclusive[i]);
    range_union(&swap, &all_tagged, &exclusive[i]);
    range_swap(&all_tagged, &swap);
  }
  /* Standing aside, mprotect covered every keyed page: each is looked at
   * again. Otherwise what mprotect covers changes where a key changed only
   * (retag notes those). */
  if (ac_keys.standing_aside) {
    for (int s = 0; s < ac_keys.key_count; s++)
      keys_note_rekeyed(&ac_keys.tagged[s]);
    keys_note_rekeyed(&all_tagged);
  }
  range_round_out(&managed_pages, all_managed, (uintptr_t)ac_guard.page_size);
  retag(next, &all_tagged, &managed_pages);
  range_subtract(&ac_keys.managed_residual, all_managed, &all_tagged);
  ac_keys.standing_aside = false;
}

int keys_slot_of_class(const void *id) {
  for (int s = 0; s < ac_keys.key_count; s++)
    if (ac_keys.slot_owner[s] == id) return s;
  return -1;
}

/* Lifted pages in [start, end) are dropped into lifted (they carry the lift
 * key, not their slot's): memory going back to the driver must not get a
 * key back from ac_guard_keys_restore_lifted. */
static void drop_lifted_in(uintptr_t start, uintptr_t end, struct range_list *lifted) {
  size_t kept = 0;
  for (size_t i = 0; i < ac_keys.key_lifted_count; i++)
    if (ac_keys.key_lifted[i].page + (uintptr_t)ac_guard.page_size <= start ||
        ac_keys.key_lifted[i].page >= end)
      ac_keys.key_lifted[kept++] = ac_keys.key_lifted[i];
    else
      range_push(lifted, ac_keys.key_lifted[i].page,
                 ac_keys.key_lifted[i].page + (uintptr_t)ac_guard.page_size);
  keys_set_lifted_count(kept);
  range_normalise(lifted);
}

/* Memory about to go back to the driver: its keyed pages are parked, keeping
 * their key (keys_park.c); the patch that follows the free lists those that
 * still hold bytes of their class as the slot's again, with no tag changed.
 * Its lifted pages get key 0. */
void ac_guard_keys_forget(uintptr_t start, uintptr_t end) {
  static struct range_list pages, gone, lifted, touched;
  if (!ac_guard_keys_active() || start >= end) return;
  keys_park_settle();
  touched.n = lifted.n = 0;
  drop_lifted_in(start, end, &lifted);
  keys_pages_of(&pages, start, end);
  for (int s = 0; s < ac_keys.key_count; s++) {
    range_clip(&gone, &ac_keys.tagged[s], &pages);
    if (!gone.n) continue;
    range_subtract_from(&ac_keys.tagged[s], &pages);
    keys_note_rekeyed(&gone);
    range_subtract_from(&gone, &lifted);
    keys_park(s, &gone);
  }
  keys_tag_ranges(&lifted, 0, &touched);
  keys_forget_protection_of(&touched);
  keys_publish_tags();
}

/* Every page the keys hold goes back to key 0, and what the closing key
 * closed mprotect closes from now on: the guard goes on as the mprotect
 * backend (model lock). */
static void keys_give_up_locked(void) {
  static struct range_list touched;
  AC_ASSERT_MODEL_HELD();
  touched.n = 0;
  keys_set_lifted_count(0);
  for (int s = 0; s < ac_keys.key_count; s++) {
    keys_tag_ranges(&ac_keys.tagged[s], 0, &touched);
    ac_keys.tagged[s].n = ac_keys.residual[s].n = 0;
    ac_keys.slot_owner[s] = NULL;
  }
  keys_unpark_all(&touched);
  __atomic_store_n(&ac_keys.disabled_now, 0, __ATOMIC_SEQ_CST);
  keys_forget_protection_of(&touched);
  keys_publish_tags();
  for (size_t i = 0; i < ac_guard.protected_now.n; i++)
    ac_pkeys_protect(ac_guard.protected_now.r[i].start, ac_guard.protected_now.r[i].end, PROT_NONE,
                     0);
  __atomic_store_n(&ac_keys.keys_broken, true, __ATOMIC_RELAXED);
}

/* A device without concurrent managed access: its driver protects managed
 * memory itself while the GPU owns it, and pkey_mprotect, which sets a
 * protection with every key, would undo the driver's (a touch that crashes
 * bare would run on). The keys are given up, and mprotect, which the
 * guard applies over what the driver asked for, covers everything. */
void ac_guard_keys_decline(int device) {
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_keys_active()) return;
  keys_give_up_locked();
  if (ac_opts.guard_pages == AC_GUARD_PKEYS || ac_opts.verbose)
    ac_log("%spage guard: device %d has no concurrent managed access (its driver protects managed "
           "memory itself); using mprotect, not protection keys",
           ac_opts.guard_pages == AC_GUARD_PKEYS ? "warning: --guard-pages pkeys: " : "", device);
}

/* The program asked for a protection key and the kernel had none left: the
 * guard's keys are the program's before its own checking is. They are given
 * up and freed, and the numbers forgotten - a fault on a key the program now
 * owns is never taken for the guard's (model lock). Whether any was freed. */
bool ac_guard_keys_yield_locked(void) {
  AC_ASSERT_MODEL_HELD();
  int held = (ac_keys.closing_key >= 0) + (ac_keys.lift_key >= 0) + ac_keys.key_count;
  if (!held) return false;
  if (ac_guard_keys_active()) keys_give_up_locked();
  for (int s = 0; s < ac_keys.key_count; s++)
    ac_pkeys_free(ac_keys.keys[s]);
  if (ac_keys.closing_key >= 0) ac_pkeys_free(ac_keys.closing_key);
  if (ac_keys.lift_key >= 0) ac_pkeys_free(ac_keys.lift_key);
  /* A thread's register keeps the freed keys' bits as the guard last wrote
   * them: no page has those keys until the program tags its own. */
  __atomic_store_n(&ac_keys.key_count, 0, __ATOMIC_RELAXED);
  ac_keys.closing_key = ac_keys.lift_key = -1;
  ac_keys.closing_bits = ac_keys.our_bits = ac_keys.lift_bits = 0;
  if (ac_opts.guard_pages == AC_GUARD_PKEYS || ac_opts.verbose)
    ac_log("%spage guard: the program allocates protection keys; the guard gave its %d back and "
           "uses mprotect, not protection keys",
           ac_opts.guard_pages == AC_GUARD_PKEYS ? "warning: --guard-pages pkeys: " : "", held);
  return true;
}

/* ---- start-up and fork ---- */

bool ac_guard_keys_start(const char **why) {
  if (!ac_pkeys_supported(why)) return false;
  ac_keys.closing_key = ac_pkeys_alloc();
  if (ac_keys.closing_key < 0) return *why = "no protection key is free (pkey_alloc failed)", false;
  ac_keys.closing_bits = ac_pkru_disable_bits(ac_keys.closing_key);
  ac_keys.lift_key = ac_pkeys_alloc(); /* none: lifted pages are every thread's */
  if (ac_keys.lift_key >= 0) {
    ac_keys.lift_bits = ac_pkru_disable_bits(ac_keys.lift_key);
    __atomic_store_n(&ac_keys.disabled_now, 1u << LIFT_SLOT, __ATOMIC_SEQ_CST);
  }
  while (ac_keys.key_count < KEYS_WANTED) {
    int k = ac_pkeys_alloc();
    if (k < 0) break;
    ac_keys.keys[ac_keys.key_count] = k;
    /* Published after its key: a thread starting now reads the count unlocked. */
    __atomic_store_n(&ac_keys.key_count, ac_keys.key_count + 1, __ATOMIC_RELEASE);
    ac_keys.our_bits |= ac_pkru_disable_bits(k);
  }
  if (!ac_keys.key_count) return *why = "no protection key is free (pkey_alloc failed)", false;
  ac_guard_threads_keys_made();
  return true;
}

int ac_guard_keys_count(void) {
  return ac_keys.key_count;
}

/* In a forked child only the calling thread lives on, and its managed
 * memory is unmapped: it holds every key, and the keys protect nothing. */
void ac_guard_keys_after_fork_child(void) {
  __atomic_store_n(&ac_keys.disabled_now, 0, __ATOMIC_RELAXED);
  for (int s = 0; s < ac_keys.key_count; s++)
    ac_keys.tagged[s].n = 0;
  keys_park_after_fork_child();
  keys_set_lifted_count(0);
  ac_published_set(&ac_keys.published, NULL, NULL, 0);
  ac_keys.offered_count = 0;
  for (int s = 0; s < ac_keys.key_count; s++)
    ac_keys.slot_owner[s] = NULL;
  if (ac_keys.key_count) ac_pkru_write(ac_pkru_read() & ~(ac_keys.our_bits | ac_keys.lift_bits));
  __atomic_store_n(&ac_keys.keys_broken, true, __ATOMIC_RELAXED);
  ac_guard_threads_after_fork_child();
}
