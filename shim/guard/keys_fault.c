/* keys_fault.c - the protection keys at a transition and at a fault: the
 * verdicts each transition publishes (which slot is forbidden now) and the
 * slots some running thread disagrees with; the pages a judged fault lets
 * go; a fault or a system call's buffer on keyed pages, let through by
 * catching the thread up with the verdicts in its signal frame or its PKRU.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "classes.h"
#include "guard_internal.h"
#include "keys_internal.h"
#include "pkeys.h"
#include "shim.h"

static void disable_busy_stream(const struct ac_stream *s, void *disabled) {
  int slot = keys_slot_of_class(s);
  if (slot >= 0) *(uint32_t *)disabled |= 1u << slot;
}

/* The slots whose class is forbidden now. strict: globally attached memory
 * is forbidden while anything is busy. The lift key is disabled always: only
 * a grant enables it. */
static uint32_t verdicts(bool any_busy, bool strict) {
  uint32_t disabled = ac_keys.lift_key >= 0 ? 1u << LIFT_SLOT : 0;
  if (any_busy && !ac_keys.standing_aside) {
    int global = keys_slot_of_class(&ac_guard_global_class);
    if (strict && global >= 0) disabled |= 1u << global;
    ac_guard_classes_for_each_busy_stream(disable_busy_stream, &disabled);
  }
  return disabled;
}

/* The slots with pages tagged now. */
static uint32_t keyed_slots(void) {
  uint32_t slots = 0;
  for (int s = 0; !ac_keys.standing_aside && s < ac_keys.key_count; s++)
    if (ac_keys.tagged[s].n) slots |= 1u << s;
  return slots;
}

void ac_guard_keys_agree(bool any_busy, bool strict, struct range_list *give_up) {
  AC_ASSERT_MODEL_HELD();
  give_up->n = 0;
  if (!ac_guard_keys_active()) return;
  /* Published first: a thread that starts running again from now on reads
   * these verdicts, and one that ran before is in the scan below. */
  uint32_t disabled = verdicts(any_busy, strict);
  if (__atomic_exchange_n(&ac_keys.disabled_now, disabled, __ATOMIC_SEQ_CST) != disabled)
    __atomic_add_fetch(&ac_keys.verdicts_epoch, 1, __ATOMIC_SEQ_CST);
  uint32_t differ = ac_guard_threads_disagreeing(disabled, keyed_slots());
  if (!differ) return;
  static struct range_list joined;
  for (int s = 0; s < ac_keys.key_count; s++)
    if (differ & (1u << s)) {
      range_union(&joined, give_up, &ac_keys.tagged[s]);
      range_swap(give_up, &joined);
    }
  ac_guard.stats.disagreements++;
}

void ac_guard_keys_transition(void) {
  AC_ASSERT_MODEL_HELD();
  ac_guard_threads_catch_up(); /* the calling thread writes its own PKRU */
}

/* A page lifted by a fault gets its key back (lock held, normal context). */
void ac_guard_keys_restore_lifted(void) {
  static struct range_list touched;
  AC_ASSERT_MODEL_HELD();
  if (!ac_keys.key_lifted_count) return;
  touched.n = 0;
  uintptr_t size = (uintptr_t)ac_guard.page_size;
  for (size_t i = 0; i < ac_keys.key_lifted_count; i++) {
    const struct lifted_page *l = &ac_keys.key_lifted[i];
    ac_guard_tag_pages(l->page, l->page + size, ac_keys.keys[l->slot]);
    range_push(&touched, l->page, l->page + size);
  }
  keys_set_lifted_count(0);
  keys_forget_protection_of(&touched);
  ac_guard_keys_lifts_ended();
}

/* In the handler: the page at addr, of slot, let go alone - to the lift key,
 * or key 0 without one; false when the table is full or the kernel refused. */
static bool lift_keyed_page(int slot, uintptr_t addr) {
  uintptr_t page = ac_guard_page_floor(addr);
  size_t n = ac_keys.key_lifted_count;
  int key = ac_keys.lift_key >= 0 ? ac_keys.lift_key : 0;
  if (n == KEY_LIFTED_MAX ||
      ac_guard_tag_pages(page, page + (uintptr_t)ac_guard.page_size, key) != 0)
    return false;
  ac_keys.key_lifted[n] = (struct lifted_page){page, slot};
  keys_set_lifted_count(n + 1);
  return true;
}

bool ac_guard_keys_lifted_for_threads(void) {
  return ac_guard_keys_active() && ac_keys.lift_key >= 0;
}

/* The calling thread holds the lift key: every page lifted in this busy
 * period is open to it, its first access already judged. */
bool ac_guard_keys_lifted_here(void) {
  return ac_guard_keys_lifted_for_threads() && !(ac_pkru_read() & ac_keys.lift_bits);
}

/* The lift key for the calling thread in its signal frame (lock held): for
 * the one access when it was judged allowed on a page shared between
 * classes (closed with mprotect, not keyed) - the thread's next access there
 * may be to the forbidden part, and must be judged (step.c) - else until it
 * next catches up. A page of one class it was allowed on is all allowed to
 * it, so it keeps the key there. */
static void grant_lift_in_frame(uintptr_t page, void *ucontext) {
  uint32_t lift = 1u << LIFT_SLOT;
  bool held = ac_guard_threads_granted() & lift;
  ac_guard_threads_in_frame(ucontext, lift);
  if (!held && range_contains(&ac_guard.protected_now, page))
    ac_guard_step_arm_lift(page, ucontext);
}

void ac_guard_keys_end_lift_step(void *ucontext) {
  ac_guard_threads_revoke_in_frame(ucontext, 1u << LIFT_SLOT);
}

bool ac_guard_keys_lift_for_thread(uintptr_t page, void *ucontext) {
  uintptr_t end = page + (uintptr_t)ac_guard.page_size;
  /* A page with a key of the program's own takes no key of the guard's (it
   * was closed with PROT_NONE): only opening it lets the access through. */
  if (!ac_guard_keys_lifted_for_threads() || (ucontext && !ac_pkeys_frame_pkru(ucontext)) ||
      ac_guard_program_keyed_in(page, end) || ac_guard_tag_pages(page, end, ac_keys.lift_key) != 0)
    return false;
  if (ucontext)
    grant_lift_in_frame(page, ucontext);
  else
    ac_guard_threads_grant(1u << LIFT_SLOT);
  return true;
}

void ac_guard_keys_lifts_ended(void) {
  if (ac_keys.lift_key >= 0) __atomic_add_fetch(&ac_keys.verdicts_epoch, 1, __ATOMIC_SEQ_CST);
}

/* A fault of a thread interrupted inside the shim (lock held, model maybe
 * half-changed): let through unjudged, in the frame only. */
bool ac_guard_keys_let_through(int slot, void *ucontext) {
  if (!ac_pkeys_frame_pkru(ucontext)) return false;
  ac_guard_threads_in_frame(ucontext, 1u << slot);
  return true;
}

/* The slot of hardware key pkey (LIFT_SLOT for the lift key), or -1 when it
 * is not ours. */
int ac_guard_keys_slot_of(int pkey) {
  for (int s = 0; s < ac_keys.key_count; s++)
    if (ac_keys.keys[s] == pkey) return s;
  return pkey >= 0 && pkey == ac_keys.lift_key ? LIFT_SLOT : -1;
}

bool ac_guard_keys_slot_forbidden(int slot) {
  return (__atomic_load_n(&ac_keys.disabled_now, __ATOMIC_SEQ_CST) >> slot) & 1;
}

/* The calling thread gets slot enabled: in the PKRU of its signal frame
 * (ucontext) or, without one, in its PKRU. allowed: the model lets it touch
 * that memory now, so it keeps the key at its later steps. A forbidden
 * access in a fault lets go of its page alone (lift_keyed_page) while the
 * table has room. False when the frame has no PKRU to edit: the keys are
 * given up, the access let through. */
bool ac_guard_keys_enable(int slot, bool allowed, void *ucontext, uintptr_t addr) {
  AC_ASSERT_MODEL_HELD();
  if (ucontext && !ac_pkeys_frame_pkru(ucontext)) {
    /* No PKRU in the frame: the access cannot be let through by key. */
    __atomic_store_n(&ac_keys.keys_broken, true, __ATOMIC_RELAXED);
    uintptr_t page = ac_guard_page_floor(addr);
    ac_guard_tag_pages(page, page + (uintptr_t)ac_guard.page_size, 0);
    return false;
  }
  /* Allowed: the thread's PKRU was behind the model, and catches up. A
   * forbidden access in a fault lets go of its page alone (every other page
   * of the class still faults and is judged) while the table has room, else
   * the thread is granted the key until it next catches up. A lifted page
   * is this thread's from now on, and the other pages lifted in this busy
   * period too: each thread's first access to them is judged once. A buffer
   * (no frame) may lie on lifted pages as well: the lift key comes with it. */
  uint32_t lift = ac_keys.lift_key >= 0 ? 1u << LIFT_SLOT : 0, grant = 0;
  if (slot == LIFT_SLOT)
    grant = lift;
  else if (!allowed && !(ucontext && lift_keyed_page(slot, addr)))
    grant = 1u << slot | lift;
  else if (!allowed)
    grant = lift;
  if (ucontext && grant == lift && lift)
    grant_lift_in_frame(ac_guard_page_floor(addr), ucontext);
  else if (ucontext)
    ac_guard_threads_in_frame(ucontext, grant);
  else
    ac_guard_threads_grant(grant);
  return true;
}

static bool key_lifted(uintptr_t page) {
  for (size_t i = 0; i < ac_keys.key_lifted_count; i++)
    if (ac_keys.key_lifted[i].page == page) return true;
  return false;
}

/* The first page of [at, end) in tagged range r that was not lifted, or end.
 * A lifted page carries the lift key now, not its class's: the lift key
 * decides whether this thread may touch it (lifted_in), and a thread it was
 * lifted for must not have its access judged a second time. */
static uintptr_t first_unlifted(uintptr_t at, uintptr_t end, uintptr_t r_end) {
  if (r_end < end) end = r_end;
  while (at < end && key_lifted(at))
    at += (uintptr_t)ac_guard.page_size; /* at most key_lifted_count steps */
  return at;
}

/* The first page of [start, end) in l not lifted, or end. */
static uintptr_t first_in(const struct range_list *l, uintptr_t start, uintptr_t end) {
  for (size_t i = range_first_ending_after(l, start); i < l->n && l->r[i].start < end; i++) {
    uintptr_t at = first_unlifted(
        l->r[i].start > start ? l->r[i].start : ac_guard_page_floor(start), end, l->r[i].end);
    if (at < end && at < l->r[i].end) return at;
  }
  return end;
}

/* The same, exactly, from the tagged and parked lists themselves (lock
 * held). */
static int disabled_in_tagged(uint32_t pkru, uintptr_t start, uintptr_t end, uintptr_t *page) {
  int found = -1;
  for (int s = 0; s < ac_keys.key_count; s++) {
    if (!(pkru & ac_pkru_disable_bits(ac_keys.keys[s]))) continue;
    for (int parked = 0; parked < 2; parked++) {
      uintptr_t at = first_in(parked ? &ac_keys.parked[s] : &ac_keys.tagged[s], start, end);
      if (at < end && (found < 0 || at < *page)) found = s, *page = at;
    }
  }
  return found;
}

/* The first lifted page of [start, end), as LIFT_SLOT; -1 if none (lock). */
static int lifted_in(uintptr_t start, uintptr_t end, uintptr_t *page) {
  int found = -1;
  uintptr_t first = ac_guard_page_floor(start);
  for (size_t i = 0; i < ac_keys.key_lifted_count; i++) {
    uintptr_t p = ac_keys.key_lifted[i].page;
    if (p >= first && p < end && (found < 0 || p < *page)) found = LIFT_SLOT, *page = p;
  }
  return found;
}

static bool slot_disabled_in(int slot, void *pkru) {
  return *(uint32_t *)pkru & ac_pkru_disable_bits(ac_keys.keys[slot]);
}

/* The first keyed page of [start, end) whose key the calling thread has
 * disabled, and its slot; -1 if none. Without the lock it reads the
 * published copy, and when more ranges were tagged than published *maybe
 * says the caller must ask again under the lock, which reads the lists. */
int ac_guard_keys_disabled_in(uintptr_t start, uintptr_t end, uintptr_t *page, bool *maybe) {
  *maybe = false;
  if (!ac_guard_keys_active()) return -1;
  uint32_t pkru = ac_pkru_read();
  if (!(pkru & (ac_keys.our_bits | ac_keys.lift_bits))) return -1; /* every key of ours enabled */
  bool lifted = (pkru & ac_keys.lift_bits) &&
                __atomic_load_n(&ac_keys.key_lifted_count, __ATOMIC_ACQUIRE) != 0;
  if (ac_model_held()) {
    int found = disabled_in_tagged(pkru, start, end, page);
    return found < 0 && lifted ? lifted_in(start, end, page) : found;
  }
  int found =
      ac_published_find(&ac_keys.published, start, end, slot_disabled_in, &pkru, page, maybe);
  if (found < 0 && lifted) *maybe = true; /* the lifted pages are read under the lock */
  return found;
}

/* ---- a fault, as the keys backend's on_fault (backend.h) ---- */

/* A fault on a page tagged with one of the guard's keys: judged as any
 * other, then the key is enabled in the PKRU the thread gets back (and kept
 * while the model allows that memory). */
static enum ac_guard_claim on_key_fault(uintptr_t a, int slot, bool is_write, uintptr_t pc,
                                        void *ucontext) {
  /* A handler inside the shim - its thread holds the model lock, or any
   * other (the report sink's, while a finding is written): judged when its
   * thread leaves the model, never here, where judging could wait for a
   * lock the interrupted code holds. */
  if (ac_locks_any_held()) {
    if (!ac_guard_keys_let_through(slot, ucontext)) return AC_GUARD_NOT_OURS;
    ac_guard_defer(a, is_write, pc, ucontext);
    return AC_GUARD_HANDLED;
  }
  int saved_errno = errno;
  ac_model_enter();
  ac_guard.stats.key_faults++;
  if (ac_guard_keys_unpark(a, a + 1)) { /* freed memory that kept its key: key 0, run again */
    ac_model_leave_as_is();
    errno = saved_errno;
    return AC_GUARD_HANDLED;
  }
  ac_guard_repair_in_handler(a, ac_guard_judge_locked(a, is_write, pc, ucontext));
  ac_guard_keys_enable(slot, !ac_guard_keys_slot_forbidden(slot), ucontext, a);
  ac_model_leave_as_is();
  errno = saved_errno;
  return AC_GUARD_HANDLED;
}

bool ac_guard_keys_on_fault(uintptr_t a, bool is_write, uintptr_t pc, int pkey, void *ucontext,
                            enum ac_guard_claim *claim) {
  if (pkey >= 0) { /* a protection-key fault: one of ours, or the program's own */
    int slot = ac_guard_keys_slot_of(pkey);
    if (slot >= 0) return *claim = on_key_fault(a, slot, is_write, pc, ucontext), true;
    /* The closing key's pages are the page tables' closed ones, judged as
     * mprotect's are (fault.c); any other key is the program's own. */
    *claim = AC_GUARD_NOT_OURS;
    return pkey != ac_guard_keys_closing();
  }
  /* While it has keys the guard protects by mprotect only pages with a key
   * of the program's own (pages.c): their faults are judged as mprotect's
   * are (fault.c); without such pages, the fault is not the guard's. */
  *claim = AC_GUARD_NOT_OURS;
  return ac_guard_keys_closing() >= 0 && !ac_guard_program_maybe_set_any(); /* no lock here */
}
