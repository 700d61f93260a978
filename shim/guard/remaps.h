/* remaps.h - mappings made, unmapped or moved under the guard, noted by the
 * shim's mmap / munmap / mremap wrappers without a lock and read under the
 * model lock by each part of the guard that keeps something about a mapping
 * (remaps.c).
 */
#ifndef AC_GUARD_REMAPS_H
#define AC_GUARD_REMAPS_H

#include <stdbool.h>
#include <stdint.h>

/* One reader's place in the notes: each reads every note once, on its own. */
struct ac_remap_reader {
  unsigned long tail;
};

/* What a reader keeps lies in [start, end): remaps there are noted from now
 * on (model lock; the span only grows). */
void ac_guard_remaps_watch(uintptr_t start, uintptr_t end);
/* fn(start, end, ctx) for each range remapped since the reader last read
 * (model lock); false when some were lost (the notes overflowed): the reader
 * must then distrust all it keeps. */
bool ac_guard_remaps_read(struct ac_remap_reader *r,
                          void (*fn)(uintptr_t start, uintptr_t end, void *ctx), void *ctx);
/* In a forked child: no note, and each reader's place at the start. */
void ac_guard_remaps_after_fork_child(void);

#endif
