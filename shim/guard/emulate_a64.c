/* emulate_a64.c - one aarch64 load or store carried out on a register file
 * (emulate_a64.h). Decoded from the Arm Architecture Reference Manual's
 * "Loads and Stores" encodings; the forms a compiler emits for ordinary and
 * atomic memory accesses are done (the vector structures in
 * emulate_a64_vector.c), anything else is left to the caller, which then
 * lets the page go as before. */
#include "emulate_a64.h"
#include "emulate_a64_internal.h"

#include <string.h>

/* A decoded access: size bytes (twice for a pair) at base + offset. */
struct access {
  unsigned rt, rt2, rn;
  unsigned size; /* bytes one register transfers: 1, 2, 4, 8 or 16 */
  bool load, pair, simd;
  bool sign;      /* a sign-extending load */
  bool to32;      /* ... into a W register */
  bool writeback; /* pre- or post-index: rn becomes base + offset */
  bool post;      /* post-index: the access is at base */
  int64_t offset;
  bool reg_offset; /* the offset is register rm, extended and shifted */
  unsigned rm, option, shift;
};

static int64_t sign_extend(uint64_t v, unsigned bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = 1ull << (bits - 1);
  v &= (1ull << bits) - 1;
  return (int64_t)((v ^ m) - m);
}

/* General register n as data or offset (31: XZR). */
static uint64_t xreg(const struct ac_a64_regs *r, unsigned n) {
  return n == 31 ? 0 : r->x[n];
}

/* Size and kind of a single general-register transfer; false if
 * unallocated or a prefetch. */
static bool single_gpr(unsigned size, unsigned opc, struct access *a) {
  a->size = 1u << size;
  a->load = opc != 0;
  a->sign = opc >= 2;
  a->to32 = opc == 3;
  if (opc == 2 && size == 3) return false; /* PRFM */
  if (opc == 3 && size >= 2) return false; /* unallocated */
  return true;
}

static bool single_simd(unsigned size, unsigned opc, struct access *a) {
  if (opc & 2) {
    if (size != 0) return false;
    a->size = 16;
  } else {
    a->size = 1u << size;
  }
  a->load = opc & 1;
  return true;
}

static bool decode_single(uint32_t insn, struct access *a) {
  unsigned size = insn >> 30, opc = (insn >> 22) & 3;
  a->simd = (insn >> 26) & 1;
  a->rt = insn & 31;
  a->rn = (insn >> 5) & 31;
  if (!(a->simd ? single_simd(size, opc, a) : single_gpr(size, opc, a))) return false;
  if ((insn & 0x3B000000u) == 0x39000000u) { /* unsigned immediate, scaled */
    a->offset = (int64_t)(((insn >> 10) & 0xFFF) * a->size);
    return true;
  }
  if ((insn & 0x3B200000u) == 0x38000000u) { /* 9-bit immediate */
    unsigned idx = (insn >> 10) & 3;
    if (idx == 2) return false; /* unprivileged: left alone */
    a->offset = sign_extend(insn >> 12, 9);
    a->writeback = idx == 1 || idx == 3;
    a->post = idx == 1;
    return true;
  }
  if ((insn & 0x3B200C00u) == 0x38200800u) { /* register offset */
    a->reg_offset = true;
    a->rm = (insn >> 16) & 31;
    a->option = (insn >> 13) & 7;
    a->shift = (insn >> 12) & 1 ? (unsigned)__builtin_ctz(a->size) : 0;
    return a->option == 2 || a->option == 3 || a->option == 6 || a->option == 7;
  }
  return false;
}

static bool decode_pair(uint32_t insn, struct access *a) {
  unsigned opc = insn >> 30, idx = (insn >> 23) & 3;
  a->pair = true;
  a->simd = (insn >> 26) & 1;
  a->load = (insn >> 22) & 1;
  a->rt = insn & 31;
  a->rn = (insn >> 5) & 31;
  a->rt2 = (insn >> 10) & 31;
  if (a->simd) {
    if (opc == 3) return false;
    a->size = 4u << opc;
  } else if (opc == 0 || opc == 2) {
    a->size = opc ? 8 : 4;
  } else if (opc == 1 && a->load) { /* LDPSW */
    a->size = 4;
    a->sign = true;
  } else {
    return false; /* STGP (memory tags) or unallocated */
  }
  if (idx == 0) return false; /* non-temporal pair: left alone */
  a->offset = sign_extend(insn >> 15, 7) * (int64_t)a->size;
  a->writeback = idx == 1 || idx == 3;
  a->post = idx == 1;
  if (a->load && a->rt == a->rt2) return false; /* unpredictable */
  return true;
}

static bool decode(uint32_t insn, struct access *a) {
  memset(a, 0, sizeof *a);
  if ((insn & 0x3A000000u) == 0x28000000u) return decode_pair(insn, a);
  if ((insn & 0x3A000000u) == 0x38000000u) return decode_single(insn, a);
  return false;
}

static uint64_t offset_of(const struct access *a, const struct ac_a64_regs *r) {
  if (!a->reg_offset) return (uint64_t)a->offset;
  uint64_t m = xreg(r, a->rm);
  if (a->option == 2) m = (uint32_t)m;                   /* UXTW */
  if (a->option == 6) m = (uint64_t)(int64_t)(int32_t)m; /* SXTW */
  return m << a->shift;
}

/* One register's load from p. */
static void load_one(const struct access *a, struct ac_a64_regs *r, unsigned n, const void *p) {
  if (a->simd) {
    memset(r->v[n], 0, sizeof r->v[n]);
    memcpy(r->v[n], p, a->size);
    r->v_written |= 1u << n;
    return;
  }
  uint64_t v = 0;
  memcpy(&v, p, a->size); /* aarch64 Linux is little-endian, as is every test machine */
  if (a->sign) v = (uint64_t)sign_extend(v, a->size * 8);
  if (a->to32) v = (uint32_t)v;
  if (n != 31) r->x[n] = v;
}

static void store_one(const struct access *a, const struct ac_a64_regs *r, unsigned n, void *p) {
  if (a->simd) {
    memcpy(p, r->v[n], a->size);
    return;
  }
  uint64_t v = xreg(r, n);
  memcpy(p, &v, a->size);
}

/* ---- ordered and atomic accesses: load-acquire, store-release, and the
 * LSE atomics. Done with the compiler's atomics on the naturally aligned
 * word, so the access stays single-copy atomic against other threads and
 * keeps its ordering (a read-modify-write as sequentially consistent, which
 * every acquire/release form of it allows); the RCpc forms with an unscaled
 * offset too (one that would not be aligned is left alone, as a misaligned
 * atomic would fault anyway on a processor without LSE2); the pair
 * compare-and-swaps too (CASP, below). Exclusives are left alone: the
 * exception return that ends the handler clears the exclusive monitor, so
 * the program's store-exclusive fails and its loop comes back anyway. ---- */

enum atomic_op {
  A_ADD,
  A_CLR,
  A_EOR,
  A_SET,
  A_SMAX,
  A_SMIN,
  A_UMAX,
  A_UMIN,
  A_SWP,
  A_CAS,
  A_LOAD,
  A_STORE
};

struct atomic_access {
  unsigned size, rs, rt, rn;
  enum atomic_op op;
  int64_t offset;  /* the RCpc unscaled forms' immediate */
  unsigned extend; /* a sign-extending load's width: 64 into X, 32 into W; 0 none */
};

/* LDAPUR{B,H,SB,SH,SW} and STLUR{B,H} (FEAT_LRCPC2): an acquire load or a
 * release store at base + a signed 9-bit offset. */
static bool decode_rcpc_unscaled(uint32_t insn, struct atomic_access *a) {
  if ((insn & 0x3F200C00u) != 0x19000000u) return false;
  unsigned opc = (insn >> 22) & 3;
  if ((opc >= 2 && a->size == 8) || (opc == 3 && a->size == 4)) return false; /* unallocated */
  a->op = opc == 0 ? A_STORE : A_LOAD;
  a->extend = opc == 2 ? 64 : opc == 3 ? 32 : 0;
  a->offset = sign_extend((insn >> 12) & 0x1FF, 9);
  return true;
}

static bool decode_atomic(uint32_t insn, struct atomic_access *a) {
  a->size = 1u << (insn >> 30);
  a->rs = (insn >> 16) & 31;
  a->rn = (insn >> 5) & 31;
  a->rt = insn & 31;
  a->offset = 0, a->extend = 0;
  if (decode_rcpc_unscaled(insn, a)) return true;
  uint32_t fixed = insn & 0x3FFFFC00u;
  if (fixed == 0x08DFFC00u || fixed == 0x08DF7C00u || fixed == 0x38BFC000u)
    a->op = A_LOAD; /* LDAR, LDLAR, LDAPR */
  else if (fixed == 0x089FFC00u || fixed == 0x089F7C00u)
    a->op = A_STORE; /* STLR, STLLR */
  else if ((insn & 0x3FA07C00u) == 0x08A07C00u)
    a->op = A_CAS; /* CAS{A}{L}{B,H} */
  else if ((insn & 0x3F208C00u) == 0x38200000u)
    a->op = (enum atomic_op)((insn >> 12) & 7); /* LD<op>{A}{L}{B,H} */
  else if ((insn & 0x3F20FC00u) == 0x38208000u)
    a->op = A_SWP; /* SWP{A}{L}{B,H} */
  else
    return false;
  return true;
}

/* What a min/max stores, given the old value and the operand, bits wide. */
static uint64_t min_max(enum atomic_op op, uint64_t old, uint64_t v, unsigned bits) {
  bool old_above =
      op == A_SMAX || op == A_SMIN ? sign_extend(old, bits) > sign_extend(v, bits) : old > v;
  bool keep_old = (op == A_SMAX || op == A_UMAX) == old_above;
  return keep_old ? old : v;
}

/* op on *p with operand v (CAS: v replaces expected); the old value. */
#define ATOMIC_ON(T)                                                                               \
  static uint64_t atomic_##T(enum atomic_op op, T *p, T v, T expected) {                           \
    switch (op) {                                                                                  \
    case A_LOAD:                                                                                   \
      return __atomic_load_n(p, __ATOMIC_ACQUIRE);                                                 \
    case A_STORE:                                                                                  \
      __atomic_store_n(p, v, __ATOMIC_RELEASE);                                                    \
      return 0;                                                                                    \
    case A_ADD:                                                                                    \
      return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                           \
    case A_CLR:                                                                                    \
      return __atomic_fetch_and(p, (T)~v, __ATOMIC_SEQ_CST);                                       \
    case A_EOR:                                                                                    \
      return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                                           \
    case A_SET:                                                                                    \
      return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                            \
    case A_SWP:                                                                                    \
      return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                          \
    case A_CAS:                                                                                    \
      __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
      return expected;                                                                             \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                  \
    while (!__atomic_compare_exchange_n(p, &old, (T)min_max(op, old, v, sizeof(T) * 8), true,      \
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {                     \
    }                                                                                              \
    return old;                                                                                    \
  }
ATOMIC_ON(uint8_t)
ATOMIC_ON(uint16_t)
ATOMIC_ON(uint32_t)
ATOMIC_ON(uint64_t)

static bool emulate_atomic(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi) {
  struct atomic_access a;
  if (!decode_atomic(insn, &a)) return false;
  uintptr_t at = (uintptr_t)(base_reg(r, a.rn) + (uint64_t)a.offset);
  if (at % a.size || !within(at, a.size, lo, hi)) return false; /* would not run */
  /* The operand: Rs, or for a store and a compare-and-swap's new value Rt. */
  uint64_t v = xreg(r, a.op == A_STORE || a.op == A_CAS ? a.rt : a.rs), e = xreg(r, a.rs), old = 0;
  switch (a.size) {
  case 1:
    old = atomic_uint8_t(a.op, (uint8_t *)at, (uint8_t)v, (uint8_t)e);
    break;
  case 2:
    old = atomic_uint16_t(a.op, (uint16_t *)at, (uint16_t)v, (uint16_t)e);
    break;
  case 4:
    old = atomic_uint32_t(a.op, (uint32_t *)at, (uint32_t)v, (uint32_t)e);
    break;
  default:
    old = atomic_uint64_t(a.op, (uint64_t *)at, v, e);
    break;
  }
  /* The old value goes to Rt (to Rs for a compare-and-swap), zero-extended,
   * or for LDAPURS* sign-extended to the register's width. */
  if (a.extend) old = (uint64_t)sign_extend(old, a.size * 8);
  if (a.extend == 32) old = (uint32_t)old;
  unsigned dest = a.op == A_CAS ? a.rs : a.rt;
  if (a.op != A_STORE && dest != 31) r->x[dest] = old;
  r->pc += 4;
  return true;
}

/* A compare-and-swap of 16 aligned bytes, sequentially consistent: the old
 * pair in *old0 (the lower-addressed word) and *old1. */
static void cas_pair64(uintptr_t at, uint64_t s0, uint64_t s1, uint64_t t0, uint64_t t1,
                       uint64_t *old0, uint64_t *old1) {
#if defined(__aarch64__)
  /* The program's own CASP faulted rather than trapped as undefined, so
   * this processor has LSE. */
  register uint64_t x0 __asm__("x0") = s0, x1 __asm__("x1") = s1;
  register uint64_t x2 __asm__("x2") = t0, x3 __asm__("x3") = t1;
  __asm__ volatile(".arch_extension lse\n\tcaspal x0, x1, x2, x3, [%[p]]"
                   : "+r"(x0), "+r"(x1)
                   : "r"(x2), "r"(x3), [p] "r"(at)
                   : "memory");
  *old0 = x0, *old1 = x1;
#elif defined(__x86_64__)
  /* Where the emulator's unit test runs off aarch64. */
  uint64_t lo = s0, hi = s1;
  __asm__ volatile("lock cmpxchg16b %[m]"
                   : [m] "+m"(*(volatile uint64_t(*)[2])at), "+a"(lo), "+d"(hi)
                   : "b"(t0), "c"(t1)
                   : "memory", "cc");
  *old0 = lo, *old1 = hi;
#else
#error "a compare-and-swap of 16 bytes is written for aarch64 and x86-64"
#endif
}

/* CASP{A}{L} of a W or an X register pair (FEAT_LSE): compares the 8 or 16
 * aligned bytes at [Xn|SP] with Rs, Rs+1 (the first register the
 * lower-addressed word), stores Rt, Rt+1 there when equal, and loads the old
 * pair into Rs, Rs+1 either way. */
static bool emulate_casp(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi) {
  if ((insn & 0xBFA07C00u) != 0x08207C00u) return false;
  unsigned rs = (insn >> 16) & 31, rn = (insn >> 5) & 31, rt = insn & 31;
  if (rs % 2 || rt % 2) return false; /* an odd first register is unallocated */
  bool x_pair = (insn >> 30) & 1;
  uintptr_t bytes = x_pair ? 16 : 8, at = base_reg(r, rn);
  if (at % bytes || !within(at, bytes, lo, hi)) return false; /* would not run */
  uint64_t s0 = xreg(r, rs), s1 = xreg(r, rs + 1), t0 = xreg(r, rt), t1 = xreg(r, rt + 1);
  uint64_t old0, old1;
  if (x_pair) {
    cas_pair64(at, s0, s1, t0, t1, &old0, &old1);
  } else { /* little-endian: the first register is the low word */
    uint64_t old = (uint32_t)s0 | (uint64_t)(uint32_t)s1 << 32;
    __atomic_compare_exchange_n((uint64_t *)at, &old, (uint32_t)t0 | (uint64_t)(uint32_t)t1 << 32,
                                false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    old0 = (uint32_t)old, old1 = old >> 32;
  }
  r->x[rs] = old0;
  if (rs + 1 != 31) r->x[rs + 1] = old1;
  r->pc += 4;
  return true;
}

bool ac_a64_emulate(uint32_t insn, struct ac_a64_regs *r, uintptr_t lo, uintptr_t hi) {
  struct access a;
  if (!decode(insn, &a))
    return ac_a64_emulate_structures(insn, r, lo, hi) || ac_a64_emulate_lane(insn, r, lo, hi) ||
           emulate_casp(insn, r, lo, hi) || emulate_atomic(insn, r, lo, hi);
  if (a.simd && !vregs_usable(r, a.load)) return false;
  /* Writeback onto a transferred register is unpredictable (SP aside). */
  if (a.writeback && a.rn != 31 && !a.simd && (a.rn == a.rt || (a.pair && a.rn == a.rt2)))
    return false;
  uint64_t base = base_reg(r, a.rn), next = base + offset_of(&a, r);
  uintptr_t at = (uintptr_t)(a.post ? base : next), bytes = a.size * (a.pair ? 2u : 1u);
  if (!within(at, bytes, lo, hi)) return false;
  if (a.load) {
    load_one(&a, r, a.rt, (const void *)at);
    if (a.pair) load_one(&a, r, a.rt2, (const void *)(at + a.size));
  } else {
    store_one(&a, r, a.rt, (void *)at);
    if (a.pair) store_one(&a, r, a.rt2, (void *)(at + a.size));
  }
  if (a.writeback) set_base_reg(r, a.rn, next);
  r->pc += 4;
  return true;
}
