/* test_fault_esr.c - reading an aarch64 fault's access kind from the signal
 * frame's records (shim/guard/fault_esr.c), on any processor: the records are
 * built here byte by byte as the kernel lays them out. */
#include <stdint.h>
#include <string.h>

#include "../../shim/guard/fault_esr.h"
#include "test.h"

#define FPSIMD_MAGIC 0x46508001u
#define ESR_MAGIC 0x45535201u
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

int main(void) {
  data_aborts();
  frames_that_do_not_say();
  return TEST_SUMMARY("fault_esr");
}
