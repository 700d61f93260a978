/* clock.h - vector clocks over streams: for each stream (by serial), how many
 * of its operations are known to come before. The model keeps one per stream
 * (what its next operation waits for), one per recorded event, and one for the
 * host (what it has observed complete). Sparse and sorted: a program has a
 * handful of streams, and most clocks name few of them. */
#ifndef AC_CLOCK_H
#define AC_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ac_clock_entry {
  uint64_t stream;
  uint64_t seq;
};

struct ac_clock {
  size_t n, cap;
  struct ac_clock_entry *e;
};

uint64_t ac_clock_get(const struct ac_clock *c, uint64_t stream);
/* c[stream] = max(c[stream], seq); false only when out of memory. */
bool ac_clock_raise(struct ac_clock *c, uint64_t stream, uint64_t seq);
/* dst = max(dst, src) entry by entry. */
bool ac_clock_join(struct ac_clock *dst, const struct ac_clock *src);
bool ac_clock_copy(struct ac_clock *dst, const struct ac_clock *src);
void ac_clock_free(struct ac_clock *c);
/* Drops the entries of streams keep answers false for (forgotten streams). */
void ac_clock_retain(struct ac_clock *c, bool (*keep)(uint64_t stream, void *ctx), void *ctx);

#endif
