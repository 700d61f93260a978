/* keys_internal.h - the state the protection-keys files share: keys.c (the
 * layout: which classes get keys, their pages' tags), keys_patch.c (the
 * layout patched between layouts, and what it shuts), keys_park.c (freed
 * memory keeping its key), keys_fault.c (the verdicts each transition
 * publishes, and the fault side). One struct, so a
 * forked child resets it in one place. Everything is under the model lock
 * but what is said to be atomic.
 */
#ifndef AC_GUARD_KEYS_INTERNAL_H
#define AC_GUARD_KEYS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkeys.h"
#include "published.h"
#include "ranges.h"

/* The keys the guard takes for classes, one more that closes pages to every
 * thread (no thread ever enables it) and one that lifts a judged page for the
 * threads it was judged for (the lift key, below): under half the hardware's,
 * so a program that allocates keys of its own still gets eight. */
#define KEYS_WANTED 5

/* The slot bit that stands for the lift key in the slot masks (disabled_now,
 * a thread's record, its grants): above every class slot. It is disabled in
 * every verdict; a thread enables it only while it is granted it. */
#define LIFT_SLOT 31

/* The classes offered at a layout, with their bytes; only the ones that get
 * a key are kept past it, by slot. */
struct offered_class {
  const void *id;
  struct range_list bytes;
};

/* Keyed pages of a forbidden class that a fault was judged on and let go
 * until the next transition, as mprotect lifts a page, so that each other
 * page of the class still faults and is judged (not only the class's first
 * page a thread touches). They get the lift key, which only the threads
 * judged on them since enable: another thread's first access to the page
 * faults and is judged too. Without a lift key (none was free) they get key
 * 0, open to every thread. A fixed table: it is filled in the SIGSEGV
 * handler, which must not allocate; when it is full the key is granted to
 * the thread instead. The count is written under the model lock and read
 * without it (atomic). */
#define KEY_LIFTED_MAX 4096
struct lifted_page {
  uintptr_t page;
  int slot;
};

/* A keyed range with its slot, as laid out and published. */
struct keyed_range {
  uintptr_t start, end;
  int slot;
};

struct ac_keys_state {
  int keys[AC_PKEYS_HW_MAX], key_count;
  int closing_key;
  int lift_key;            /* -1 when none was free: lifted pages get key 0 */
  uint32_t lift_bits;      /* its PKRU bits */
  uint32_t our_bits;       /* the PKRU bits of every class key of ours */
  uint32_t closing_bits;   /* and of the closing key */
  uint32_t disabled_now;   /* atomic: slots whose memory is forbidden now */
  unsigned verdicts_epoch; /* atomic: moves whenever disabled_now changes */
  bool keys_broken;        /* a frame without PKRU was met: keys given up */
  struct offered_class *offered;
  size_t offered_count, offered_cap;
  const void *slot_owner[AC_PKEYS_HW_MAX];     /* the class each slot went to */
  struct range_list tagged[AC_PKEYS_HW_MAX];   /* its pages alone, tagged with its key */
  struct range_list residual[AC_PKEYS_HW_MAX]; /* its bytes elsewhere: the page tables' */
  struct range_list managed_residual;          /* managed bytes on pages without a key */
  /* Pages tagged with a slot's key that hold no managed bytes: freed memory,
   * which keeps its key for the next allocation there (keys_park.c). */
  struct range_list parked[AC_PKEYS_HW_MAX];
  bool standing_aside; /* every key gave its pages up */
  /* Between layouts the pages where a few bytes changed class give their
   * keys up (ac_guard_keys_patch_*): how many pages had keys at the last
   * layout, how many have given them up since. */
  size_t keyed_pages, demoted_pages;
  /* The pages whose key changed since ac_guard_keys_take_rekeyed last took
   * them: only there does what the page tables cover change with a layout. */
  struct range_list rekeyed;
  bool rekeyed_all;                /* more than is worth listing: everything */
  struct range_list patch_touched; /* the pages a patch gave key 0 */
  struct lifted_page key_lifted[KEY_LIFTED_MAX];
  size_t key_lifted_count;
  /* The tagged pages as the handler and the system-call check read them
   * without the lock: sorted, each with its slot. */
  struct ac_published published;
};
extern struct ac_keys_state ac_keys;

/* keys.c's helpers the others use. */
void keys_note_rekeyed(const struct range_list *pages);
size_t keys_pages_in(const struct range_list *l);
void keys_pages_of(struct range_list *out, uintptr_t start, uintptr_t end);
void keys_publish_tags(void);
void keys_tag_ranges(const struct range_list *l, int key, struct range_list *made_accessible);
void keys_forget_protection_of(struct range_list *made_accessible);
int keys_slot_of_class(const void *id);
/* keys_park.c's. */
void keys_park_settle(void);
void keys_park(int s, const struct range_list *pages);
void keys_unpark_all(struct range_list *touched);
void keys_park_after_fork_child(void);
static inline void keys_set_lifted_count(size_t n) {
  __atomic_store_n(&ac_keys.key_lifted_count, n, __ATOMIC_RELEASE);
}

#endif
