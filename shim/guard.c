/* guard.c - the page guard (in progress): page protection of the managed
 * memory the CPU may not touch now. */
#include "shim.h"

void ac_guard_refresh_locked(void) {}
