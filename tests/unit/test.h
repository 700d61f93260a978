/* test.h - the unit tests' few macros: CHECK counts, the summary line is the
 * one ctest and CI read ("N passed, N failed"). */
#ifndef AC_TEST_H
#define AC_TEST_H

#include <stdio.h>

static int test_passed, test_failed;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (cond) {                                                                                    \
      test_passed++;                                                                               \
    } else {                                                                                       \
      test_failed++;                                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define TEST_SUMMARY(name)                                                                         \
  (printf("%s: %d passed, %d failed\n", name, test_passed, test_failed), test_failed != 0)

#endif
