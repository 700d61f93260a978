/* stack_depot.c - call stacks stored once (stack_depot.h).
 *
 * Entries are carved from 64 KiB blocks that are never freed or moved, found
 * by id through an array and by content through a chained hash table whose
 * chains run through the entries' ids.
 */
#include "stack_depot.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define BLOCK_BYTES (64 * 1024)

struct depot_entry {
  uint32_t hash;
  ac_stack_id next; /* the next entry of its hash chain */
  int depth;
  void *pc[];
};

static struct depot_entry **by_id; /* entry id is by_id[id - 1] */
static size_t count, cap;
static ac_stack_id *buckets; /* chain heads; a power of two of them */
static size_t bucket_count;
static char *block;
static size_t block_used, bytes;

static uint32_t hash_of(void *const *pc, int depth) {
  uint64_t h = 0x9e3779b97f4a7c15u ^ (uint64_t)depth;
  for (int i = 0; i < depth; i++) {
    h ^= (uint64_t)(uintptr_t)pc[i];
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 32;
  }
  return (uint32_t)h;
}

uint32_t ac_stack_hash(const struct ac_stack *stack) {
  return hash_of(stack->pc, stack->depth > AC_STACK_MAX ? AC_STACK_MAX : stack->depth);
}

static bool same(const struct depot_entry *e, uint32_t hash, void *const *pc, int depth) {
  return e->hash == hash && e->depth == depth &&
         memcmp(e->pc, pc, (size_t)depth * sizeof pc[0]) == 0;
}

/* Twice the buckets once there are as many entries as buckets. */
static bool rehash(void) {
  size_t n = bucket_count ? bucket_count * 2 : 1024;
  ac_stack_id *grown = calloc(n, sizeof *grown);
  if (!grown) return false;
  for (size_t id = 1; id <= count; id++) {
    struct depot_entry *e = by_id[id - 1];
    e->next = grown[e->hash & (n - 1)];
    grown[e->hash & (n - 1)] = (ac_stack_id)id;
  }
  free(buckets);
  buckets = grown;
  bucket_count = n;
  return true;
}

static struct depot_entry *carve(size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (!block || block_used + size > BLOCK_BYTES) {
    block = malloc(BLOCK_BYTES);
    if (!block) return NULL;
    block_used = 0;
    bytes += BLOCK_BYTES;
  }
  struct depot_entry *e = (struct depot_entry *)(block + block_used);
  block_used += size;
  return e;
}

ac_stack_id ac_stack_depot_put(const struct ac_stack *stack) {
  if (!stack || stack->depth <= 0) return 0;
  /* Read in place: a stack is 264 bytes, most of them unused. */
  int depth = stack->depth > AC_STACK_MAX ? AC_STACK_MAX : stack->depth;
  void *const *pc = stack->pc;
  uint32_t hash = hash_of(pc, depth);
  for (ac_stack_id id = bucket_count ? buckets[hash & (bucket_count - 1)] : 0; id;
       id = by_id[id - 1]->next)
    if (same(by_id[id - 1], hash, pc, depth)) return id;
  if (count >= bucket_count && !rehash()) return 0;
  if (count >= UINT32_MAX - 1 || !AC_GROW(by_id, count, cap, 1024)) return 0;
  struct depot_entry *e = carve(sizeof *e + (size_t)depth * sizeof pc[0]);
  if (!e) return 0;
  e->hash = hash;
  e->depth = depth;
  memcpy(e->pc, pc, (size_t)depth * sizeof pc[0]);
  by_id[count++] = e;
  ac_stack_id id = (ac_stack_id)count;
  e->next = buckets[hash & (bucket_count - 1)];
  buckets[hash & (bucket_count - 1)] = id;
  return id;
}

void ac_stack_depot_get(ac_stack_id id, struct ac_stack *out) {
  out->depth = 0;
  if (id == 0 || id > count) return;
  const struct depot_entry *e = by_id[id - 1];
  out->depth = e->depth;
  memcpy(out->pc, e->pc, (size_t)e->depth * sizeof e->pc[0]);
}

size_t ac_stack_depot_count(void) {
  return count;
}

size_t ac_stack_depot_bytes(void) {
  return bytes + cap * sizeof by_id[0] + bucket_count * sizeof buckets[0];
}

void ac_origin_expand(const struct ac_origin *o, struct ac_op_origin *out) {
  out->api = o->api;
  out->thread = o->thread;
  out->seq = o->seq;
  ac_stack_depot_get(o->stack, &out->stack);
}
