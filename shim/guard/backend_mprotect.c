/* backend_mprotect.c - the page tables' backend (backend.h): mprotect closes
 * and opens pages for every thread at once, in refresh.c's pipeline, so
 * there is nothing more to follow, restore or catch up with. A fault that
 * names a protection key is never the guard's here: the program's own. */
#include "backend.h"
#include "guard_internal.h"

static void nothing_to_follow(bool any_busy) {
  (void)any_busy;
}

static void nothing(void) {}

static bool pages_closed(const struct range_list *mprotected, uintptr_t start, uintptr_t end) {
  return ac_guard_pages_covered(mprotected, start, end);
}

static void none_shut(struct range_list *out) {
  out->n = 0;
}

static void nothing_to_forget(uintptr_t start, uintptr_t end) {
  (void)start, (void)end;
}

static bool key_faults_are_the_programs(uintptr_t a, bool is_write, uintptr_t pc, int pkey,
                                        void *ucontext, enum ac_guard_claim *claim) {
  (void)a, (void)is_write, (void)pc, (void)ucontext;
  *claim = AC_GUARD_NOT_OURS;
  return pkey >= 0;
}

const struct ac_guard_backend ac_guard_mprotect_backend = {
    .name = "mprotect",
    .follow = nothing_to_follow,
    .restore_lifted = nothing,
    .transition = nothing,
    .pages_shut = pages_closed,
    .shut_pages = none_shut,
    .forget = nothing_to_forget,
    .on_fault = key_faults_are_the_programs,
    .after_fork_child = nothing,
    .print_stats = nothing,
};
