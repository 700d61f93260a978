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

static uint32_t mem32(size_t off) {
  uint32_t v;
  memcpy(&v, mem + off, sizeof v);
  return v;
}

static void ordered(void) {
  reset();
  r.x[1] = AT(64);
  CHECK(done(0xc8dffc20) && r.x[0] == mem64(64)); /* ldar x0, [x1] */
  reset();
  r.x[3] = AT(64);
  CHECK(done(0x88dffc62) && r.x[2] == mem32(64)); /* ldar w2, [x3]: upper zero */
  reset();
  r.x[5] = AT(9);
  CHECK(done(0x08dffca4) && r.x[4] == mem[9]); /* ldarb w4, [x5] */
  reset();
  r.x[7] = AT(128);
  CHECK(done(0xc89ffce6) && mem64(128) == r.x[6]); /* stlr x6, [x7] */
  reset();
  r.x[7] = AT(136);
  CHECK(done(0x889ffce6) && mem32(136) == (uint32_t)r.x[6] && mem[140] == (uint8_t)(140 * 7 + 3));
  reset();
  r.x[1] = AT(8);
  CHECK(done(0xc8df7c20) && r.x[0] == mem64(8)); /* ldlar x0, [x1] */
  reset();
  r.x[9] = AT(24);
  CHECK(done(0xf8bfc128) && r.x[8] == mem64(24)); /* ldapr x8, [x9] */
  reset();
  r.sp = AT(48);
  CHECK(done(0xc8dfffe0) && r.x[0] == mem64(48)); /* ldar x0, [sp] */
}

static void atomics(void) {
  reset();
  uint64_t before = mem64(200);
  r.x[12] = AT(200), r.x[10] = 5;
  CHECK(done(0xf82a018b) && r.x[11] == before && mem64(200) == before + 5); /* ldadd x10, x11 */
  reset();
  r.x[12] = AT(200), r.x[10] = 0x100000001ull;
  uint32_t w = mem32(200);
  CHECK(done(0xb8ea018b) && r.x[11] == w && mem32(200) == w + 1 &&
        mem32(204) == (uint32_t)(mem64(200) >> 32));
  reset();
  before = mem64(200);
  r.x[12] = AT(200), r.x[10] = 3;
  CHECK(done(0xf82a019f) && mem64(200) == before + 3); /* stadd x10, [x12]: no register */
  reset();
  before = mem64(208);
  r.x[15] = AT(208), r.x[13] = 0xff;
  CHECK(done(0xf82d11ee) && r.x[14] == before && mem64(208) == (before & ~0xffull)); /* ldclr */
  reset();
  before = mem64(208);
  r.x[15] = AT(208), r.x[13] = 0xf0f0;
  CHECK(done(0xf82d21ee) && mem64(208) == (before ^ 0xf0f0)); /* ldeor */
  reset();
  before = mem64(208);
  r.x[15] = AT(208), r.x[13] = 1ull << 63;
  CHECK(done(0xf82d31ee) && mem64(208) == (before | 1ull << 63)); /* ldset */
  reset();
  memcpy(mem + 216, "\xfe\xff\xff\xff", 4);                                         /* -2 */
  r.x[15] = AT(216), r.x[13] = 0xfffffffdull;                                       /* -3 */
  CHECK(done(0xb82d41ee) && r.x[14] == 0xfffffffeull && mem32(216) == 0xfffffffeu); /* ldsmax */
  reset();
  memcpy(mem + 216, "\xfe\xff\xff\xff", 4);
  r.x[15] = AT(216), r.x[13] = 7;
  CHECK(done(0xb82d61ee) && mem32(216) == 0xfffffffeu); /* ldumax w: unsigned, the old stays */
  reset();
  r.x[15] = AT(216), r.x[13] = 1ull << 63;             /* the most negative */
  CHECK(done(0xf82d51ee) && mem64(216) == 1ull << 63); /* ldsmin x13, x14 */
  reset();
  r.x[15] = AT(216), r.x[13] = 0;
  CHECK(done(0xf82d71ee) && mem64(216) == 0); /* ldumin */
  reset();
  before = mem64(224);
  r.x[18] = AT(224), r.x[16] = 0x1234;
  CHECK(done(0xf8308251) && r.x[17] == before && mem64(224) == 0x1234); /* swp x16, x17 */
  reset();
  before = mem64(232);
  r.x[21] = AT(232), r.x[19] = before, r.x[20] = 99;
  CHECK(done(0xc8b37eb4) && r.x[19] == before && mem64(232) == 99); /* cas x19, x20: equal */
  reset();
  before = mem64(232);
  r.x[21] = AT(232), r.x[19] = before + 1, r.x[20] = 99;
  CHECK(done(0xc8b37eb4) && r.x[19] == before && mem64(232) == before); /* cas: differs */
  reset();
  r.x[21] = AT(240), r.x[19] = mem[240], r.x[20] = 0x1ab;
  CHECK(done(0x08b37eb4) && mem[240] == 0xab && mem[241] == (uint8_t)(241 * 7 + 3)); /* casb */
  reset();
  uint8_t b = mem[250];
  r.x[12] = AT(250), r.x[10] = 1;
  CHECK(done(0x382a018b) && r.x[11] == b && mem[250] == (uint8_t)(b + 1)); /* ldaddb */
}

/* The RCpc forms with an unscaled offset (FEAT_LRCPC2), GNU as's encodings. */
static void rcpc_unscaled(void) {
  reset();
  r.x[1] = AT(0);
  CHECK(done(0xd9408020) && r.x[0] == mem64(8)); /* ldapur x0, [x1, #8] */
  reset();
  r.x[3] = AT(20), r.x[2] = ~0ull;
  CHECK(done(0x995fc062) && r.x[2] == mem32(16)); /* ldapur w2, [x3, #-4]: upper half zero */
  reset();
  r.x[5] = AT(40);
  CHECK(done(0x194010a4) && r.x[4] == mem[41]); /* ldapurb w4, [x5, #1] */
  reset();
  r.x[7] = AT(50);
  uint16_t h;
  memcpy(&h, mem + 48, 2);
  CHECK(done(0x595fe0e6) && r.x[6] == h); /* ldapurh w6, [x7, #-2] */
  reset();
  mem[63] = 0x80;
  r.x[9] = AT(60), r.x[11] = AT(60);
  CHECK(done(0x19803128) && r.x[8] == 0xffffffffffffff80ull); /* ldapursb x8 */
  CHECK(done(0x19c0316a) && r.x[10] == 0xffffff80ull);        /* ldapursb w10 */
  memcpy(mem + 64, "\xfe\xff", 2);
  r.x[13] = AT(70);
  CHECK(done(0x599fa1ac) && r.x[12] == 0xfffffffffffffffeull); /* ldapursh x12, [x13, #-6] */
  memcpy(mem + 72, "\x00\x00\x00\x80", 4);
  r.x[15] = AT(68);
  CHECK(done(0x998041ee) && r.x[14] == 0xffffffff80000000ull); /* ldapursw x14, [x15, #4] */
  reset();
  r.x[17] = AT(88), r.x[16] = 0x0123456789abcdefull;
  CHECK(done(0xd91f8230) && mem64(80) == 0x0123456789abcdefull); /* stlur x16, [x17, #-8] */
  r.x[19] = AT(84), r.x[18] = 0xaabbccdd11223344ull;
  CHECK(done(0x9900c272) && mem32(96) == 0x11223344u && mem64(80) == 0x0123456789abcdefull);
  uint8_t after = mem[256];
  r.x[21] = AT(0), r.x[20] = 0x1ee;
  CHECK(done(0x190ff2b4) && mem[255] == 0xee && mem[256] == after); /* stlurb w20, [x21, #255] */
  r.sp = AT(256 + 100), r.x[22] = 0x12345;
  CHECK(done(0x591003f6) && mem[100] == 0x45 && mem[101] == 0x23); /* stlurh w22, [sp, #-256] */
  reset();
  r.x[1] = AT(4);
  CHECK(refused(0xd9408020)); /* ldapur x0, [x1, #8]: misaligned */
  CHECK(refused(0xd9808020)); /* size 8, opc 2: unallocated */
}

/* Vector structures, GNU as's encodings: LD1-LD4 and ST1-ST4 of multiple
 * structures, element by element (LD2-LD4 de-interleave). */
static void structures(void) {
  reset();
  r.x[1] = AT(64);
  CHECK(done(0x4c407020) && !memcmp(r.v[0], mem + 64, 16)); /* ld1 {v0.16b}, [x1] */
  CHECK(done(0x4c40a820) && !memcmp(r.v[0], mem + 64, 16) &&
        !memcmp(r.v[1], mem + 80, 16)); /* ld1 {v0.4s, v1.4s}, [x1] */
  CHECK(done(0x4c408822) && !memcmp(r.v[2], mem + 64, 4) && !memcmp(r.v[3], mem + 68, 4) &&
        !memcmp(r.v[2] + 4, mem + 72, 4) && !memcmp(r.v[3] + 12, mem + 92, 4)); /* ld2 .4s */
  memset(r.v[4], 0xee, 16);
  CHECK(done(0x0c400024) && r.v[4][0] == mem[64] && r.v[5][0] == mem[65] &&
        r.v[7][7] == mem[64 + 31] && r.v[4][8] == 0 && r.v[7][15] == 0); /* ld4 .8b: upper 0 */
  CHECK(done(0x4c40a03f) && !memcmp(r.v[31], mem + 64, 16) &&
        !memcmp(r.v[0], mem + 80, 16)); /* ld1 {v31.16b, v0.16b}: wraps to v0 */
  r.sp = AT(128);
  CHECK(done(0x0c4047e8) && !memcmp(r.v[8], mem + 128, 2) && !memcmp(r.v[9], mem + 130, 2) &&
        !memcmp(r.v[10] + 6, mem + 128 + 22, 2)); /* ld3 {v8.4h-v10.4h}, [sp] */
  reset();
  memset(r.v[2], 0x22, 16), memset(r.v[3], 0x33, 16);
  r.x[1] = AT(256);
  CHECK(done(0x4c9fac22) && mem[256] == 0x22 && mem[271] == 0x22 && mem[272] == 0x33 &&
        r.x[1] == AT(288)); /* st1 {v2.2d, v3.2d}, [x1], #32 */
  for (int i = 0; i < 16; i++)
    r.v[4][i] = (uint8_t)i, r.v[5][i] = (uint8_t)(0x80 + i);
  r.x[1] = AT(300), r.x[2] = 5;
  CHECK(done(0x4c828424) && mem[300] == 0 && mem[301] == 1 && mem[302] == 0x80 &&
        mem[303] == 0x81 && mem[304] == 2 && mem[331] == 0x8f &&
        r.x[1] == AT(305)); /* st2 {v4.8h, v5.8h}, [x1], x2: interleaved */
  r.x[5] = AT(400);
  CHECK(done(0x0c9f6ca1) && !memcmp(mem + 400, r.v[1], 8) && !memcmp(mem + 408, r.v[2], 8) &&
        !memcmp(mem + 416, r.v[3], 8) && r.x[5] == AT(424)); /* st1 {v1.1d-v3.1d}, #24 */
  reset();
  r.x[1] = AT(4096 - 16);
  CHECK(refused(0x4c40a820)); /* ld1 of 32 bytes straddling the end */
  r.x[1] = AT(0);
  CHECK(refused(0x0c408c20)); /* ld2 {v0.1d, v1.1d}: reserved */
  r.v_loadable = false;
  CHECK(refused(0x4c407020)); /* a load while SVE state is live */
  r.v_present = false;
  CHECK(refused(0x4c9fac22)); /* a store of registers the frame does not hold */
}

/* The pair compare-and-swaps (CASP, FEAT_LSE), GNU as's encodings: the first
 * register of each pair is the lower-addressed word. */
static void pair_cas(void) {
  reset();
  uint64_t lo = mem64(256), hi = mem64(264);
  r.x[4] = AT(256), r.x[0] = lo, r.x[1] = hi, r.x[2] = 0x1234, r.x[3] = 0x5678;
  CHECK(done(0x48207c82) && r.x[0] == lo && r.x[1] == hi && mem64(256) == 0x1234 &&
        mem64(264) == 0x5678); /* casp x0, x1, x2, x3, [x4]: equal */
  reset();
  lo = mem64(256), hi = mem64(264);
  r.x[4] = AT(256), r.x[0] = lo, r.x[1] = hi + 1;
  CHECK(done(0x48207c82) && r.x[0] == lo && r.x[1] == hi && mem64(256) == lo &&
        mem64(264) == hi); /* casp: the high word differs, nothing stored */
  reset();
  uint32_t w0 = mem32(272), w1 = mem32(276);
  r.x[4] = AT(272), r.x[0] = w0 | 0xffffffff00000000ull, r.x[1] = w1, r.x[2] = 0xaabbccdd,
  r.x[3] = 0x11223344;
  CHECK(done(0x08207c82) && r.x[0] == w0 && r.x[1] == w1 && mem32(272) == 0xaabbccddu &&
        mem32(276) == 0x11223344u); /* casp w0, w1, w2, w3, [x4]: compares W, zero-extends */
  reset();
  lo = mem64(288), hi = mem64(296);
  r.sp = AT(288), r.x[6] = lo, r.x[7] = hi, r.x[8] = 1, r.x[9] = 2;
  CHECK(done(0x4866ffe8) && mem64(288) == 1 && mem64(296) == 2); /* caspal x6, x7, x8, x9, [sp] */
  reset();
  w0 = mem32(304);
  r.x[14] = AT(304), r.x[10] = w0 + 1, r.x[11] = mem32(308);
  CHECK(done(0x086a7dcc) && r.x[10] == w0 && mem32(304) == w0); /* caspa w10..: differs */
  reset();
  memset(mem + 320, 0, 16);
  r.x[4] = AT(320), r.x[30] = 0, r.x[2] = 7, r.x[3] = 8;
  CHECK(done(0x483efc82) && r.x[30] == 0 && mem64(320) == 7 && mem64(328) == 8); /* x30, xzr */
  reset();
  r.x[4] = AT(264);
  CHECK(refused(0x48207c82)); /* casp x0..: 8-byte aligned, not 16 */
  r.x[4] = AT(4096 - 8);
  CHECK(refused(0x48207c82)); /* straddles the end */
  r.x[4] = AT(256);
  CHECK(refused(0x48217c82)); /* Rs odd: unallocated */
}

/* One structure, GNU as's encodings: a lane of each register loaded (the
 * rest of the register kept, all 128 bits) or stored, and LD1R-LD4R. */
static void lanes(void) {
  uint8_t before[16];
  reset();
  memset(r.v[0], 0xaa, 16);
  r.x[1] = AT(64);
  CHECK(done(0x0d401420) && r.v[0][5] == mem[64] && r.v[0][4] == 0xaa && r.v[0][6] == 0xaa &&
        r.v[0][15] == 0xaa && r.x[1] == AT(64)); /* ld1 {v0.b}[5], [x1]: upper half kept */
  CHECK(done(0x4d409023) && !memcmp(r.v[3] + 12, mem + 64, 4) &&
        r.v_written & (1u << 3)); /* ld1 {v3.s}[3], [x1] */
  memcpy(before, r.v[4], 16);
  CHECK(done(0x4ddf8424) && !memcmp(r.v[4] + 8, mem + 64, 8) && !memcmp(r.v[4], before, 8) &&
        r.x[1] == AT(72)); /* ld1 {v4.d}[1], [x1], #8 */
  r.x[1] = AT(64);
  CHECK(done(0x0d605026) && !memcmp(r.v[6] + 4, mem + 64, 2) &&
        !memcmp(r.v[7] + 4, mem + 66, 2)); /* ld2 {v6.h, v7.h}[2], [x1] */
  r.x[2] = 100;
  CHECK(done(0x0dc2b028) && !memcmp(r.v[8] + 4, mem + 64, 4) && !memcmp(r.v[10] + 4, mem + 72, 4) &&
        r.x[1] == AT(164)); /* ld3 {v8.s-v10.s}[1], [x1], x2 */
  r.x[1] = AT(64);
  CHECK(done(0x4d603c3e) && r.v[30][15] == mem[64] && r.v[31][15] == mem[65] &&
        r.v[0][15] == mem[66] && r.v[1][15] == mem[67]); /* ld4 {v30.b-v1.b}[15]: wraps */
  CHECK(done(0x4d40c82c) && !memcmp(r.v[12], mem + 64, 4) && !memcmp(r.v[12] + 12, mem + 64, 4));
  /* ld1r {v12.4s} above; ld2r {v14.8b, v15.8b}, [x1], #2: the upper halves cleared */
  memset(r.v[14], 0xee, 16);
  CHECK(done(0x0dffc02e) && r.v[14][0] == mem[64] && r.v[14][7] == mem[64] && r.v[14][8] == 0 &&
        r.v[15][7] == mem[65] && r.v[15][15] == 0 && r.x[1] == AT(66));
  r.sp = AT(128);
  CHECK(done(0x4d60eff0) && !memcmp(r.v[16] + 8, mem + 128, 8) &&
        !memcmp(r.v[19], mem + 152, 8)); /* ld4r {v16.2d-v19.2d}, [sp] */
  reset();
  for (int i = 0; i < 16; i++)
    r.v[2][i] = (uint8_t)(0x40 + i), r.v[4][i] = (uint8_t)(0x60 + i), r.v[5][i] = (uint8_t)i;
  r.x[1] = AT(200);
  CHECK(done(0x4d005822) && mem[200] == 0x4e && mem[201] == 0x4f &&
        mem[202] == (uint8_t)(202 * 7 + 3)); /* st1 {v2.h}[7], [x1]: two bytes alone */
  CHECK(done(0x0dbf8424) && !memcmp(mem + 200, r.v[4], 8) && !memcmp(mem + 208, r.v[5], 8) &&
        r.x[1] == AT(216)); /* st2 {v4.d, v5.d}[0], [x1], #16 */
  reset();
  r.x[1] = AT(4096 - 16);
  CHECK(refused(0x4d60ec30)); /* ld4r {v16.2d-v19.2d}, [x1]: 32 bytes straddling the end */
  r.x[1] = AT(0);
  CHECK(refused(0x4d005c22)); /* st1 of a halfword lane with size<0> set: unallocated */
  CHECK(refused(0x4d00c82c)); /* a replicating store: unallocated */
  r.v_loadable = false;
  CHECK(refused(0x0d401420)); /* a lane load while SVE state is live */
  r.v_present = false;
  CHECK(refused(0x4d005822)); /* a lane store of registers the frame does not hold */
}

static void left_alone(void) {
  reset();
  r.x[1] = r.x[2] = AT(0);
  CHECK(refused(0xc85f7c20)); /* ldxr x0, [x1] */
  CHECK(refused(0xc8027c20)); /* stxr w2, x0, [x1] */
  r.x[1] = AT(4);             /* misaligned: the processor would not run it */
  CHECK(refused(0xc8dffc20)); /* ldar x0, [x1] */
  r.x[12] = AT(2);
  CHECK(refused(0xf82a018b)); /* ldadd x10, x11, [x12] */
  r.x[1] = AT(4096 - 8) + 8;
  CHECK(refused(0xc8dffc20)); /* outside [lo, hi) */
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
  ordered();
  atomics();
  rcpc_unscaled();
  pair_cas();
  structures();
  lanes();
  left_alone();
  return TEST_SUMMARY("test_emulate_a64");
}
