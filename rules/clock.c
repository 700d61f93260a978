/* clock.c - vector clocks (see clock.h). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* Index of the first entry whose stream is >= stream. */
static size_t lower_bound(const struct ac_clock *c, uint64_t stream) {
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->e[mid].stream < stream)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint64_t ac_clock_get(const struct ac_clock *c, uint64_t stream) {
  size_t i = lower_bound(c, stream);
  return i < c->n && c->e[i].stream == stream ? c->e[i].seq : 0;
}

static bool reserve(struct ac_clock *c, size_t need) {
  if (need <= c->cap) return true;
  size_t cap = c->cap ? c->cap : 4;
  while (cap < need)
    cap *= 2;
  struct ac_clock_entry *grown = realloc(c->e, cap * sizeof *grown);
  if (!grown) return false;
  c->e = grown;
  c->cap = cap;
  return true;
}

bool ac_clock_raise(struct ac_clock *c, uint64_t stream, uint64_t seq) {
  size_t i = lower_bound(c, stream);
  if (i < c->n && c->e[i].stream == stream) {
    if (c->e[i].seq < seq) c->e[i].seq = seq;
    return true;
  }
  if (seq == 0) return true;
  if (!reserve(c, c->n + 1)) return false;
  memmove(&c->e[i + 1], &c->e[i], (c->n - i) * sizeof c->e[0]);
  c->e[i] = (struct ac_clock_entry){stream, seq};
  c->n++;
  return true;
}

bool ac_clock_join(struct ac_clock *dst, const struct ac_clock *src) {
  bool ok = true;
  for (size_t i = 0; i < src->n; i++)
    ok &= ac_clock_raise(dst, src->e[i].stream, src->e[i].seq);
  return ok;
}

bool ac_clock_copy(struct ac_clock *dst, const struct ac_clock *src) {
  if (!reserve(dst, src->n)) return false;
  if (src->n) memcpy(dst->e, src->e, src->n * sizeof src->e[0]);
  dst->n = src->n;
  return true;
}

void ac_clock_free(struct ac_clock *c) {
  free(c->e);
  memset(c, 0, sizeof *c);
}

void ac_clock_retain(struct ac_clock *c, bool (*keep)(uint64_t stream, void *ctx), void *ctx) {
  size_t out = 0;
  for (size_t i = 0; i < c->n; i++)
    if (keep(c->e[i].stream, ctx)) c->e[out++] = c->e[i];
  c->n = out;
}
