/* model_alloc.c - the allocation map: add, find by address, remove.
 *
 * Lookup is by 2 MiB granule (see model_internal.h). Finding the allocation for
 * an address costs one hash probe and a scan of the few allocations sharing that
 * granule; the kernel-argument analysis calls it for every pointer-sized word
 * of every launch, so it must stay that cheap.
 */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static uint64_t granule_of(uintptr_t addr) {
  return (uint64_t)addr >> AC_GRANULE_SHIFT;
}

static uint64_t last_granule_of(const struct ac_alloc *a) {
  return granule_of(a->base + (a->size ? a->size - 1 : 0));
}

static struct granule *granule_get(struct ac_model *m, uint64_t key) {
  struct granule *g;
  HASH_FIND(hh, m->granules, &key, sizeof key, g);
  if (g) return g;
  g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->key = key;
  HASH_ADD(hh, m->granules, key, sizeof g->key, g);
  return g;
}

static bool granule_push(struct granule *g, struct ac_alloc *a) {
  if (g->count == g->capacity) {
    size_t cap = g->capacity ? g->capacity * 2 : 4;
    struct ac_alloc **grown = realloc(g->allocs, cap * sizeof *grown);
    if (!grown) return false;
    g->allocs = grown;
    g->capacity = cap;
  }
  /* Sorted by base (then serial), so a lookup is a binary search even when a
   * granule holds thousands of small allocations. */
  size_t i = g->count;
  while (i > 0 && (g->allocs[i - 1]->base > a->base ||
                   (g->allocs[i - 1]->base == a->base && g->allocs[i - 1]->serial > a->serial)))
    i--;
  memmove(&g->allocs[i + 1], &g->allocs[i], (g->count - i) * sizeof g->allocs[0]);
  g->allocs[i] = a;
  g->count++;
  return true;
}

static void granule_drop(struct ac_model *m, uint64_t key, const struct ac_alloc *a) {
  struct granule *g;
  HASH_FIND(hh, m->granules, &key, sizeof key, g);
  if (!g) return;
  for (size_t i = 0; i < g->count; i++) {
    if (g->allocs[i] != a) continue;
    memmove(&g->allocs[i], &g->allocs[i + 1], (g->count - i - 1) * sizeof g->allocs[0]);
    g->count--;
    break;
  }
  if (g->count == 0) {
    HASH_DEL(m->granules, g);
    free(g->allocs);
    free(g);
  }
}

struct ac_alloc *ac_model_add_alloc(struct ac_model *m, const struct ac_alloc *proto) {
  struct ac_alloc *a = malloc(sizeof *a);
  if (!a) return NULL;
  *a = *proto;
  a->serial = m->next_alloc_serial++;
  for (uint64_t k = granule_of(a->base); k <= last_granule_of(a); k++) {
    struct granule *g = granule_get(m, k);
    if (!g || !granule_push(g, a)) {
      for (uint64_t undo = granule_of(a->base); undo < k; undo++)
        granule_drop(m, undo, a);
      if (g && g->count == 0) granule_drop(m, k, a);
      free(a);
      return NULL;
    }
  }
  m->alloc_count++;
  m->layout++;
  return a;
}

static bool alloc_contains(const struct ac_alloc *a, uintptr_t addr) {
  return addr >= a->base && addr - a->base < (a->size ? a->size : 1);
}

struct ac_alloc *ac_model_find_alloc(const struct ac_model *m, uintptr_t addr) {
  uint64_t key = granule_of(addr);
  struct granule *g;
  HASH_FIND(hh, m->granules, &key, sizeof key, g);
  if (!g) return NULL;
  /* The last allocation starting at or below addr... */
  size_t lo = 0, hi = g->count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g->allocs[mid]->base <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* ...or one of the few before it: a large allocation spanning granules
   * starts below them all, and a stale record a free we never saw left
   * behind may overlap the allocation made since. The newest one wins. */
  struct ac_alloc *best = NULL;
  for (size_t i = lo, steps = 0; i-- > 0 && steps < 8; steps++)
    if (alloc_contains(g->allocs[i], addr) && (!best || g->allocs[i]->serial > best->serial))
      best = g->allocs[i];
  if (best || lo <= 8) return best;
  /* Further down, only an allocation that began in an earlier granule can
   * reach addr; those sort first. */
  uintptr_t granule_start = (uintptr_t)key << AC_GRANULE_SHIFT;
  for (size_t i = 0; i < lo - 8 && g->allocs[i]->base < granule_start; i++)
    if (alloc_contains(g->allocs[i], addr)) return g->allocs[i];
  return NULL;
}

struct ac_alloc *ac_model_find_alloc_at(const struct ac_model *m, uintptr_t base) {
  struct ac_alloc *a = ac_model_find_alloc(m, base);
  return a && a->base == base ? a : NULL;
}

void ac_model_remove_alloc(struct ac_model *m, struct ac_alloc *a) {
  for (uint64_t k = granule_of(a->base); k <= last_granule_of(a); k++)
    granule_drop(m, k, a);
  m->alloc_count--;
  m->layout++;
  free(a);
}

size_t ac_model_alloc_count(const struct ac_model *m) {
  return m->alloc_count;
}

void ac_model_free_allocs(struct ac_model *m) {
  /* An allocation spanning several granules is listed in each: collect each
   * one once (from the granule of its base), then free. */
  struct ac_alloc **all = malloc((m->alloc_count + 1) * sizeof *all);
  size_t n = 0;
  struct granule *g, *tmp;
  HASH_ITER(hh, m->granules, g, tmp) {
    for (size_t i = 0; all && i < g->count; i++)
      if (granule_of(g->allocs[i]->base) == g->key) all[n++] = g->allocs[i];
  }
  HASH_ITER(hh, m->granules, g, tmp) {
    HASH_DEL(m->granules, g);
    free(g->allocs);
    free(g);
  }
  for (size_t i = 0; i < n; i++)
    free(all[i]);
  free(all);
  m->alloc_count = 0;
}

void ac_model_for_each_alloc(struct ac_model *m, void (*fn)(struct ac_alloc *, void *), void *ctx) {
  struct granule *g, *tmp;
  HASH_ITER(hh, m->granules, g, tmp) {
    for (size_t i = 0; i < g->count; i++)
      if (granule_of(g->allocs[i]->base) == g->key) fn(g->allocs[i], ctx);
  }
}

uint64_t ac_model_layout(const struct ac_model *m) {
  return m->layout;
}
