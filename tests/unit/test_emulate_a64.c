/* test_emulate_a64.c - aarch64 loads and stores carried out on a register
 * file (shim/guard/emulate_a64.c), on any processor. Each instruction's
 * encoding is the one GNU as gives for the assembly beside it; the ones
 * the emulator must leave alone are checked to leave registers and memory
 * as they were. */
#include <stdint.h>
#include <string.h>

#include "../../shim/guard/emulate_a64.h"
#include "test.h"

static _Alignas(4096) uint8_t mem[4096];
static struct ac_a64_regs r;

#define LO ((uintptr_t)mem)
#define HI ((uintptr_t)mem + sizeof mem)
#define AT(off) ((uint64_t)(uintptr_t)(mem + (off)))

static void reset(void) {
  memset(&r, 0, sizeof r);
  for (int i = 0; i < 31; i++)
    r.x[i] = 0x1111111111111111ull * (uint64_t)(i % 15 + 1);
  r.pc = 0x400000;
  r.v_present = r.v_loadable = true;
  for (int i = 0; i < (int)sizeof mem; i++)
    mem[i] = (uint8_t)(i * 7 + 3);
}

static uint64_t mem64(size_t off) {
  uint64_t v;
  memcpy(&v, mem + off, sizeof v);
  return v;
}

static bool done(uint32_t insn) {
  uint64_t pc = r.pc;
  bool ok = ac_a64_emulate(insn, &r, LO, HI);
  return ok && r.pc == pc + 4;
}

/* Left alone: false, and nothing changed. */
static bool refused(uint32_t insn) {
  struct ac_a64_regs before = r;
  static uint8_t mem_before[sizeof mem];
  memcpy(mem_before, mem, sizeof mem);
  return !ac_a64_emulate(insn, &r, LO, HI) && !memcmp(&before, &r, sizeof r) &&
         !memcmp(mem_before, mem, sizeof mem);
}

static void general_loads(void) {
  reset();
  r.x[1] = AT(64);
  CHECK(done(0xf9400020) && r.x[0] == mem64(64)); /* ldr x0, [x1] */
  reset();
  r.x[3] = AT(100);
  CHECK(done(0xb9400862) && r.x[2] == (uint32_t)mem64(108)); /* ldr w2, [x3, #8] */
  reset();
  r.x[5] = AT(10);
  CHECK(done(0x39400ca4) && r.x[4] == mem[13]); /* ldrb w4, [x5, #3] */
  reset();
  mem[21] = 0x80;
  r.x[7] = AT(20);
  CHECK(done(0x398004e6) && r.x[6] == 0xffffffffffffff80ull); /* ldrsb x6, [x7, #1] */
  reset();
  mem[32] = 0x00, mem[33] = 0x90;
  r.x[9] = AT(30);
  CHECK(done(0x79c00528) && r.x[8] == 0xffff9000ull); /* ldrsh w8, [x9, #2]: W, upper zero */
  reset();
  memcpy(mem + 44, "\x01\x00\x00\xf0", 4);
  r.x[11] = AT(40);
  CHECK(done(0xb980056a) && r.x[10] == 0xfffffffff0000001ull); /* ldrsw x10, [x11, #4] */
  reset();
  r.x[18] = AT(208);
  CHECK(done(0xf85f8251) && r.x[17] == mem64(200)); /* ldur x17, [x18, #-8] */
}

static void general_stores(void) {
  reset();
  r.x[13] = AT(0);
  CHECK(done(0xf90009ac) && mem64(16) == r.x[12]); /* str x12, [x13, #16] */
  reset();
  r.x[15] = AT(0);
  r.x[14] = 0xabcd1234;
  CHECK(done(0x79000dee) && mem[6] == 0x34 && mem[7] == 0x12 && mem[8] == (uint8_t)(8 * 7 + 3));
  reset();
  r.x[16] = AT(5);
  CHECK(done(0x3900021f) && mem[5] == 0); /* strb wzr, [x16] */
}

static void indexed(void) {
  reset();
  r.x[20] = AT(100);
  CHECK(done(0xf8408e93) && r.x[19] == mem64(108) && r.x[20] == AT(108)); /* ldr x19, [x20, #8]! */
  reset();
  r.x[22] = AT(100);
  CHECK(done(0xf85f06d5) && r.x[21] == mem64(100) && r.x[22] == AT(84)); /* ldr x21, [x22], #-16 */
  reset();
  r.sp = AT(60);
  r.x[23] = 0xdeadbeefcafef00dull;
  CHECK(done(0xb8004ff7) && r.sp == AT(64) && mem64(64) << 32 >> 32 == 0xcafef00dull);
  reset();
  r.x[25] = AT(0);
  r.x[26] = 5;
  CHECK(done(0xf87a7b38) && r.x[24] == mem64(40)); /* ldr x24, [x25, x26, lsl #3] */
  reset();
  r.x[28] = AT(400);
  r.x[1] = 0xfffffffffffffffeull;                             /* w1 = -2, sign-extended, times 4 */
  CHECK(done(0xb861db9b) && r.x[27] == (uint32_t)mem64(392)); /* ldr w27, [x28, w1, sxtw #2] */
  reset();
  r.x[3] = AT(7);
  r.x[4] = 9;
  r.x[2] = 0x5a;
  CHECK(done(0x38246862) && mem[16] == 0x5a); /* strb w2, [x3, x4] */
}

static void pairs(void) {
  reset();
  r.x[7] = AT(0);
  CHECK(done(0xa94118e5) && r.x[5] == mem64(16) && r.x[6] == mem64(24)); /* ldp x5, x6, [x7, #16] */
  reset();
  r.x[10] = AT(80);
  r.x[8] = 0x01020304, r.x[9] = 0x05060708;
  CHECK(done(0x29bf2548) && r.x[10] == AT(72) && mem64(72) == 0x0506070801020304ull);
  reset();
  r.sp = AT(128);
  CHECK(done(0xa8c233eb) && r.x[11] == mem64(128) && r.x[12] == mem64(136) && r.sp == AT(160));
  reset();
  memcpy(mem + 300, "\xff\xff\xff\xff\x02\x00\x00\x00", 8);
  r.x[15] = AT(300);
  CHECK(done(0x694039ed) && r.x[13] == ~0ull && r.x[14] == 2); /* ldpsw x13, x14, [x15] */
}

static void simd(void) {
  reset();
  r.x[1] = AT(0);
  memset(r.v[0], 0xee, 16);
  CHECK(done(0x3dc00820) && !memcmp(r.v[0], mem + 32, 16)); /* ldr q0, [x1, #32] */
  reset();
  r.x[2] = AT(0);
  memset(r.v[1], 0x42, 16);
  CHECK(done(0xfd000441) && mem64(8) == 0x4242424242424242ull && mem[16] != 0x42);
  reset();
  r.x[3] = AT(12);
  memset(r.v[2], 0xee, 16);
  CHECK(done(0xbd400062) && !memcmp(r.v[2], mem + 12, 4) && r.v[2][4] == 0 && r.v[2][15] == 0);
  reset();
  r.x[5] = AT(512);
  CHECK(done(0xad4010a3) && !memcmp(r.v[3], mem + 512, 16) && !memcmp(r.v[4], mem + 528, 16));
  reset();
  r.x[8] = AT(0);
  memset(r.v[6], 6, 16), memset(r.v[7], 7, 16);
  CHECK(done(0xad011d06) && mem[32] == 6 && mem[47] == 6 && mem[48] == 7 && mem[63] == 7);
  reset();
  r.x[10] = AT(52);
  CHECK(done(0x7c5fe149) && !memcmp(r.v[9], mem + 50, 2) && r.v[9][2] == 0); /* ldur h9 */
  reset();
  r.x[12] = AT(3), r.x[13] = 4;
  CHECK(done(0x3c6d698b) && r.v[11][0] == mem[7] && r.v[11][1] == 0); /* ldr b11, [x12, x13] */
  reset();
  r.x[1] = AT(0);
  r.v_loadable = false; /* live SVE state: a vector load is not done */
  CHECK(refused(0x3dc00820));
  r.x[2] = AT(0);
  CHECK(done(0xfd000441)); /* a store still is */
}

static void left_alone(void) {
  reset();
  r.x[1] = r.x[2] = AT(0);
  CHECK(refused(0xc8dffc20)); /* ldar x0, [x1] */
  CHECK(refused(0xc85f7c20)); /* ldxr x0, [x1] */
  CHECK(refused(0xf8200041)); /* ldadd x0, x1, [x2] */
  r.x[0] = AT(0);
  CHECK(refused(0xf8408c00)); /* ldr x0, [x0, #8]!: writeback onto the loaded register */
  CHECK(refused(0xa9400441)); /* ldp x1, x1, [x2]: unpredictable */
  CHECK(refused(0x58000040)); /* ldr x0, <literal> */
  CHECK(refused(0xd503201f)); /* nop */
  /* Outside [lo, hi): a load straddling the end, a store before the start. */
  r.x[1] = AT(4092);
  CHECK(refused(0xf9400020)); /* ldr x0, [x1] */
  r.x[18] = AT(4);
  CHECK(refused(0xf85f8251)); /* ldur x17, [x18, #-8] */
}

int main(void) {
  general_loads();
  general_stores();
  indexed();
  pairs();
  simd();
  left_alone();
  return TEST_SUMMARY("test_emulate_a64");
}
