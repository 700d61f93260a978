/* fault_esr.c - the access kind of an aarch64 fault, from the signal frame.
 *
 * The kernel lays records out in uc_mcontext.__reserved, each a 32-bit magic
 * and a 32-bit size, ending with a zero magic (asm/sigcontext.h). Its
 * esr_context holds the exception syndrome: a data abort (class 0x24 from
 * user space, 0x25 from the kernel) sets WnR for a write, and for a cache
 * maintenance operation (CM), which reads. Pure byte parsing, so the unit
 * tests run it on every processor.
 */
#include "fault_esr.h"

#include <stdint.h>
#include <string.h>

#define ESR_MAGIC 0x45535201u
#define ESR_EC_SHIFT 26
#define ESR_EC_MASK 0x3fu
#define ESR_EC_DABT_LOW 0x24u
#define ESR_EC_DABT_CUR 0x25u
#define ESR_WNR (1u << 6)
#define ESR_CM (1u << 8)

static int kind_of(uint64_t esr) {
  unsigned ec = (unsigned)(esr >> ESR_EC_SHIFT) & ESR_EC_MASK;
  if (ec != ESR_EC_DABT_LOW && ec != ESR_EC_DABT_CUR) return -1;
  return (esr & ESR_WNR) && !(esr & ESR_CM);
}

const unsigned char *ac_frame_record(const unsigned char *records, size_t size, uint32_t magic,
                                     uint32_t *length) {
  size_t at = 0;
  while (size - at >= 8) {
    uint32_t m, n;
    memcpy(&m, records + at, 4);
    memcpy(&n, records + at + 4, 4);
    if (m == 0 || n < 8 || n > size - at) return NULL;
    if (m == magic) {
      *length = n;
      return records + at;
    }
    at += n;
  }
  return NULL;
}

int ac_esr_fault_is_write(const unsigned char *records, size_t size) {
  uint32_t length;
  const unsigned char *r = ac_frame_record(records, size, ESR_MAGIC, &length);
  if (!r || length < 16) return -1;
  uint64_t esr;
  memcpy(&esr, r + 8, 8);
  return kind_of(esr);
}
