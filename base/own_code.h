/* own_code.h - where the code of attachcheck's private libraries lies.
 *
 * The shim loads libraries of its own into the program (libunwind for
 * stacks, libdw and libelf for source lines) with dlopen(RTLD_LOCAL); their
 * calls to the C library still bind to the shim's exported interceptors,
 * which tell those calls - the shim's own business - from the program's by
 * the caller's address (a return address inside one of these). Each library
 * is added once, when it is loaded; the check is a few comparisons, lock-free.
 */
#ifndef AC_OWN_CODE_H
#define AC_OWN_CODE_H

#include <stdbool.h>
#include <stdint.h>

/* The address range [*lo, *hi) of every segment of the loaded object that
 * holds code (any address in it); false when there is none. */
bool ac_code_range_of(const void *code, uintptr_t *lo, uintptr_t *hi);
/* Adds the loaded object that holds code (any address in it). */
void ac_own_code_add(const void *code);
/* Whether pc lies in one of the objects added. */
bool ac_own_code_contains(uintptr_t pc);
/* In an exported wrapper: whether its caller is one of those libraries. */
#define AC_FROM_OWN_LIBRARY() ac_own_code_contains((uintptr_t)__builtin_return_address(0))

#endif
