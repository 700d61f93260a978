/* fault_esr.h - what the records the kernel leaves in an aarch64 signal
 * frame (uc_mcontext.__reserved) say: whether a memory fault was a write,
 * and where the SIMD&FP registers the thread gets back are. */
#ifndef AC_FAULT_ESR_H
#define AC_FAULT_ESR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The record with this magic among the frame's records, and its length
 * (header included), or NULL. */
const unsigned char *ac_frame_record(const unsigned char *records, size_t size, uint32_t magic,
                                     uint32_t *length);
/* 1 for a write, 0 for a read, -1 when the records do not say (no
 * esr_context, as under qemu-user, or a fault that is no data abort). */
int ac_esr_fault_is_write(const unsigned char *records, size_t size);

/* The frame's SIMD&FP registers as the thread gets them back. */
struct ac_frame_vregs {
  unsigned char *v; /* the fpsimd_context's v0-v31, 16 bytes each; NULL: none */
  /* Where SVE state is live the kernel restores from the sve_context
   * instead: its Z registers, vl bytes each, V the low 16; NULL: not live. */
  unsigned char *z;
  unsigned vl;
  bool loadable; /* a register written here reaches the thread */
};
void ac_frame_vregs(unsigned char *records, size_t size, struct ac_frame_vregs *f);
/* The registers in written (a bit each) from v into the frame: the fpsimd
 * record's, and where SVE state is live the Z registers', the rest of each
 * cleared as a write to V clears it. Only where f->loadable. */
void ac_frame_write_vregs(const struct ac_frame_vregs *f, const uint8_t v[32][16],
                          uint32_t written);

#endif
