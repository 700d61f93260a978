/* pkeys.h - the processor's memory protection keys, as the page guard uses
 * them: whether the CPU and kernel have them, the PKRU register, the PKRU
 * saved in a signal frame, and which protection class gets which key.
 *
 * A page tagged with key k (pkey_mprotect) can be made inaccessible to one
 * thread by setting k's access-disable bit in that thread's PKRU: a register
 * write of a few nanoseconds, where mprotect changes the page tables of every
 * thread at once (docs/driver-facts.md, "Protection keys"). Only x86-64 has
 * them here; elsewhere every query answers "none" and the guard uses mprotect.
 */
#ifndef AC_PKEYS_H
#define AC_PKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most keys the hardware has (key 0 is every page's default). */
#define AC_PKEYS_HW_MAX 16

/* Whether this CPU and kernel have protection keys (CPUID OSPKE, and PKRU
 * among the states the kernel saves); why not, in *why, when they do not. */
bool ac_pkeys_supported(const char **why);

/* PKRU bits: access and write disable of key k. */
static inline uint32_t ac_pkru_disable_bits(int key) {
  return (uint32_t)3 << (2 * key);
}

/* Whether pkru forbids a read (or, is_write, a write) of pages tagged key;
 * a key the hardware does not have forbids everything. */
static inline bool ac_pkru_forbids(uint32_t pkru, int key, bool is_write) {
  if (key < 0 || key >= AC_PKEYS_HW_MAX) return true;
  uint32_t bits = pkru >> (2 * key);
  return (bits & 1) || (is_write && (bits & 2));
}

/* The PKRU bits that disable each key of keys[] whose index is set in mask. */
uint32_t ac_pkru_bits_of(uint32_t mask, const int *keys, int key_count);

/* A PKRU value with the keys of `ours` (PKRU bits) set as in `wanted` and
 * every other key - key 0, the program's own - as in `pkru`. */
static inline uint32_t ac_pkru_merge(uint32_t pkru, uint32_t ours, uint32_t wanted) {
  return (pkru & ~ours) | (wanted & ours);
}

uint32_t ac_pkru_read(void);
void ac_pkru_write(uint32_t pkru);

/* The PKRU saved in the XSAVE area of a signal frame (the kernel restores
 * the thread's from it at sigreturn), or NULL when the frame has none.
 * fpstate is uc_mcontext.fpregs; pkru_offset from CPUID 0xD sub-leaf 9. */
uint32_t *ac_pkeys_frame_pkru_at(void *fpstate, uint32_t pkru_offset);
/* The same for a ucontext_t of this processor. */
uint32_t *ac_pkeys_frame_pkru(void *ucontext);

int ac_pkeys_alloc(void);
void ac_pkeys_free(int key);
int ac_pkeys_tag(uintptr_t start, uintptr_t end, int key);
/* pkey_mprotect itself: protection prot and key for [start, end). */
int ac_pkeys_protect(uintptr_t start, uintptr_t end, int prot, int key);
/* How many ranges were tagged (ac_pkeys_tag succeeded): it changes whenever
 * a page changed key. Async-signal-safe. */
unsigned ac_pkeys_tags_made(void);

/* ---- which class gets a key ----
 * A class is a set of allocations that become off-limits together (globally
 * attached memory under strict semantics, memory single-attached to one
 * stream) and `pages` the pages that hold its memory alone. Keys are few, so
 * a class keeps the key it had (its pages stay tagged), and free keys go to
 * the classes with the most pages; a class with none gets none. A class
 * without a key is protected page by page, as without keys. */
struct ac_key_class {
  const void *id; /* the class's identity (a stream, or the GLOBAL marker) */
  size_t pages;   /* pages that hold its memory and no other */
  int slot;       /* in: the key slot it had or -1; out: the one it has or -1 */
};
void ac_pkeys_assign(struct ac_key_class *classes, size_t count, int slot_count);

#endif
