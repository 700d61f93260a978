/* fault_esr.h - whether an aarch64 memory fault was a write, from the
 * records the kernel leaves in the signal frame (uc_mcontext.__reserved). */
#ifndef AC_FAULT_ESR_H
#define AC_FAULT_ESR_H

#include <stddef.h>
#include <stdint.h>

/* The record with this magic among the frame's records, and its length
 * (header included), or NULL. */
const unsigned char *ac_frame_record(const unsigned char *records, size_t size, uint32_t magic,
                                     uint32_t *length);
/* 1 for a write, 0 for a read, -1 when the records do not say (no
 * esr_context, as under qemu-user, or a fault that is no data abort). */
int ac_esr_fault_is_write(const unsigned char *records, size_t size);

#endif
