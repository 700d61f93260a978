/* emulate_a64.h - one aarch64 load or store carried out for the program, on
 * any processor: what the page guard does on aarch64, which has no
 * user-mode single step, instead of leaving a judged page open to every
 * thread (step.c). The guard opens the page, has the instruction done here
 * on the thread's registers as its signal frame holds them, moves the
 * program counter past it, and closes the page again. */
#ifndef AC_EMULATE_A64_H
#define AC_EMULATE_A64_H

#include <stdbool.h>
#include <stdint.h>

/* The registers an instruction may read or write. */
struct ac_a64_regs {
  uint64_t x[31];
  uint64_t sp;
  uint64_t pc;
  uint8_t v[32][16];  /* SIMD and floating-point, little-endian */
  bool v_present;     /* false: v is not known, no SIMD&FP access is done */
  bool v_loadable;    /* false: a load into v would not reach the thread */
  uint32_t v_written; /* set by the emulator: the v registers a load wrote */
};

/* Carries out insn, the instruction at r->pc, on r and memory: a load or
 * store of general or SIMD&FP registers, single or pair, by immediate
 * offset (scaled or not), pre- or post-index, or register offset; LD1-LD4
 * and ST1-ST4 of multiple structures or of one structure (a lane, or
 * LD1R-LD4R), post-index or not; a
 * load-acquire or store-release (LDAR, LDAPR, STLR, their LO forms, LDAPUR
 * and STLUR); an LSE atomic (LD<op>, ST<op>, SWP, CAS, CASP), single-copy
 * atomic as the processor does it. True when done (r->pc moved past it);
 * false, with r and memory untouched, for any other instruction
 * (exclusives, literal loads), a form the architecture leaves
 * unpredictable or unallocated, a misaligned atomic, or an access outside
 * [lo, hi). */
bool ac_a64_emulate(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi);

#endif
