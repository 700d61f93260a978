/* emulate_a64_vector.c - aarch64 vector loads and stores of structures
 * carried out on a register file (emulate_a64.h): multiple structures, one
 * structure's lanes, and one structure replicated, decoded from the Arm
 * Architecture Reference Manual's "Advanced SIMD load/store" encodings. */
#include <string.h>

#include "emulate_a64_internal.h"

/* ---- vector structures: LD1-LD4 and ST1-ST4 of multiple structures, what
 * a compiler emits for a vectorised loop over interleaved data (complex
 * numbers, pixels). Element by element, as the architecture orders them;
 * like any vector load, no more than each element single-copy atomic. ---- */

/* The structures' shape for opcode: elements per structure (selem) and
 * registers per structure element (rpt); false when unallocated. */
static bool structure_shape(unsigned opcode, unsigned *selem, unsigned *rpt) {
  static const unsigned char shape[16][2] = {
      [0] = {4, 1}, [2] = {1, 4}, [4] = {3, 1},  [6] = {1, 3},
      [7] = {1, 1}, [8] = {2, 1}, [10] = {1, 2},
  };
  *selem = shape[opcode][0], *rpt = shape[opcode][1];
  return *selem != 0;
}

bool ac_a64_emulate_structures(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi) {
  bool post = (insn & 0xBFA00000u) == 0x0C800000u;
  if (!post && (insn & 0xBFBF0000u) != 0x0C000000u) return false;
  unsigned q = (insn >> 30) & 1, load = (insn >> 22) & 1, rm = (insn >> 16) & 31;
  unsigned size = (insn >> 10) & 3, rn = (insn >> 5) & 31, rt = insn & 31, selem, rpt;
  if (!structure_shape((insn >> 12) & 15, &selem, &rpt)) return false;
  if (size == 3 && !q && selem != 1) return false; /* .1d of LD2-LD4: reserved */
  if (!vregs_usable(r, load)) return false;
  unsigned ebytes = 1u << size, elements = (q ? 16u : 8u) / ebytes;
  uintptr_t at = (uintptr_t)base_reg(r, rn), bytes = (uintptr_t)rpt * selem * elements * ebytes;
  if (!within(at, bytes, lo, hi)) return false;
  if (load) /* a 64-bit register's upper half is cleared */
    for (unsigned i = 0; i < rpt * selem; i++) {
      if (!q) memset(r->v[(rt + i) % 32] + 8, 0, 8);
      r->v_written |= 1u << ((rt + i) % 32);
    }
  uintptr_t p = at;
  for (unsigned k = 0; k < rpt; k++)
    for (unsigned e = 0; e < elements; e++)
      for (unsigned s = 0; s < selem; s++, p += ebytes) {
        uint8_t *reg = r->v[(rt + k + s) % 32] + e * ebytes;
        if (load)
          memcpy(reg, (const void *)p, ebytes);
        else
          memcpy((void *)p, reg, ebytes);
      }
  if (post) post_index(r, rn, rm, bytes);
  r->pc += 4;
  return true;
}

/* ---- one structure: LD1-LD4 and ST1-ST4 to or from one lane of each
 * register, and LD1R-LD4R loading one structure into every lane - what a
 * compiler emits to gather or scatter a vector's elements one by one. A lane
 * load keeps the rest of its register, all 128 bits (the architecture's
 * V[t, 128] read and written back); a replicating load of a 64-bit vector
 * clears the upper half as every 64-bit SIMD write does. ---- */

/* The element size (log2 bytes) and lane index of a single-structure
 * access, or false when the encoding is unallocated; replicate for LDnR. */
static bool lane_shape(uint32_t insn, unsigned *scale, unsigned *index, bool *replicate) {
  unsigned q = (insn >> 30) & 1, load = (insn >> 22) & 1, opcode = (insn >> 13) & 7;
  unsigned s = (insn >> 12) & 1, size = (insn >> 10) & 3;
  *scale = opcode >> 1, *replicate = false;
  switch (*scale) {
  case 3: /* LDnR: no lane, no store form */
    if (!load || s) return false;
    *scale = size, *index = 0, *replicate = true;
    return true;
  case 0:
    *index = q << 3 | s << 2 | size;
    return true;
  case 1:
    if (size & 1) return false;
    *index = q << 2 | s << 1 | size >> 1;
    return true;
  default: /* 2: a word, or with size 01 a doubleword */
    if (size & 2 || (size == 1 && s)) return false;
    *scale = size ? 3 : 2, *index = size ? q : (q << 1 | s);
    return true;
  }
}

bool ac_a64_emulate_lane(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi) {
  bool post = (insn & 0xBF800000u) == 0x0D800000u;
  if (!post && (insn & 0xBF9F0000u) != 0x0D000000u) return false;
  unsigned q = (insn >> 30) & 1, load = (insn >> 22) & 1, rm = (insn >> 16) & 31;
  unsigned selem = (((insn >> 13) & 1) << 1 | ((insn >> 21) & 1)) + 1;
  unsigned rn = (insn >> 5) & 31, rt = insn & 31, scale, index;
  bool replicate;
  if (!lane_shape(insn, &scale, &index, &replicate)) return false;
  if (!vregs_usable(r, load)) return false;
  unsigned ebytes = 1u << scale;
  uintptr_t at = (uintptr_t)base_reg(r, rn), bytes = (uintptr_t)selem * ebytes;
  if (!within(at, bytes, lo, hi)) return false;
  for (unsigned s = 0; s < selem; s++) {
    uint8_t *reg = r->v[(rt + s) % 32];
    void *p = (void *)(at + s * ebytes);
    if (!load) {
      memcpy(p, reg + index * ebytes, ebytes);
      continue;
    }
    r->v_written |= 1u << ((rt + s) % 32);
    if (!replicate) {
      memcpy(reg + index * ebytes, p, ebytes);
      continue;
    }
    unsigned width = q ? 16 : 8;
    for (unsigned e = 0; e < width; e += ebytes)
      memcpy(reg + e, p, ebytes);
    if (!q) memset(reg + 8, 0, 8);
  }
  if (post) post_index(r, rn, rm, bytes);
  r->pc += 4;
  return true;
}
