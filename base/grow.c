/* grow.c - growing arrays (grow.h). */
#include "grow.h"

#include <stdlib.h>

void *ac_grow_array(void *array, size_t *cap, size_t n, size_t elem, size_t first) {
  if (n < *cap) return array;
  size_t want = *cap ? *cap * 2 : first;
  void *grown = realloc(array, want * elem);
  if (grown) *cap = want;
  return grown;
}
