/* emulate_a64_internal.h - what the aarch64 emulator's files share: the
 * base register's reading and writeback, whether the SIMD&FP registers can
 * be used, the bounds check, and the vector structures' entry points
 * (emulate_a64_vector.c). */
#ifndef AC_EMULATE_A64_INTERNAL_H
#define AC_EMULATE_A64_INTERNAL_H

#include "emulate_a64.h"

/* Register n as a base (31: SP). */
static inline uint64_t base_reg(const struct ac_a64_regs *r, unsigned n) {
  return n == 31 ? r->sp : r->x[n];
}

/* A writeback of base register n (31: SP). */
static inline void set_base_reg(struct ac_a64_regs *r, unsigned n, uint64_t value) {
  if (n == 31)
    r->sp = value;
  else
    r->x[n] = value;
}

/* Whether a load into the SIMD&FP registers (or a store from them) can be
 * done on r: a store needs them known, a load needs its result to reach the
 * thread. */
static inline bool vregs_usable(const struct ac_a64_regs *r, bool load) {
  return load ? r->v_loadable : r->v_present;
}

/* A vector structure's post-index writeback: by the bytes moved when Rm is
 * 31 (the immediate form), else by Xm. */
static inline void post_index(struct ac_a64_regs *r, unsigned rn, unsigned rm, uint64_t bytes) {
  set_base_reg(r, rn, base_reg(r, rn) + (rm == 31 ? bytes : r->x[rm]));
}

/* Whether bytes at at lie within [lo, hi). */
static inline bool within(uintptr_t at, uintptr_t bytes, uintptr_t lo, uintptr_t hi) {
  return at >= lo && at <= hi && bytes <= hi - at;
}

/* LD1-LD4 and ST1-ST4 of multiple structures, and of one structure (a
 * lane, or LD1R-LD4R): as ac_a64_emulate, false for any other instruction. */
bool ac_a64_emulate_structures(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi);
bool ac_a64_emulate_lane(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi);

#endif
