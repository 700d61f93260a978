/* model_alloc.c - the allocation map: add, find by address, remove.
 *
 * Lookup is by 2 MiB granule (see model_internal.h): one hash probe, then a
 * binary search in the granule's allocations sorted by base. The
 * kernel-argument analysis calls it for every pointer-sized word of every
 * launch, and a granule can hold thousands of small managed allocations, so
 * it must stay that cheap - and so must adding and removing one, which search
 * the same way rather than walk the granule.
 *
 * The shim's records never overlap: one is added only after those over its
 * range are forgotten (ac_model_forget_overlapping). Sorted by base, their
 * ends are sorted too, so the one record before an address is the only
 * earlier one that can reach it. A granule where two records do overlap
 * (the model allows it: a record nested in another) says so, and is then
 * searched whole.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_internal.h"

static uint64_t granule_of(uintptr_t addr) {
  return (uint64_t)addr >> AC_GRANULE_SHIFT;
}

static uintptr_t end_of(const struct ac_alloc *a) {
  return a->base + (a->size ? a->size : 1);
}

static uint64_t last_granule_of(const struct ac_alloc *a) {
  return granule_of(end_of(a) - 1);
}

/* The granule of key, or NULL: the last search's when it is that one (an
 * allocation's record, its overlap check and its entry all fall in the
 * granule the one before it did, as the driver hands memory out in order). */
static struct granule *granule_find(const struct ac_model *m, uint64_t key) {
  struct granule *g = (struct granule *)m->search_hint.g;
  if (g && g->key == key) return g;
  HASH_FIND(hh, m->granules, &key, sizeof key, g);
  return g;
}

static struct granule *granule_get(struct ac_model *m, uint64_t key) {
  struct granule *g = granule_find(m, key);
  if (g) return g;
  g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->key = key;
  HASH_ADD(hh, m->granules, key, sizeof g->key, g);
  return g;
}

static struct granule_entry *block_of(const struct granule *g) {
  return g->e ? g->e - g->head : NULL;
}

/* Room for one more entry after e[count): the entries moved back to the
 * block's start when its free front is a quarter of it or more, else the
 * block doubled. */
static bool room_at_end(struct granule *g) {
  if (g->head + g->count < g->capacity) return true;
  struct granule_entry *block = block_of(g);
  if (g->head && g->head >= g->capacity / 4) {
    memmove(block, g->e, g->count * sizeof *block);
    g->e = block;
    g->head = 0;
    return true;
  }
  size_t used = g->head + g->count;
  if (!AC_GROW(block, used, g->capacity, 4)) return false;
  g->e = block + g->head;
  return true;
}

/* Inserted in order of base, then serial (the newest last). */
static bool granule_insert(struct granule *g, struct ac_alloc *a) {
  size_t i = g->count;
  while (i > 0 && (g->e[i - 1].base > a->base ||
                   (g->e[i - 1].base == a->base && g->e[i - 1].alloc->serial > a->serial)))
    i--;
  if (g->head && i < g->count / 2) { /* the entries before it move down into the free front */
    memmove(g->e - 1, g->e, i * sizeof g->e[0]);
    g->e--;
    g->head--;
  } else {
    if (!room_at_end(g)) return false;
    memmove(&g->e[i + 1], &g->e[i], (g->count - i) * sizeof g->e[0]);
  }
  g->e[i] = (struct granule_entry){a->base, a};
  g->count++;
  /* Two records overlap only if two neighbours do. */
  if ((i > 0 && end_of(g->e[i - 1].alloc) > g->e[i].base) ||
      (i + 1 < g->count && end_of(g->e[i].alloc) > g->e[i + 1].base))
    g->nested = true;
  return true;
}

/* How many of g's entries (it has one at least) start at or below addr.
 * Branch-free, the step a conditional move: it is most of the lookup of a
 * kernel argument. */
static inline __attribute__((always_inline)) size_t at_or_below(const struct granule *g,
                                                                uintptr_t addr) {
  const struct granule_entry *at = g->e;
  size_t n = g->count;
  while (n > 1) {
    size_t half = n / 2;
    at = at[half].base <= addr ? at + half : at;
    n -= half;
  }
  return (size_t)(at - g->e) + (at->base <= addr);
}

static void granule_drop(struct ac_model *m, uint64_t key, const struct ac_alloc *a) {
  struct granule *g = granule_find(m, key);
  if (!g) return;
  for (size_t i = at_or_below(g, a->base); i-- > 0 && g->e[i].base == a->base;) {
    if (g->e[i].alloc != a) continue;
    if (i < g->count / 2) { /* the entries before it move up */
      memmove(g->e + 1, g->e, i * sizeof g->e[0]);
      g->e++;
      g->head++;
    } else {
      memmove(&g->e[i], &g->e[i + 1], (g->count - i - 1) * sizeof g->e[0]);
    }
    g->count--;
    break;
  }
  if (g->count == 0) {
    if (m->search_hint.g == g) m->search_hint.g = NULL;
    HASH_DEL(m->granules, g);
    free(block_of(g));
    free(g);
  }
}

static bool is_plain_global(const struct ac_alloc *a) {
  return ac_alloc_is_managed(a) && a->assoc == AC_ASSOC_GLOBAL && !a->attached;
}

void ac_model_note_judged(struct ac_model *m, const struct ac_alloc *a) {
  uint64_t first = granule_of(a->base), last = last_granule_of(a);
  if (last - first >= AC_JUDGED_GRANULE_BITS) {
    memset(m->judged_granules, 0xff, sizeof m->judged_granules);
    return;
  }
  for (uint64_t k = first; k <= last; k++) {
    uint64_t bit = k & (AC_JUDGED_GRANULE_BITS - 1);
    m->judged_granules[bit / 64] |= (uint64_t)1 << (bit % 64);
  }
}

bool ac_model_may_need_judging(const struct ac_model *m, uintptr_t addr) {
  uint64_t bit = granule_of(addr) & (AC_JUDGED_GRANULE_BITS - 1);
  return (m->judged_granules[bit / 64] >> (bit % 64)) & 1;
}

/* ---- records: from slabs, or one malloc each in the sanitizer build ---- */

static struct ac_alloc *new_record(struct ac_model *m) {
#ifdef AC_ALLOC_RECORDS_MALLOC
  (void)m;
  return malloc(sizeof(struct ac_alloc));
#else
  if (!m->free_records) {
    struct alloc_slab *slab = malloc(sizeof *slab);
    if (!slab) return NULL;
    slab->next = m->slabs;
    m->slabs = slab;
    for (size_t i = AC_ALLOC_SLAB_RECORDS; i-- > 0;) {
      slab->rec[i].more = (struct ac_alloc_more *)m->free_records;
      m->free_records = &slab->rec[i];
    }
  }
  struct ac_alloc *a = m->free_records;
  m->free_records = (struct ac_alloc *)a->more;
  return a;
#endif
}

static void free_record(struct ac_model *m, struct ac_alloc *a) {
  if (a->more) {
    free(a->more->name);
    free(a->more);
  }
#ifdef AC_ALLOC_RECORDS_MALLOC
  (void)m;
  free(a);
#else
  a->more = (struct ac_alloc_more *)m->free_records;
  m->free_records = a;
#endif
}

struct ac_alloc_more *ac_model_more(struct ac_alloc *a) {
  if (!a->more) {
    a->more = calloc(1, sizeof *a->more);
    if (a->more) a->more->alloc = a;
  }
  return a->more;
}

bool ac_model_note_prefetch(struct ac_alloc *a, uintptr_t start, uintptr_t end, int type, int id) {
  struct ac_alloc_more *more = ac_model_more(a);
  if (!more) return false;
  more->prefetch_start = start;
  more->prefetch_end = end;
  more->prefetch_type = type;
  more->prefetch_id = id;
  return true;
}

/* A record per tracked allocation: its size is the model's memory at scale
 * (docs/gpu-results.md, bytes per tracked allocation). */
_Static_assert(sizeof(void *) != 8 || sizeof(struct ac_alloc) <= 64,
               "an allocation's record grew past 64 bytes");

/* ---- the entry points allocations come from, a byte each ---- */
static const char *api_names[256];
static unsigned api_count = 1; /* 0 is none */

uint8_t ac_api_intern(const char *api) {
  if (!api) return 0;
  for (unsigned i = 1; i < api_count; i++)
    if (api_names[i] == api || strcmp(api_names[i], api) == 0) return (uint8_t)i;
  if (api_count == 256) return 0;
  api_names[api_count] = api; /* the names are the driver table's: they outlive the model */
  return (uint8_t)api_count++;
}

const char *ac_api_name(uint8_t id) {
  return id && id < api_count ? api_names[id] : NULL;
}

struct ac_alloc *ac_model_add_alloc(struct ac_model *m, const struct ac_alloc *proto) {
  struct ac_alloc *a = new_record(m);
  if (!a) return NULL;
  *a = *proto;
  a->more = NULL;
  a->guard_tag = 0;
  a->ahead_mark = 0;
  a->serial = m->next_alloc_serial++;
  for (uint64_t k = granule_of(a->base); k <= last_granule_of(a); k++) {
    struct granule *g = granule_get(m, k);
    if (!g || !granule_insert(g, a)) {
      for (uint64_t undo = granule_of(a->base); undo < k; undo++)
        granule_drop(m, undo, a);
      if (g && g->count == 0) granule_drop(m, k, a);
      free_record(m, a);
      return NULL;
    }
  }
  m->alloc_count++;
  m->layout++;
  m->allocations++;
  if (ac_alloc_is_managed(a) && !is_plain_global(a)) ac_model_note_judged(m, a);
  if (ac_alloc_is_managed(a) && !a->learned) { /* the memory findings are about */
    struct ac_op_record *r =
        ac_history_push(m, NULL, AC_OP_ALLOC, ac_alloc_origin_api(a), a->origin_thread);
    r->alloc_serial = a->serial;
    r->addr = a->base;
    a->tick = r->tick;
  }
  ac_model_notify(m, a, false);
  return a;
}

bool ac_model_name_alloc(struct ac_model *m, struct ac_alloc *a, uintptr_t module,
                         const char *name) {
  (void)m;
  struct ac_alloc_more *more = ac_model_more(a);
  if (!more) return false;
  more->module = module;
  if (name && !more->name) more->name = strndup(name, 63);
  return !name || more->name;
}

void ac_model_set_alloc_observer(struct ac_model *m, ac_alloc_observer fn, void *ctx) {
  m->observer = fn;
  m->observer_ctx = ctx;
}

ac_alloc_observer ac_model_alloc_observer(const struct ac_model *m) {
  return m->observer;
}

/* at_or_below, trying first where the last search ended and the entry
 * after it: right when entry j starts at or below addr and the next one
 * above it, whatever moved since (the entries stay sorted). */
static size_t hinted_at_or_below(struct ac_model *m, const struct granule *g, uintptr_t addr) {
  if (m->search_hint.g == g)
    for (size_t j = m->search_hint.i; j < g->count && j <= m->search_hint.i + 1; j++)
      if (g->e[j].base <= addr && (j + 1 == g->count || g->e[j + 1].base > addr)) {
        m->search_hint.i = j;
        return j + 1;
      }
  size_t lo = at_or_below(g, addr);
  m->search_hint.g = g;
  m->search_hint.i = lo ? lo - 1 : 0;
  return lo;
}

static struct ac_alloc *find_uncached(struct ac_model *m, uintptr_t addr) {
  uint64_t key = granule_of(addr);
  const struct granule *g = granule_find(m, key);
  if (!g) return NULL;
  /* The last allocation starting at or below addr: with equal bases (a stale
   * record a free we never saw left behind) the newest, which owns it now. */
  size_t lo = hinted_at_or_below(m, g, addr);
  if (lo > 0 && addr < end_of(g->e[lo - 1].alloc)) return g->e[lo - 1].alloc;
  /* Otherwise only an allocation that began in an earlier granule can reach
   * addr; those sort first. */
  uintptr_t granule_start = (uintptr_t)key << AC_GRANULE_SHIFT;
  for (size_t i = 0; i < lo && g->e[i].base < granule_start; i++)
    if (addr < end_of(g->e[i].alloc)) return g->e[i].alloc;
  return NULL;
}

/* Allocations 512 bytes apart (small managed ones) fall in distinct slots for
 * the first thousand. */
static size_t cache_slot(uintptr_t addr) {
  return ((addr >> 3) ^ (addr >> 13)) & (AC_LOOKUP_CACHE_SIZE - 1);
}

/* The cache entry for addr, filled if it was not. Inlined: it is most of a
 * kernel argument's cost. */
static inline __attribute__((always_inline)) const struct lookup_cache_entry *
cached_lookup(const struct ac_model *cm, uintptr_t addr) {
  /* The cache is not part of the model's meaning: it may change under a const
   * model (callers hold the shim's model lock). */
  struct ac_model *m = (struct ac_model *)cm;
  struct lookup_cache_entry *c = &m->lookup_cache[cache_slot(addr)];
  if (c->addr == addr && c->allocations_plus_one == m->allocations + 1) {
    if (c->layout != m->layout) {
      c->plain_global = c->alloc && is_plain_global(c->alloc);
      c->layout = m->layout;
    }
    return c;
  }
  struct ac_alloc *a = find_uncached(m, addr);
  bool plain = a && is_plain_global(a);
  *c = (struct lookup_cache_entry){addr, m->allocations + 1, m->layout, a, plain};
  return c;
}

struct ac_alloc *ac_model_find_alloc(const struct ac_model *m, uintptr_t addr) {
  return cached_lookup(m, addr)->alloc;
}

struct ac_alloc *ac_model_find_alloc_plain(const struct ac_model *m, uintptr_t addr,
                                           bool *plain_global) {
  const struct lookup_cache_entry *c = cached_lookup(m, addr);
  *plain_global = c->plain_global;
  return c->alloc;
}

struct ac_alloc *ac_model_find_alloc_at(const struct ac_model *m, uintptr_t base) {
  struct ac_alloc *a = ac_model_find_alloc(m, base);
  return a && a->base == base ? a : NULL;
}

/* One record of granule key that overlaps [base, end), or NULL: the one
 * before base (where records do not overlap, no earlier one reaches further),
 * or the first from base on. */
static struct ac_alloc *overlapping_in(const struct ac_model *m, uint64_t key, uintptr_t base,
                                       uintptr_t end) {
  const struct granule *g = granule_find(m, key);
  if (!g || !g->count) return NULL;
  /* Past the end of the last record - which ends last, as none overlap -: as
   * new allocations mostly come, with no search. */
  if (!g->nested && end_of(g->e[g->count - 1].alloc) <= base) return NULL;
  for (size_t i = 0; g->nested && i < g->count; i++)
    if (g->e[i].base < end && base < end_of(g->e[i].alloc)) return g->e[i].alloc;
  if (g->nested) return NULL;
  size_t i = base ? at_or_below(g, base - 1) : 0; /* the first from base on */
  if (i > 0 && base < end_of(g->e[i - 1].alloc)) return g->e[i - 1].alloc;
  return i < g->count && g->e[i].base < end ? g->e[i].alloc : NULL;
}

size_t ac_model_forget_overlapping(struct ac_model *m, uintptr_t base, size_t size) {
  size_t forgotten = 0;
  if (!size) return 0;
  uintptr_t end = base + size;
  for (uint64_t k = granule_of(base); k <= granule_of(end - 1); k++)
    for (struct ac_alloc *a; (a = overlapping_in(m, k, base, end)) != NULL; forgotten++)
      ac_model_remove_alloc(m, a);
  return forgotten;
}

void ac_model_retire_alloc(struct ac_model *m, struct ac_alloc *a) {
  a->retiring = true;
  m->layout++; /* the guard's classes change */
  ac_model_notify(m, a, false);
}

void ac_model_remove_alloc(struct ac_model *m, struct ac_alloc *a) {
  ac_model_notify(m, a, true);
  for (uint64_t k = granule_of(a->base); k <= last_granule_of(a); k++)
    granule_drop(m, k, a);
  m->alloc_count--;
  m->layout++;
  m->allocations++;
  ac_order_forget_alloc(m, a);
  free_record(m, a);
}

size_t ac_model_alloc_count(const struct ac_model *m) {
  return m->alloc_count;
}

uint64_t ac_model_layout(const struct ac_model *m) {
  return m->layout;
}

void ac_model_for_each_alloc(struct ac_model *m, void (*fn)(struct ac_alloc *, void *), void *ctx) {
  struct granule *g, *tmp;
  /* An allocation spanning several granules is listed in each: visit it from
   * the granule of its base only. */
  HASH_ITER(hh, m->granules, g, tmp) {
    for (size_t i = 0; i < g->count; i++)
      if (granule_of(g->e[i].base) == g->key) fn(g->e[i].alloc, ctx);
  }
}

static void collect(struct ac_alloc *a, void *ctx) {
  struct ac_alloc ***next = ctx;
  *(*next)++ = a;
}

/* Frees every record and granule; the streams are freed whole after it, so
 * no list or reference is undone one by one. */
void ac_model_free_allocs(struct ac_model *m) {
  /* Collect every record once, then free: the granules still point at them. */
  struct ac_alloc **all = malloc((m->alloc_count + 1) * sizeof *all), **next = all;
  if (all) ac_model_for_each_alloc(m, collect, &next);
  struct granule *g, *tmp;
  m->search_hint.g = NULL;
  HASH_ITER(hh, m->granules, g, tmp) {
    HASH_DEL(m->granules, g);
    free(block_of(g));
    free(g);
  }
  for (struct ac_alloc **a = all; all && a < next; a++)
    free_record(m, *a);
  free(all);
  while (m->slabs) {
    struct alloc_slab *slab = m->slabs;
    m->slabs = slab->next;
    free(slab);
  }
  m->free_records = NULL;
  m->alloc_count = 0;
}
