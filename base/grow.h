/* grow.h - the one way the project grows an array by one element.
 *
 * AC_GROW(Array, Count, Cap, First) makes room for element number Count of
 * Array, whose allocated length is Cap: when Count == Cap the array is
 * reallocated to twice Cap (First when empty) and Cap updated. It is an
 * expression: false when memory ran out, and then Array and Cap are as they
 * were. Any integer type will do for Count and Cap.
 */
#ifndef AC_GROW_H
#define AC_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* The array with room for n + 1 elements of elem bytes, or NULL (array kept). */
void *ac_grow_array(void *array, size_t *cap, size_t n, size_t elem, size_t first);

#define AC_GROW(Array, Count, Cap, First)                                                          \
  ((size_t)(Count) < (size_t)(Cap) || /* room already: no call (lists filled in hot loops) */      \
   ({                                                                                              \
     size_t ac_grow_cap_ = (size_t)(Cap);                                                          \
     void *ac_grown_ =                                                                             \
         ac_grow_array((Array), &ac_grow_cap_, (size_t)(Count), sizeof *(Array), (First));         \
     if (ac_grown_) (Array) = ac_grown_, (Cap) = ac_grow_cap_;                                     \
     ac_grown_ != NULL;                                                                            \
   }))

#endif
