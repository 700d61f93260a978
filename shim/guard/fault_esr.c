/* fault_esr.c - what an aarch64 signal frame's records say: the access kind
 * of a fault, and where the SIMD&FP registers are restored from.
 *
 * The kernel lays records out in uc_mcontext.__reserved, each a 32-bit magic
 * and a 32-bit size, ending with a zero magic (asm/sigcontext.h). Its
 * esr_context holds the exception syndrome: a data abort (class 0x24 from
 * user space, 0x25 from the kernel) sets WnR for a write, and for a cache
 * maintenance operation (CM), which reads. The fpsimd_context holds v0-v31;
 * where SVE state is live an sve_context carries the Z registers too, and
 * the kernel restores the vector registers from it alone. Pure byte
 * parsing, so the unit tests run it on every processor.
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

#define FPSIMD_MAGIC 0x46508001u
#define SVE_MAGIC 0x53564501u
#define EXTRA_MAGIC 0x45585401u
#define SVE_RECORD_EMPTY 16 /* an sve_context without register payload */
#define SVE_ZREGS_AT 16     /* where its Z registers begin (SVE_SIG_REGS_OFFSET) */
#define SVE_FLAG_SM 1       /* streaming mode (SVE_SIG_FLAG_SM) */

void ac_frame_vregs(unsigned char *records, size_t size, struct ac_frame_vregs *f) {
  uint32_t length, sve_length;
  const unsigned char *fpsimd = ac_frame_record(records, size, FPSIMD_MAGIC, &length);
  f->v = fpsimd && length >= 16 + 32 * 16 ? (unsigned char *)fpsimd + 16 : NULL;
  f->z = NULL, f->vl = 0;
  /* Records past __reserved, in an extra_context, are not looked for: an SVE
   * record among them would be missed. */
  f->loadable = f->v && !ac_frame_record(records, size, EXTRA_MAGIC, &length);
  const unsigned char *sve = ac_frame_record(records, size, SVE_MAGIC, &sve_length);
  if (!sve || sve_length <= SVE_RECORD_EMPTY) return;
  uint16_t vl, flags;
  memcpy(&vl, sve + 8, 2);
  memcpy(&flags, sve + 10, 2);
  if (vl < 16 || vl % 16 || (flags & SVE_FLAG_SM) || sve_length < SVE_ZREGS_AT + 32u * vl) {
    f->loadable = false; /* streaming mode, or a record not as expected */
    return;
  }
  f->z = (unsigned char *)sve + SVE_ZREGS_AT, f->vl = vl;
}

void ac_frame_write_vregs(const struct ac_frame_vregs *f, const uint8_t v[32][16],
                          uint32_t written) {
  if (!f->loadable) return;
  for (unsigned n = 0; n < 32; n++) {
    if (!(written & 1u << n)) continue;
    memcpy(f->v + n * 16, v[n], 16);
    if (!f->z) continue;
    memcpy(f->z + n * f->vl, v[n], 16);
    memset(f->z + n * f->vl + 16, 0, f->vl - 16);
  }
}
