/* test_fault_esr.c - reading an aarch64 fault's access kind and the SIMD&FP
 * registers from the signal frame's records (shim/guard/fault_esr.c), on any
 * processor: the records are built here byte by byte as the kernel lays them
 * out. */
#include <stdint.h>
#include <string.h>

#include "../../shim/guard/fault_esr.h"
#include "test.h"

#define FPSIMD_MAGIC 0x46508001u
#define ESR_MAGIC 0x45535201u
#define SVE_MAGIC 0x53564501u
#define EXTRA_MAGIC 0x45585401u
#define DABT_LOW (0x24ull << 26)
#define IABT_LOW (0x20ull << 26)
#define WNR (1ull << 6)
#define CM (1ull << 8)

static unsigned char frame[4096];

/* Appends one record of size bytes at *at; payload (8 bytes) if any. */
static void put(size_t *at, uint32_t magic, uint32_t size, const uint64_t *payload) {
  memcpy(frame + *at, &magic, 4);
  memcpy(frame + *at + 4, &size, 4);
  if (payload) memcpy(frame + *at + 8, payload, 8);
  *at += size;
}

/* A frame as Linux makes it: FP/SIMD state, then the ESR, then the end. */
static int kind_after_fpsimd(uint64_t esr) {
  size_t at = 0;
  memset(frame, 0, sizeof frame);
  put(&at, FPSIMD_MAGIC, 528, NULL);
  put(&at, ESR_MAGIC, 16, &esr);
  return ac_esr_fault_is_write(frame, sizeof frame);
}

static void data_aborts(void) {
  CHECK(kind_after_fpsimd(DABT_LOW | WNR) == 1);
  CHECK(kind_after_fpsimd(DABT_LOW) == 0);
  CHECK(kind_after_fpsimd((0x25ull << 26) | WNR) == 1);
  CHECK(kind_after_fpsimd(DABT_LOW | WNR | CM) == 0); /* cache maintenance reads */
}

static void frames_that_do_not_say(void) {
  CHECK(kind_after_fpsimd(IABT_LOW | WNR) == -1); /* not a data abort */
  size_t at = 0;
  memset(frame, 0, sizeof frame);
  put(&at, FPSIMD_MAGIC, 528, NULL); /* qemu-user's frame: no esr_context */
  CHECK(ac_esr_fault_is_write(frame, sizeof frame) == -1);
  at = 0;
  put(&at, FPSIMD_MAGIC, 0, NULL); /* a zero size would loop */
  CHECK(ac_esr_fault_is_write(frame, sizeof frame) == -1);
  at = 0;
  uint64_t esr = DABT_LOW | WNR;
  put(&at, FPSIMD_MAGIC, 528, NULL);
  put(&at, ESR_MAGIC, 16, &esr);
  CHECK(ac_esr_fault_is_write(frame, 528 + 12) == -1); /* the record runs past the end */
  CHECK(ac_esr_fault_is_write(frame, 528 + 16) == 1);
}

/* A frame with v0-v31 (byte i of v[n]: n) and, when vl, a live SVE record
 * of that vector length (Z bytes 0xee) with flags; extra: an extra_context
 * record after them. */
static void vector_frame(uint16_t vl, uint16_t flags, bool extra) {
  size_t at = 0;
  memset(frame, 0, sizeof frame);
  put(&at, FPSIMD_MAGIC, 528, NULL);
  for (int n = 0; n < 32; n++)
    memset(frame + 16 + n * 16, n, 16);
  if (vl) {
    size_t sve = at;
    put(&at, SVE_MAGIC, 16 + 32u * vl + 16u * vl / 8 + 16, NULL);
    memcpy(frame + sve + 8, &vl, 2);
    memcpy(frame + sve + 10, &flags, 2);
    memset(frame + sve + 16, 0xee, 32u * vl);
  }
  if (extra) put(&at, EXTRA_MAGIC, 32, NULL);
}

static void vector_registers(void) {
  struct ac_frame_vregs f;
  uint8_t v[32][16];
  memset(v, 0x5a, sizeof v);
  vector_frame(0, 0, false);
  ac_frame_vregs(frame, sizeof frame, &f);
  CHECK(f.v == frame + 16 && f.v[3 * 16] == 3 && !f.z && f.loadable);
  ac_frame_write_vregs(&f, v, 1u << 3);
  CHECK(f.v[3 * 16] == 0x5a && f.v[3 * 16 + 15] == 0x5a && f.v[2 * 16] == 2 && f.v[4 * 16] == 4);
  vector_frame(32, 0, false); /* SVE live, 256-bit vectors */
  ac_frame_vregs(frame, sizeof frame, &f);
  CHECK(f.z == frame + 528 + 16 && f.vl == 32 && f.loadable);
  ac_frame_write_vregs(&f, v, 1u << 31 | 1u);
  CHECK(f.z[0] == 0x5a && f.z[15] == 0x5a && f.z[16] == 0 && f.z[31] == 0); /* Z0: V, then 0 */
  CHECK(f.z[32] == 0xee && f.z[30 * 32 + 31] == 0xee);                      /* Z1, Z30 as were */
  CHECK(f.z[31 * 32] == 0x5a && f.z[31 * 32 + 31] == 0 && f.v[31 * 16] == 0x5a);
  vector_frame(32, 1, false); /* streaming mode */
  ac_frame_vregs(frame, sizeof frame, &f);
  CHECK(!f.loadable);
  vector_frame(0, 0, true); /* records spill into an extra_context */
  ac_frame_vregs(frame, sizeof frame, &f);
  CHECK(f.v && !f.loadable);
  vector_frame(0, 0, false);
  ac_frame_vregs(frame, 528 - 16, &f); /* the fpsimd record runs past the end */
  CHECK(!f.v && !f.loadable);
}

int main(void) {
  data_aborts();
  frames_that_do_not_say();
  vector_registers();
  return TEST_SUMMARY("fault_esr");
}
