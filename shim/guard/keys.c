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
#include "pkeys.h"
#include "shim.h"

/* The keys the guard takes for classes, and one more that closes pages to
 * every thread (no thread ever enables it): under half the hardware's, so a
 * program that allocates keys of its own still gets eight. */
#define KEYS_WANTED 6

const char ac_guard_global_class = 'G'; /* the GLOBAL class's identity */

static int keys[AC_PKEYS_HW_MAX], key_count;
static int closing_key = -1;
static uint32_t our_bits;     /* the PKRU bits of every class key of ours */
static uint32_t closing_bits; /* and of the closing key */
static uint32_t disabled_now; /* atomic: slots whose memory is forbidden now */
static bool keys_broken;      /* a frame without PKRU was met: keys given up */

uint32_t ac_guard_keys_disabled_now(void) {
  return __atomic_load_n(&disabled_now, __ATOMIC_SEQ_CST);
}

uint32_t ac_guard_keys_pkru_for(uint32_t pkru, uint32_t disabled) {
  uint32_t bits = ac_pkru_bits_of(disabled, keys, key_count) | closing_bits;
  return ac_pkru_merge(pkru, our_bits | closing_bits, bits);
}

int ac_guard_keys_closing(void) {
  return ac_guard_keys_active() ? closing_key : -1;
}

/* ---- classes and tags ---- */

/* The classes offered at a layout, with their bytes; only the ones that get
 * a key are kept past it, by slot. */
struct offered_class {
  const void *id;
  struct range_list bytes;
};
static struct offered_class *offered;
static size_t offered_count, offered_cap;

static const void *slot_owner[AC_PKEYS_HW_MAX];     /* the class each slot went to */
static struct range_list tagged[AC_PKEYS_HW_MAX];   /* its pages alone, tagged with its key */
static struct range_list residual[AC_PKEYS_HW_MAX]; /* its bytes elsewhere: mprotect's */
static struct range_list managed_residual;          /* managed bytes on pages without a key */
static bool standing_aside;                         /* classes changed since: mprotect covers all */
/* Between layouts the pages where a few bytes changed class give their keys
 * up (ac_guard_keys_patch_*): how many pages had keys at the last layout,
 * how many have given them up since. */
static size_t keyed_pages, demoted_pages;
/* The pages whose key changed since ac_guard_keys_take_rekeyed last took
 * them: only there does what mprotect covers change with a layout. */
static struct range_list rekeyed;
static bool rekeyed_all;                /* more than is worth listing: everything */
static struct range_list patch_touched; /* the pages a patch gave key 0 */

static void note_rekeyed(const struct range_list *pages) {
  if (rekeyed_all) return;
  if (rekeyed.n + pages->n > 4096) range_normalise(&rekeyed);
  if (rekeyed.n + pages->n > 4096 || !range_append_list(&rekeyed, pages)) {
    rekeyed_all = true;
    rekeyed.n = 0;
  }
}

/* How many pages l (page-aligned) covers. */
static size_t pages_in(const struct range_list *l) {
  size_t count = 0;
  for (size_t j = 0; j < l->n; j++)
    count += (l->r[j].end - l->r[j].start) / (uintptr_t)ac_guard.page_size;
  return count;
}

/* Keyed pages of a forbidden class that a fault was judged on and let go:
 * key 0 until the next transition, as mprotect lifts a page, so that each
 * other page of the class still faults and is judged (not only the class's
 * first page a thread touches). A fixed table: it is filled in the SIGSEGV
 * handler, which must not allocate; when it is full the key is enabled in
 * the thread instead. */
#define KEY_LIFTED_MAX 4096
struct lifted_page {
  uintptr_t page;
  int slot;
};
static struct lifted_page key_lifted[KEY_LIFTED_MAX];
static size_t key_lifted_count;

/* The tagged pages as the handler and the system-call check read them
 * without the lock: sorted, each with its slot (published.h). */
struct keyed_range {
  uintptr_t start, end;
  int slot;
};
static struct ac_published published;

bool ac_guard_keys_active(void) {
  return key_count > 0 && !keys_broken;
}

const struct range_list *ac_guard_keys_take_rekeyed(bool *all) {
  static struct range_list taken;
  range_swap(&taken, &rekeyed);
  rekeyed.n = 0;
  *all = rekeyed_all;
  rekeyed_all = false;
  return &taken;
}

void ac_guard_keys_layout_begin(void) {
  for (size_t i = 0; i < offered_count; i++)
    offered[i].bytes.n = 0;
  offered_count = 0;
}

void ac_guard_keys_layout_class(const void *id, const struct range_list *bytes) {
  if (!ac_guard_keys_active() || !bytes->n) return;
  size_t old_cap = offered_cap;
  if (!AC_GROW(offered, offered_count, offered_cap, 8)) return;
  if (offered_cap != old_cap) /* new slots own no list yet */
    memset(offered + old_cap, 0, (offered_cap - old_cap) * sizeof *offered);
  struct offered_class *c = &offered[offered_count++];
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
  if (offered_count == 1 && range_equal(&offered[0].bytes, all_managed)) return;
  for (size_t i = 0; i < offered_count; i++) {
    if (!range_union(&spare_list, &classed, &offered[i].bytes)) return;
    range_swap(&classed, &spare_list);
    total += offered[i].bytes.n;
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
  for (size_t i = 0; i < offered_count; i++)
    merge_owner(&entries, &spare, &n, &offered[i].bytes, (int)i);
  merge_owner(&entries, &spare, &n, &unclassed, -1);
  for (size_t i = 1; i < n; i++) {
    uintptr_t last = (entries[i - 1].end - 1) & ~(page - 1);
    if (entries[i].slot != entries[i - 1].slot && (entries[i].start & ~(page - 1)) == last)
      range_push(mixed, last, last + page);
  }
  range_normalise(mixed);
}

static void publish_tags(void) {
  static struct keyed_range all[AC_PUBLISHED_MAX];
  static struct range ranges[AC_PUBLISHED_MAX];
  static int slots[AC_PUBLISHED_MAX];
  size_t n = 0;
  bool overflow = false;
  for (int s = 0; s < key_count && !overflow; s++)
    for (size_t j = 0; j < tagged[s].n; j++) {
      if (n == AC_PUBLISHED_MAX) {
        overflow = true;
        break;
      }
      all[n++] = (struct keyed_range){tagged[s].r[j].start, tagged[s].r[j].end, s};
    }
  ac_sort_unless_sorted(all, n, sizeof all[0], by_start);
  for (size_t i = 0; i < n; i++) {
    ranges[i] = (struct range){all[i].start, all[i].end};
    slots[i] = all[i].slot;
  }
  ac_published_set(&published, ranges, slots, overflow ? AC_PUBLISHED_MAX + 1 : n);
}

/* Tagging a page makes it readable and writable again (pkey_mprotect sets
 * both): mprotect's record of what it protected must forget those pages, so
 * that what is still wanted is protected again. */
static void tag_ranges(const struct range_list *l, int key, struct range_list *made_accessible) {
  for (size_t i = 0; i < l->n; i++) {
    ac_guard_tag_pages(l->r[i].start, l->r[i].end, key);
    range_push(made_accessible, l->r[i].start, l->r[i].end);
  }
}

static void forget_protection_of(struct range_list *made_accessible) {
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
  if (standing_aside) return;
  touched.n = 0;
  ac_guard_keys_restore_lifted(); /* the tags given up below are then the kernel's */
  for (int s = 0; s < key_count; s++) {
    note_rekeyed(&tagged[s]);
    tag_ranges(&tagged[s], 0, &touched);
    tagged[s].n = 0;
  }
  forget_protection_of(&touched);
  publish_tags();
  standing_aside = true;
  ac_guard.stats.stood_aside++;
}

/* Tags slot s's pages with its key, and gives key 0 back to those that left
 * every slot (all: the union of the new tags). */
static void retag(struct range_list *next, const struct range_list *all) {
  static struct range_list change, touched;
  touched.n = 0;
  for (int s = 0; s < key_count; s++) {
    range_subtract(&change, &tagged[s], all);
    tag_ranges(&change, 0, &touched);
    range_subtract(&change, &next[s], &tagged[s]);
    tag_ranges(&change, keys[s], &touched);
  }
  for (int s = 0; s < key_count; s++)
    range_swap(&tagged[s], &next[s]);
  forget_protection_of(&touched); /* normalises touched */
  note_rekeyed(&touched);
  publish_tags();
}

void ac_guard_keys_layout_end(const struct range_list *all_managed) {
  static struct range_list mixed, pages, next[AC_PKEYS_HW_MAX], all_tagged, swap;
  static struct range_list *exclusive;
  static struct ac_key_class *wanted;
  static size_t wanted_cap;
  if (!ac_guard_keys_active()) return;
  ac_guard_keys_restore_lifted(); /* the tags compared below are then the kernel's */
  mixed_pages(&mixed, all_managed);
  if (offered_count > wanted_cap) {
    struct ac_key_class *grown = realloc(wanted, offered_count * sizeof *wanted);
    struct range_list *more = realloc(exclusive, offered_count * sizeof *exclusive);
    if (more) {
      memset(more + wanted_cap, 0, (offered_count - wanted_cap) * sizeof *more);
      exclusive = more;
    }
    if (grown) wanted = grown;
    if (!grown || !more) return;
    wanted_cap = offered_count;
  }
  for (size_t i = 0; i < offered_count; i++) {
    range_round_out(&pages, &offered[i].bytes, (uintptr_t)ac_guard.page_size);
    range_subtract(&exclusive[i], &pages, &mixed);
    size_t count = pages_in(&exclusive[i]);
    int had = -1;
    for (int s = 0; s < key_count; s++)
      if (slot_owner[s] == offered[i].id) had = s;
    wanted[i] = (struct ac_key_class){offered[i].id, count, had};
  }
  ac_pkeys_assign(wanted, offered_count, key_count);
  for (int s = 0; s < key_count; s++) {
    slot_owner[s] = NULL;
    next[s].n = residual[s].n = 0;
  }
  all_tagged.n = 0;
  keyed_pages = demoted_pages = 0;
  for (size_t i = 0; i < offered_count; i++) {
    int s = wanted[i].slot;
    if (s < 0) continue;
    keyed_pages += wanted[i].pages;
    slot_owner[s] = offered[i].id;
    range_append_list(&next[s], &exclusive[i]);
    range_subtract(&residual[s], &offered[i].bytes, &exclusive[i]);
    range_union(&swap, &all_tagged, &exclusive[i]);
    range_swap(&all_tagged, &swap);
  }
  /* Standing aside, mprotect covered every keyed page: each is looked at
   * again. Otherwise what mprotect covers changes where a key changed only
   * (retag notes those). */
  if (standing_aside) {
    for (int s = 0; s < key_count; s++)
      note_rekeyed(&tagged[s]);
    note_rekeyed(&all_tagged);
  }
  retag(next, &all_tagged);
  range_subtract(&managed_residual, all_managed, &all_tagged);
  standing_aside = false;
}

static int slot_of_class(const void *id) {
  for (int s = 0; s < key_count; s++)
    if (slot_owner[s] == id) return s;
  return -1;
}

/* ---- patching the layout between layouts ----
 *
 * Laying the keys out looks at every class whole, and until it is done again
 * after a move the keys stand aside: a program that allocates, frees or
 * attaches a little at every step of its loop (a temporary buffer each
 * iteration) would never have its keys. When a few bytes moved, the pages
 * they lie on - the only ones whose owners can have changed, as a page's
 * owners are the classes of the bytes in it - give up their keys instead:
 * tagged with key 0 they go to mprotect, and each keyed class's and all
 * managed memory's unkeyed bytes are brought up to date there (elsewhere
 * nothing changed). That costs what moved. Past an eighth of the pages that
 * had keys, the keys stand aside until the next layout. */

/* The pages (normalised, page-aligned) where bytes moved class lose their
 * keys; false, and nothing changed, when the keys stand aside or so many
 * pages gave theirs up that they should. Each class's bytes there follow
 * (ac_guard_keys_patch_class, _end). */
bool ac_guard_keys_patch_begin(const struct range_list *pages) {
  static struct range_list gone[AC_PKEYS_HW_MAX], rest;
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_keys_active() || standing_aside) return false;
  size_t count = 0;
  for (int s = 0; s < key_count; s++) {
    range_clip(&gone[s], &tagged[s], pages);
    count += pages_in(&gone[s]);
  }
  if (demoted_pages + count > 32 + keyed_pages / 8) return false;
  demoted_pages += count;
  ac_guard_keys_restore_lifted(); /* the tags changed below are then the kernel's */
  patch_touched.n = 0;
  for (int s = 0; s < key_count; s++) {
    if (gone[s].n) {
      tag_ranges(&gone[s], 0, &patch_touched);
      range_subtract(&rest, &tagged[s], pages);
      range_swap(&tagged[s], &rest);
    }
    range_subtract(&rest, &residual[s], pages);
    range_swap(&residual[s], &rest);
  }
  range_subtract(&rest, &managed_residual, pages);
  range_swap(&managed_residual, &rest);
  return true;
}

/* Class id's bytes inside the patched pages (normalised). */
void ac_guard_keys_patch_class(const void *id, const struct range_list *bytes) {
  static struct range_list joined;
  int s = slot_of_class(id);
  if (s < 0 || !bytes->n) return;
  range_union(&joined, &residual[s], bytes);
  range_swap(&residual[s], &joined);
}

/* All managed bytes inside the patched pages (normalised). */
void ac_guard_keys_patch_end(const struct range_list *managed) {
  static struct range_list joined;
  range_union(&joined, &managed_residual, managed);
  range_swap(&managed_residual, &joined);
  ac_guard.stats.patches++;
  if (!patch_touched.n) return;
  forget_protection_of(&patch_touched); /* normalises it */
  note_rekeyed(&patch_touched);
  publish_tags();
}

/* The slots whose tagged pages no thread can touch now: disabled, with
 * every tagged page holding its key (none lifted) and the keys not
 * standing aside. */
static uint32_t shut_slots(void) {
  if (!ac_guard_keys_active() || standing_aside || key_lifted_count) return 0;
  return __atomic_load_n(&disabled_now, __ATOMIC_SEQ_CST);
}

/* The pages tagged with a key disabled now, normalised (lock held). */
void ac_guard_keys_shut_pages(struct range_list *out) {
  static struct range_list joined;
  AC_ASSERT_MODEL_HELD();
  out->n = 0;
  uint32_t shut = shut_slots();
  for (int s = 0; s < key_count; s++)
    if (shut & (1u << s)) {
      range_union(&joined, out, &tagged[s]);
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
    for (int s = 0; next == at && s < key_count; s++)
      if (shut & (1u << s)) next = covered_until(&tagged[s], at);
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
  if (!ac_guard_keys_active() || standing_aside) return NULL;
  all_tagged.n = 0;
  for (int s = 0; s < key_count; s++) {
    const struct range_list *bytes = &none;
    for (size_t i = 0; i < offered_count; i++)
      if (offered[i].id == slot_owner[s]) bytes = &offered[i].bytes;
    range_subtract(&others, all_managed, bytes);
    range_round_out(&pages, &others, (uintptr_t)ac_guard.page_size);
    range_clip(&x, &tagged[s], &pages);
    if (x.n) return "a keyed page holds bytes of another class";
    range_subtract(&x, bytes, &tagged[s]);
    if (!range_equal(&x, &residual[s])) return "a class's bytes without a key are not its rest";
    range_union(&joined, &all_tagged, &tagged[s]);
    range_swap(&all_tagged, &joined);
  }
  range_subtract(&x, all_managed, &all_tagged);
  if (!range_equal(&x, &managed_residual))
    return "the managed bytes without a key are not the rest";
  return NULL;
}

/* The bytes of class id that mprotect must protect when it is forbidden. */
const struct range_list *ac_guard_keys_unkeyed(const void *id, const struct range_list *bytes) {
  if (!ac_guard_keys_active() || standing_aside) return bytes;
  int s = slot_of_class(id);
  return s < 0 ? bytes : &residual[s];
}

const struct range_list *ac_guard_keys_unkeyed_managed(const struct range_list *all_managed) {
  return ac_guard_keys_active() && !standing_aside ? &managed_residual : all_managed;
}

/* ---- transitions ---- */

static void disable_busy_stream(const struct ac_stream *s, void *disabled) {
  int slot = slot_of_class(s);
  if (slot >= 0) *(uint32_t *)disabled |= 1u << slot;
}

/* The slots whose class is forbidden now. strict: globally attached memory
 * is forbidden while anything is busy. */
static uint32_t verdicts(bool any_busy, bool strict) {
  uint32_t disabled = 0;
  if (any_busy && !standing_aside) {
    int global = slot_of_class(&ac_guard_global_class);
    if (strict && global >= 0) disabled |= 1u << global;
    ac_guard_classes_for_each_busy_stream(disable_busy_stream, &disabled);
  }
  return disabled;
}

/* The slots with pages tagged now. */
static uint32_t keyed_slots(void) {
  uint32_t slots = 0;
  for (int s = 0; !standing_aside && s < key_count; s++)
    if (tagged[s].n) slots |= 1u << s;
  return slots;
}

void ac_guard_keys_agree(bool any_busy, bool strict, struct range_list *give_up) {
  AC_ASSERT_MODEL_HELD();
  give_up->n = 0;
  if (!ac_guard_keys_active()) return;
  /* Published first: a thread that starts running again from now on reads
   * these verdicts, and one that ran before is in the scan below. */
  uint32_t disabled = verdicts(any_busy, strict);
  __atomic_store_n(&disabled_now, disabled, __ATOMIC_SEQ_CST);
  uint32_t differ = ac_guard_threads_disagreeing(disabled, keyed_slots());
  if (!differ) return;
  static struct range_list joined;
  for (int s = 0; s < key_count; s++)
    if (differ & (1u << s)) {
      range_union(&joined, give_up, &tagged[s]);
      range_swap(give_up, &joined);
    }
  ac_guard.stats.disagreements++;
}

void ac_guard_keys_transition(void) {
  AC_ASSERT_MODEL_HELD();
  ac_guard_threads_catch_up(); /* the calling thread writes its own PKRU */
}

/* A page lifted by a fault gets its key back (lock held, normal context). */
void ac_guard_keys_restore_lifted(void) {
  static struct range_list touched;
  AC_ASSERT_MODEL_HELD();
  if (!key_lifted_count) return;
  touched.n = 0;
  uintptr_t size = (uintptr_t)ac_guard.page_size;
  for (size_t i = 0; i < key_lifted_count; i++) {
    const struct lifted_page *l = &key_lifted[i];
    ac_guard_tag_pages(l->page, l->page + size, keys[l->slot]);
    range_push(&touched, l->page, l->page + size);
  }
  key_lifted_count = 0;
  forget_protection_of(&touched);
}

/* In the handler: the page at addr, of slot, let go alone; false when the
 * table is full or the kernel refused. */
static bool lift_keyed_page(int slot, uintptr_t addr) {
  uintptr_t page = ac_guard_page_floor(addr);
  if (key_lifted_count == KEY_LIFTED_MAX ||
      ac_guard_tag_pages(page, page + (uintptr_t)ac_guard.page_size, 0) != 0)
    return false;
  key_lifted[key_lifted_count++] = (struct lifted_page){page, slot};
  return true;
}

/* Lifted pages in [start, end) are dropped: memory going back to the driver
 * must not get a key back. */
static void drop_lifted_in(uintptr_t start, uintptr_t end) {
  size_t kept = 0;
  for (size_t i = 0; i < key_lifted_count; i++)
    if (key_lifted[i].page + (uintptr_t)ac_guard.page_size <= start || key_lifted[i].page >= end)
      key_lifted[kept++] = key_lifted[i];
  key_lifted_count = kept;
}

/* Memory about to go back to the driver keeps no key. */
void ac_guard_keys_forget(uintptr_t start, uintptr_t end) {
  static struct range_list pages, gone, rest, touched;
  if (!ac_guard_keys_active() || start >= end) return;
  drop_lifted_in(start, end);
  pages.n = touched.n = 0;
  range_push(&pages, ac_guard_page_floor(start),
             ac_guard_page_floor(end - 1) + (uintptr_t)ac_guard.page_size);
  for (int s = 0; s < key_count; s++) {
    range_subtract(&rest, &tagged[s], &pages);
    if (rest.n == tagged[s].n && !range_contains(&tagged[s], pages.r[0].start)) continue;
    range_subtract(&gone, &tagged[s], &rest);
    note_rekeyed(&gone);
    tag_ranges(&gone, 0, &touched);
    range_swap(&tagged[s], &rest);
  }
  if (!touched.n) return;
  forget_protection_of(&touched);
  publish_tags();
}

/* A device without concurrent managed access: its driver protects managed
 * memory itself while the GPU owns it, and pkey_mprotect, which sets a
 * protection with every key, would undo the driver's (a touch that crashes
 * bare would run on). The keys are given back, and mprotect, which the
 * guard applies over what the driver asked for, covers everything. */
void ac_guard_keys_decline(int device) {
  static struct range_list touched;
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_keys_active()) return;
  touched.n = 0;
  key_lifted_count = 0;
  for (int s = 0; s < key_count; s++) {
    tag_ranges(&tagged[s], 0, &touched);
    tagged[s].n = residual[s].n = 0;
    slot_owner[s] = NULL;
  }
  __atomic_store_n(&disabled_now, 0, __ATOMIC_SEQ_CST);
  forget_protection_of(&touched);
  publish_tags();
  /* What the closing key closed, mprotect closes from now on. */
  for (size_t i = 0; i < ac_guard.protected_now.n; i++)
    ac_pkeys_protect(ac_guard.protected_now.r[i].start, ac_guard.protected_now.r[i].end, PROT_NONE,
                     0);
  keys_broken = true;
  if (ac_opts.guard_pages == AC_GUARD_PKEYS || ac_opts.verbose)
    ac_log("%spage guard: device %d has no concurrent managed access (its driver protects managed "
           "memory itself); using mprotect, not protection keys",
           ac_opts.guard_pages == AC_GUARD_PKEYS ? "warning: --guard-pages pkeys: " : "", device);
}

/* ---- the fault side ---- */

/* A fault of a thread interrupted inside the shim (lock held, model maybe
 * half-changed): let through unjudged, in the frame only. */
bool ac_guard_keys_let_through(int slot, void *ucontext) {
  if (!ac_pkeys_frame_pkru(ucontext)) return false;
  ac_guard_threads_in_frame(ucontext, 1u << slot);
  return true;
}

/* The slot of hardware key pkey, or -1 when it is not ours. */
int ac_guard_keys_slot_of(int pkey) {
  for (int s = 0; s < key_count; s++)
    if (keys[s] == pkey) return s;
  return -1;
}

bool ac_guard_keys_slot_forbidden(int slot) {
  return (__atomic_load_n(&disabled_now, __ATOMIC_SEQ_CST) >> slot) & 1;
}

/* The calling thread gets slot enabled: in the PKRU of its signal frame
 * (ucontext) or, without one, in its PKRU. allowed: the model lets it touch
 * that memory now, so it keeps the key at its later steps. A forbidden
 * access in a fault lets go of its page alone (lift_keyed_page) while the
 * table has room. False when the frame has no PKRU to edit: the keys are
 * given up, the access let through. */
bool ac_guard_keys_enable(int slot, bool allowed, void *ucontext, uintptr_t addr) {
  AC_ASSERT_MODEL_HELD();
  if (ucontext && !ac_pkeys_frame_pkru(ucontext)) {
    /* No PKRU in the frame: the access cannot be let through by key. */
    keys_broken = true;
    uintptr_t page = ac_guard_page_floor(addr);
    ac_guard_tag_pages(page, page + (uintptr_t)ac_guard.page_size, 0);
    return false;
  }
  /* Allowed: the thread's PKRU was behind the model, and catches up. A
   * forbidden access in a fault lets go of its page alone (every other page
   * of the class still faults and is judged) while the table has room, else
   * the thread is granted the key until it next catches up. */
  uint32_t grant = 0;
  if (!allowed && !(ucontext && lift_keyed_page(slot, addr))) grant = 1u << slot;
  if (ucontext)
    ac_guard_threads_in_frame(ucontext, grant);
  else
    ac_guard_threads_grant(grant);
  return true;
}

/* The same, exactly, from the tagged lists themselves (lock held). */
static int disabled_in_tagged(uint32_t pkru, uintptr_t start, uintptr_t end, uintptr_t *page) {
  int found = -1;
  for (int s = 0; s < key_count; s++) {
    if (!(pkru & ac_pkru_disable_bits(keys[s]))) continue;
    size_t i = range_first_ending_after(&tagged[s], start);
    if (i == tagged[s].n || tagged[s].r[i].start >= end) continue;
    uintptr_t at = tagged[s].r[i].start > start ? tagged[s].r[i].start : ac_guard_page_floor(start);
    if (found < 0 || at < *page) found = s, *page = at;
  }
  return found;
}

static bool slot_disabled_in(int slot, void *pkru) {
  return *(uint32_t *)pkru & ac_pkru_disable_bits(keys[slot]);
}

/* The first keyed page of [start, end) whose key the calling thread has
 * disabled, and its slot; -1 if none. Without the lock it reads the
 * published copy, and when more ranges were tagged than published *maybe
 * says the caller must ask again under the lock, which reads the lists. */
int ac_guard_keys_disabled_in(uintptr_t start, uintptr_t end, uintptr_t *page, bool *maybe) {
  *maybe = false;
  if (!ac_guard_keys_active()) return -1;
  uint32_t pkru = ac_pkru_read();
  if (!(pkru & our_bits)) return -1; /* every key of ours enabled here */
  if (ac_model_held()) return disabled_in_tagged(pkru, start, end, page);
  return ac_published_find(&published, start, end, slot_disabled_in, &pkru, page, maybe);
}

/* ---- start-up and fork ---- */

bool ac_guard_keys_start(const char **why) {
  if (!ac_pkeys_supported(why)) return false;
  closing_key = ac_pkeys_alloc();
  if (closing_key < 0) return *why = "no protection key is free (pkey_alloc failed)", false;
  closing_bits = ac_pkru_disable_bits(closing_key);
  while (key_count < KEYS_WANTED) {
    int k = ac_pkeys_alloc();
    if (k < 0) break;
    keys[key_count++] = k;
    our_bits |= ac_pkru_disable_bits(k);
  }
  if (!key_count) return *why = "no protection key is free (pkey_alloc failed)", false;
  ac_guard_threads_keys_made();
  return true;
}

int ac_guard_keys_count(void) {
  return key_count;
}

/* In a forked child only the calling thread lives on, and its managed
 * memory is unmapped: it holds every key, and the keys protect nothing. */
void ac_guard_keys_after_fork_child(void) {
  __atomic_store_n(&disabled_now, 0, __ATOMIC_RELAXED);
  for (int s = 0; s < key_count; s++)
    tagged[s].n = 0;
  key_lifted_count = 0;
  ac_published_set(&published, NULL, NULL, 0);
  offered_count = 0;
  for (int s = 0; s < key_count; s++)
    slot_owner[s] = NULL;
  if (key_count) ac_pkru_write(ac_pkru_read() & ~our_bits);
  keys_broken = true;
  ac_guard_threads_after_fork_child();
}

void ac_guard_keys_program_keyed(uintptr_t start, uintptr_t end, int key) {
  AC_ASSERT_MODEL_HELD();
  if (key < 0 || !ac_guard_keys_active() || standing_aside) return;
  for (int s = 0; s < key_count; s++) {
    size_t i = range_first_ending_after(&tagged[s], start);
    if (i < tagged[s].n && tagged[s].r[i].start < end) {
      ac_guard_keys_stand_aside(); /* opening keeps the program's new key (pages.c) */
      return;
    }
  }
}
