/* model_types.h - the small value types shared by the model, the rules and the
 * reports: kinds of memory, associations, kinds of stream reference, stacks.
 */
#ifndef AC_MODEL_TYPES_H
#define AC_MODEL_TYPES_H

#include <stdint.h>

#define AC_STACK_MAX 32

/* A raw call stack: return addresses, innermost first. Symbolised only when a
 * finding is presented. */
struct ac_stack {
  int depth;
  void *pc[AC_STACK_MAX];
};

/* A stack stored once in the depot (stack_depot.h); 0: none. */
typedef uint32_t ac_stack_id;

/* Where an operation was enqueued: shown as "what made the memory busy". */
struct ac_op_origin {
  const char *api;
  uint64_t thread;
  uint64_t seq; /* its place in its stream */
  struct ac_stack stack;
};

/* The same, as the model keeps it: the stack in the depot. A finding gets
 * the whole ac_op_origin (ac_origin_expand). */
struct ac_origin {
  const char *api; /* NULL: none */
  uint64_t thread;
  uint64_t seq;
  ac_stack_id stack;
};

enum ac_mem_kind {
  AC_MEM_MANAGED,     /* cuMemAllocManaged */
  AC_MEM_MANAGED_VAR, /* a __managed__ variable of a module or library */
  AC_MEM_DEVICE,      /* cuMemAlloc and friends */
  AC_MEM_PINNED,      /* page-locked host memory (cuMemHostAlloc, registered) */
  AC_MEM_PAGEABLE,    /* ordinary host memory the driver does not know */
  AC_MEM_NULL,        /* the NULL pointer */
};

/* The association of a managed allocation (the flags of cuStreamAttachMemAsync). */
enum ac_assoc {
  AC_ASSOC_GLOBAL = 1, /* CU_MEM_ATTACH_GLOBAL */
  AC_ASSOC_HOST = 2,   /* CU_MEM_ATTACH_HOST */
  AC_ASSOC_SINGLE = 4, /* CU_MEM_ATTACH_SINGLE */
};

/* What a stream argument refers to. */
enum ac_stream_kind {
  AC_STREAM_NULL_LEGACY,   /* handle 0 in a legacy-default-stream entry point */
  AC_STREAM_LEGACY,        /* CU_STREAM_LEGACY */
  AC_STREAM_PER_THREAD,    /* CU_STREAM_PER_THREAD, or 0 in a _ptsz entry point */
  AC_STREAM_CREATED,       /* a live stream from cuStreamCreate* */
  AC_STREAM_DESTROYED,     /* a handle whose stream has been destroyed */
  AC_STREAM_NEVER_CREATED, /* a handle that was never a stream */
  AC_STREAM_UNTRACKED,     /* a plausible handle the model did not see created */
};

/* What one operation of a stream's history was (see ac_op_record). */
enum ac_op_kind {
  AC_OP_WORK,          /* a launch, an asynchronous copy or set, a graph launch */
  AC_OP_ATTACH,        /* cuStreamAttachMemAsync */
  AC_OP_HOST_FUNCTION, /* cuLaunchHostFunc, cuStreamAddCallback */
  AC_OP_SYNC_COPY,     /* a synchronous copy on the NULL stream, waited for */
  AC_OP_EVENT_RECORD,  /* cuEventRecord on the stream (addr: the event) */
  AC_OP_EVENT_WAIT,    /* cuStreamWaitEvent on the stream (addr: the event) */
  AC_OP_STREAM_SYNC,   /* the host waited for the stream */
  AC_OP_EVENT_SYNC,    /* the host waited for an event (addr: the event) */
  AC_OP_CTX_SYNC,      /* the host waited for every stream */
  AC_OP_ALLOC,         /* an allocation was recorded (addr: its base) */
  AC_OP_ADVICE,        /* the host advised where memory lives (addr: the range's start) */
  AC_OP_KIND_COUNT
};

/* One recent operation, as the timeline of a report shows it. Filled where the
 * model records the operation: no stack, no allocation. */
struct ac_op_record {
  uint64_t tick;         /* the model's order across all streams and the host */
  uint64_t seq;          /* its place in its stream; 0 for what the host did */
  uint64_t thread;       /* the host thread that called it */
  const char *api;       /* the entry point (a static string), NULL if not told */
  const char *kernel;    /* a launch's kernel (lives as long as the process), or NULL */
  uint64_t alloc_serial; /* an attach's allocation (0 if none) */
  uintptr_t addr;        /* an attach's pointer, an event handle, an allocation's base */
  unsigned flags;        /* an attach's flags; an advice's CUmem_advise value */
  unsigned char kind;    /* enum ac_op_kind */
};

/* The most operations a finding names of a stream (or of the host). */
#define AC_HISTORY_MAX 16
/* The ring keeps twice as many: a finding reported a little after it was
 * judged (a CPU access, by the guard's reporter thread) still finds the
 * AC_HISTORY_MAX operations before it. */
#define AC_HISTORY_RING (2 * AC_HISTORY_MAX)

/* A bounded ring of the latest operations; total counts every one recorded.
 * Record i is op[i % AC_HISTORY_RING]; the array grows to that size as
 * records come (a stream used once keeps one or two, not 32). */
struct ac_op_ring {
  uint64_t total;
  uint32_t cap;
  struct ac_op_record *op;
};

const char *ac_op_kind_name(enum ac_op_kind kind);
const char *ac_mem_kind_name(enum ac_mem_kind kind);
const char *ac_assoc_name(unsigned flags);
/* cuda.h's name of a CUmem_advise value ("CU_MEM_ADVISE_SET_READ_MOSTLY"), or
 * NULL for one this build does not know. */
const char *ac_advice_name(unsigned advice);
const char *ac_stream_kind_name(enum ac_stream_kind kind);

#endif
