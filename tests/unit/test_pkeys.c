/* test_pkeys.c - the pure parts of the protection-key guard (shim/guard/pkeys.c):
 * PKRU arithmetic, finding the PKRU in a signal frame's XSAVE area (built
 * here byte by byte as Linux lays it out), and which class gets which key.
 * They run on any processor; the keys themselves are tested on the GPU
 * machine, whose CPU has them. */
#include <stdint.h>
#include <string.h>

#include "../../shim/guard/pkeys.h"
#include "test.h"

#define PKRU_OFFSET 2688
static unsigned char area[4096];

/* A frame's FP state: the software bytes at 464, the XSAVE header at 512. */
static void frame(uint32_t magic, uint64_t xfeatures, uint32_t size, uint64_t present) {
  memset(area, 0xaa, sizeof area);
  memcpy(area + 464, &magic, 4);
  memcpy(area + 472, &xfeatures, 8);
  memcpy(area + 480, &size, 4);
  memcpy(area + 512, &present, 8);
}

static void test_pkru_bits(void) {
  int keys[] = {1, 5, 9};
  CHECK(ac_pkru_disable_bits(1) == 0xc);
  CHECK(ac_pkru_bits_of(0, keys, 3) == 0);
  CHECK(ac_pkru_bits_of(1u << 1, keys, 3) == (3u << 10));
  CHECK(ac_pkru_bits_of(7, keys, 3) == (0xcu | 3u << 10 | 3u << 18));
  /* The program's own key 2 and key 0 keep their bits; ours follow `wanted`. */
  uint32_t ours = ac_pkru_bits_of(7, keys, 3), program = 3u << 4;
  CHECK(ac_pkru_merge(program | ours, ours, 0) == program);
  CHECK(ac_pkru_merge(program, ours, 0xc) == (program | 0xc));
  CHECK(ac_pkru_merge(0xffffffffu, ours, 0) == (0xffffffffu & ~ours));
}

/* Which accesses a PKRU forbids on pages of a key: a key fault whose report
 * names a key the faulting PKRU allowed was raised by the page's earlier key
 * (the guard retries it; fault.c). */
static void test_pkru_forbids(void) {
  uint32_t ours_off = ac_pkru_disable_bits(1); /* key 1 access-disabled, 0 and 2 not */
  CHECK(ac_pkru_forbids(ours_off, 1, false));
  CHECK(ac_pkru_forbids(ours_off, 1, true));
  CHECK(!ac_pkru_forbids(ours_off, 0, false)); /* a lift retagged the page to key 0 */
  CHECK(!ac_pkru_forbids(ours_off, 0, true));
  CHECK(!ac_pkru_forbids(ours_off, 2, true));
  uint32_t write_off = 2u << (2 * 3); /* key 3 write-disabled only */
  CHECK(!ac_pkru_forbids(write_off, 3, false));
  CHECK(ac_pkru_forbids(write_off, 3, true));
  CHECK(ac_pkru_forbids(0x55555554u, 15, false)); /* the kernel's default: all but key 0 */
  CHECK(!ac_pkru_forbids(0x55555554u, 0, true));
  CHECK(ac_pkru_forbids(0, 16, false)); /* a report no hardware makes: never taken as stale */
  CHECK(ac_pkru_forbids(0, -1, false));
}

static void test_frame_pkru(void) {
  uint64_t pkru_feature = 1ull << 9, x87_sse = 3;
  frame(0x46505853u, x87_sse | pkru_feature, 2696, pkru_feature);
  uint32_t value = 0x55555554u;
  memcpy(area + PKRU_OFFSET, &value, 4);
  uint32_t *p = ac_pkeys_frame_pkru_at(area, PKRU_OFFSET);
  CHECK(p == (uint32_t *)(void *)(area + PKRU_OFFSET));
  CHECK(p && *p == 0x55555554u);
  /* In its initial state (header bit clear) PKRU reads as 0, and editing it
   * marks it present so sigreturn loads it. */
  frame(0x46505853u, x87_sse | pkru_feature, 2696, x87_sse);
  p = ac_pkeys_frame_pkru_at(area, PKRU_OFFSET);
  uint64_t present;
  memcpy(&present, area + 512, 8);
  CHECK(p && *p == 0 && (present & pkru_feature) && (present & x87_sse));
  /* No extended state, PKRU not saved, or a frame too short: nothing. */
  frame(0, x87_sse | pkru_feature, 2696, pkru_feature);
  CHECK(ac_pkeys_frame_pkru_at(area, PKRU_OFFSET) == NULL);
  frame(0x46505853u, x87_sse, 2696, x87_sse);
  CHECK(ac_pkeys_frame_pkru_at(area, PKRU_OFFSET) == NULL);
  frame(0x46505853u, x87_sse | pkru_feature, 2688, pkru_feature);
  CHECK(ac_pkeys_frame_pkru_at(area, PKRU_OFFSET) == NULL);
  CHECK(ac_pkeys_frame_pkru_at(NULL, PKRU_OFFSET) == NULL);
  CHECK(ac_pkeys_frame_pkru_at(area, 0) == NULL);
}

static void test_assign(void) {
  int a, b, c, d;
  /* Free keys go to the largest classes; a class without pages gets none. */
  struct ac_key_class k[] = {{&a, 3, -1}, {&b, 10, -1}, {&c, 0, -1}, {&d, 5, -1}};
  ac_pkeys_assign(k, 4, 2);
  CHECK(k[1].slot == 0 && k[3].slot == 1 && k[0].slot == -1 && k[2].slot == -1);
  /* A class keeps its key (no retagging), even when a larger one appears. */
  struct ac_key_class again[] = {{&a, 50, -1}, {&b, 10, 0}, {&d, 5, 1}};
  ac_pkeys_assign(again, 3, 2);
  CHECK(again[1].slot == 0 && again[2].slot == 1 && again[0].slot == -1);
  /* A class that lost its pages frees its key for the next largest. */
  struct ac_key_class freed[] = {{&a, 50, -1}, {&b, 0, 0}, {&d, 5, 1}};
  ac_pkeys_assign(freed, 3, 2);
  CHECK(freed[0].slot == 0 && freed[1].slot == -1 && freed[2].slot == 1);
  /* A slot claimed twice, or beyond the keys there are, is taken back. */
  struct ac_key_class twice[] = {{&a, 4, 0}, {&b, 4, 0}, {&c, 4, 7}};
  ac_pkeys_assign(twice, 3, 2);
  CHECK(twice[0].slot == 0 && twice[1].slot == 1 && twice[2].slot == -1);
  /* No keys at all: every class is left to mprotect. */
  struct ac_key_class none[] = {{&a, 4, -1}};
  ac_pkeys_assign(none, 1, 0);
  CHECK(none[0].slot == -1);
}

int main(void) {
  test_pkru_bits();
  test_pkru_forbids();
  test_frame_pkru();
  test_assign();
  return TEST_SUMMARY("test_pkeys");
}
