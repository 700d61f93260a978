/* threads.c - every thread of the program, as the keys backend sees it.
 *
 * Protection keys are enabled and disabled per thread, in its PKRU register,
 * and only the thread itself can write its PKRU (or the kernel, from the
 * signal frame it returns through). So no transition ever reaches into
 * another thread: each thread writes its own PKRU - when it starts, when it
 * leaves a call that blocked it, in its fault handler, when it makes a
 * transition itself - and says here what it wrote. A transition then asks
 * which slots some running thread disagrees with (its PKRU enables the key
 * of a class the model forbids now, or disables one it allows) and those
 * slots give their pages up to the page tables (keys.c), which every thread
 * shares. Nothing is ever sent to a thread: no signal the program could see
 * (an EINTR, a foreign signal in its sigwait), no wait for an answer.
 *
 * A thread inside a call that blocks - a wait, a sleep, a synchronisation -
 * is parked: it runs none of the program's code until the call returns, and
 * it catches up then, before the program's next instruction; it disagrees
 * with nothing meanwhile. A thread the driver made for itself touches no
 * memory of the program's but in a host function, which the trampoline
 * makes a program thread's step for its duration (check_order.c).
 *
 * Records are never freed: a thread that ends gives its record back for the
 * next one. They come from pages mapped in blocks (mmap is async-signal-safe,
 * so a thread met first in its fault handler gets one too), and there is no
 * limit on how many threads there are.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard_internal.h"
#include "pkeys.h"
#include "shim.h"

enum { RUNNING, PARKED, DRIVER };

struct ac_guard_thread {
  struct ac_guard_thread *next; /* every record, a list that only grows */
  int used;                     /* atomic: a live thread's */
  int state;                    /* atomic: RUNNING, PARKED or DRIVER */
  uint32_t mask;                /* atomic: the slots its PKRU disables, as last written */
  int mask_valid;               /* atomic: 0 while it writes its PKRU */
  pid_t tid;
};

_Static_assert(sizeof(struct ac_guard_thread) == 32, "records tile a block exactly");

static struct ac_guard_thread *all;   /* atomic: the head of the list */
static struct ac_guard_thread *spare; /* atomic: the next record of the last block mapped */
static __thread struct ac_guard_thread *self;
/* Slots the calling thread was granted though forbidden (a judged buffer
 * handed to a system call, a full table of lifted pages), for as long as
 * the verdicts stay what they were when granted: its own, so thread-local. */
static __thread uint32_t granted;
static __thread unsigned granted_epoch;

/* What the calling thread is granted now. */
static uint32_t grant_now(void) {
  return granted && granted_epoch == ac_guard_keys_verdicts_epoch() ? granted : 0;
}

static void grant(uint32_t slots) {
  granted = slots;
  granted_epoch = ac_guard_keys_verdicts_epoch();
}
static pthread_key_t exit_key;
static int exit_key_made; /* atomic */

#define BLOCK_BYTES 4096 /* records are handed out within aligned blocks of this size */

/* A record from a block; async-signal-safe. A block is used up when the
 * next record would start a new one; two threads racing for a new block
 * each map one, and the loser's rest goes unused. */
static struct ac_guard_thread *fresh_record(void) {
  for (;;) {
    struct ac_guard_thread *s = __atomic_load_n(&spare, __ATOMIC_ACQUIRE);
    if (s) {
      struct ac_guard_thread *next = (uintptr_t)(s + 1) % BLOCK_BYTES ? s + 1 : NULL;
      if (__atomic_compare_exchange_n(&spare, &s, next, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s;
      continue;
    }
    void *p = mmap(NULL, BLOCK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    struct ac_guard_thread *block = p, *none = NULL;
    __atomic_compare_exchange_n(&spare, &none, block + 1, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return block;
  }
}

/* A record for a thread: one given back, else a fresh one on the list. */
static struct ac_guard_thread *take_record(void) {
  for (struct ac_guard_thread *t = __atomic_load_n(&all, __ATOMIC_ACQUIRE); t; t = t->next) {
    int free_ = 0;
    if (__atomic_compare_exchange_n(&t->used, &free_, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      return t;
  }
  struct ac_guard_thread *t = fresh_record();
  if (!t) return NULL;
  t->used = 1;
  struct ac_guard_thread *head = __atomic_load_n(&all, __ATOMIC_ACQUIRE);
  do
    t->next = head;
  while (!__atomic_compare_exchange_n(&all, &head, t, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  return t;
}

static void record_ends(void *record) {
  struct ac_guard_thread *t = record;
  __atomic_store_n(&t->state, PARKED, __ATOMIC_SEQ_CST);
  __atomic_store_n(&t->used, 0, __ATOMIC_RELEASE);
  if (self == t) self = NULL;
}

/* The record is the calling thread's from now on, and given back when it
 * ends (the key destructor; a thread that ends without running destructors
 * is found gone when it first disagrees, ac_guard_threads_disagreeing). */
static void adopt(struct ac_guard_thread *t) {
  __atomic_store_n(&t->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED); /* read by others */
  self = t;
  if (__atomic_load_n(&exit_key_made, __ATOMIC_ACQUIRE)) pthread_setspecific(exit_key, t);
}

/* What a thread's PKRU holds before it first writes it: every slot disabled
 * (the kernel's default for keys it never enabled, and how the guard
 * allocates its keys) - but not known for sure, so the record says so. */
static void start_unknown(struct ac_guard_thread *t, int state) {
  __atomic_store_n(&t->mask_valid, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&t->mask, ~0u, __ATOMIC_RELAXED);
  __atomic_store_n(&t->state, state, __ATOMIC_SEQ_CST);
}

/* ---- each thread's own PKRU ---- */

/* The calling thread writes its PKRU to the model's verdicts (plus `also`,
 * slots it is granted though forbidden) and records it. The verdicts are read
 * again until they held across the write: a transition of another thread in
 * between is then either seen here or sees this thread's record invalid. */
static void write_own(struct ac_guard_thread *t, uint32_t also) {
  __atomic_store_n(&t->mask_valid, 0, __ATOMIC_SEQ_CST);
  uint32_t disabled;
  do {
    disabled = ac_guard_keys_disabled_now();
    uint32_t now = ac_pkru_read(), want = ac_guard_keys_pkru_for(now, disabled & ~also);
    if (want != now) ac_pkru_write(want);
  } while (disabled != ac_guard_keys_disabled_now());
  __atomic_store_n(&t->mask, disabled & ~also, __ATOMIC_RELAXED);
  __atomic_store_n(&t->mask_valid, 1, __ATOMIC_SEQ_CST);
}

/* The calling thread's record, made on first need (async-signal-safe). */
static struct ac_guard_thread *this_thread(void) {
  if (self) return self;
  struct ac_guard_thread *t = take_record();
  if (!t) return NULL;
  start_unknown(t, RUNNING);
  adopt(t);
  return t;
}

void ac_guard_threads_catch_up(void) {
  if (!ac_guard_keys_active()) return;
  struct ac_guard_thread *t = this_thread();
  if (!t || __atomic_load_n(&t->state, __ATOMIC_RELAXED) == DRIVER) return;
  uint32_t also = grant_now();
  if (__atomic_load_n(&t->mask_valid, __ATOMIC_SEQ_CST) &&
      __atomic_load_n(&t->mask, __ATOMIC_RELAXED) == (ac_guard_keys_disabled_now() & ~also))
    return; /* agrees already: the common case, a few loads */
  write_own(t, also);
}

void ac_guard_threads_in_frame(void *ucontext, uint32_t also) {
  uint32_t *pkru = ac_pkeys_frame_pkru(ucontext);
  struct ac_guard_thread *t = this_thread();
  if (!pkru) return;
  if (also) grant(also | grant_now());
  also = grant_now();
  if (t) __atomic_store_n(&t->mask_valid, 0, __ATOMIC_SEQ_CST);
  uint32_t disabled = ac_guard_keys_disabled_now() & ~also;
  *pkru = ac_guard_keys_pkru_for(*pkru, disabled);
  if (!t) return;
  __atomic_store_n(&t->mask, disabled, __ATOMIC_RELAXED);
  __atomic_store_n(&t->mask_valid, 1, __ATOMIC_SEQ_CST);
}

void ac_guard_threads_revoke_in_frame(void *ucontext, uint32_t slots) {
  granted &= ~slots;
  ac_guard_threads_in_frame(ucontext, 0);
}

uint32_t ac_guard_threads_granted(void) {
  return grant_now();
}

void ac_guard_threads_grant(uint32_t slots) {
  struct ac_guard_thread *t = this_thread();
  if (slots) grant(slots | grant_now());
  if (t) write_own(t, grant_now());
}

/* ---- what a transition asks ---- */

static bool thread_gone(const struct ac_guard_thread *t) {
  return syscall(SYS_tgkill, getpid(), __atomic_load_n(&t->tid, __ATOMIC_RELAXED), 0) != 0;
}

uint32_t ac_guard_threads_disagreeing(uint32_t disabled, uint32_t slots) {
  uint32_t out = 0;
  for (struct ac_guard_thread *t = __atomic_load_n(&all, __ATOMIC_ACQUIRE); t; t = t->next) {
    if (t == self || !__atomic_load_n(&t->used, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&t->state, __ATOMIC_SEQ_CST) != RUNNING)
      continue;
    uint32_t differ = slots;
    if (__atomic_load_n(&t->mask_valid, __ATOMIC_SEQ_CST))
      differ &= __atomic_load_n(&t->mask, __ATOMIC_RELAXED) ^ disabled;
    if (!differ || (out | differ) == out) continue;
    /* Ended without its destructor: its record is free. */
    if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) && thread_gone(t)) {
      __atomic_store_n(&t->used, 0, __ATOMIC_RELEASE);
      continue;
    }
    out |= differ;
  }
  return out;
}

/* ---- threads made, parked and ended ---- */

struct ac_guard_thread *ac_guard_thread_expected(bool by_driver) {
  struct ac_guard_thread *t = take_record();
  if (!t) return NULL;
  /* Not running yet: never found gone. */
  __atomic_store_n(&t->tid, 0, __ATOMIC_RELAXED);
  if (by_driver) { /* never counted, from the start */
    __atomic_store_n(&t->state, DRIVER, __ATOMIC_SEQ_CST);
    return t;
  }
  /* It starts with its creator's PKRU (clone copies it): what the creator's
   * record says, which stays true until the child writes its own. */
  struct ac_guard_thread *creator = self;
  __atomic_store_n(&t->mask_valid, 0, __ATOMIC_SEQ_CST);
  if (creator && __atomic_load_n(&creator->mask_valid, __ATOMIC_SEQ_CST)) {
    __atomic_store_n(&t->mask, __atomic_load_n(&creator->mask, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    __atomic_store_n(&t->mask_valid, 1, __ATOMIC_SEQ_CST);
  }
  __atomic_store_n(&t->state, RUNNING, __ATOMIC_SEQ_CST);
  return t;
}

void ac_guard_thread_begins(struct ac_guard_thread *t, bool by_driver) {
  if (!t) return;
  adopt(t);
  if (by_driver) {
    /* The driver's own accesses are never judged: its threads take no part
     * in the keys (a host function they run is a program thread's step). */
    __atomic_store_n(&t->state, DRIVER, __ATOMIC_SEQ_CST);
    return;
  }
  if (ac_guard_keys_active()) write_own(t, 0);
}

void ac_guard_thread_not_made(struct ac_guard_thread *t) {
  if (!t) return;
  __atomic_store_n(&t->state, PARKED, __ATOMIC_SEQ_CST);
  __atomic_store_n(&t->used, 0, __ATOMIC_RELEASE);
}

void ac_guard_park(void) {
  struct ac_guard_thread *t = self;
  if (t && __atomic_load_n(&t->state, __ATOMIC_RELAXED) == RUNNING)
    __atomic_store_n(&t->state, PARKED, __ATOMIC_SEQ_CST);
}

void ac_guard_unpark(void) {
  struct ac_guard_thread *t = self;
  if (!t || __atomic_load_n(&t->state, __ATOMIC_RELAXED) != PARKED) return;
  /* Running again before it reads the verdicts: a transition either sees it
   * running (and its record invalid while it writes) or is seen here. */
  __atomic_store_n(&t->state, RUNNING, __ATOMIC_SEQ_CST);
  if (ac_guard_keys_active()) write_own(t, grant_now());
}

bool ac_guard_thread_is_driver(void) {
  return self && __atomic_load_n(&self->state, __ATOMIC_RELAXED) == DRIVER;
}

void ac_guard_thread_as_program(bool program) {
  struct ac_guard_thread *t = this_thread();
  if (!t) return;
  if (program) {
    __atomic_store_n(&t->state, RUNNING, __ATOMIC_SEQ_CST);
    ac_guard_threads_catch_up();
  } else {
    __atomic_store_n(&t->state, DRIVER, __ATOMIC_SEQ_CST);
  }
}

/* ---- start-up and fork ---- */

void ac_guard_threads_at_load(void) {
  if (pthread_key_create(&exit_key, record_ends) == 0)
    __atomic_store_n(&exit_key_made, 1, __ATOMIC_RELEASE);
  struct ac_guard_thread *me = this_thread(); /* the thread loading the shim: main */
  if (me) pthread_setspecific(exit_key, me);
}

void ac_guard_threads_keys_made(void) {
  /* Every thread holds the new keys disabled - the kernel's default for a
   * key a thread never enabled, and how the guard allocates them - until it
   * writes its PKRU; a slot's verdict later says whether it agrees. */
  for (struct ac_guard_thread *t = __atomic_load_n(&all, __ATOMIC_ACQUIRE); t; t = t->next) {
    __atomic_store_n(&t->mask_valid, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&t->mask, ~0u, __ATOMIC_RELAXED);
    __atomic_store_n(&t->mask_valid, 1, __ATOMIC_SEQ_CST);
  }
}

/* In a forked child only the calling thread lives on. */
void ac_guard_threads_after_fork_child(void) {
  for (struct ac_guard_thread *t = __atomic_load_n(&all, __ATOMIC_ACQUIRE); t; t = t->next)
    if (t != self) {
      t->state = PARKED;
      t->used = 0;
    }
  if (self) self->tid = (pid_t)syscall(SYS_gettid);
}
