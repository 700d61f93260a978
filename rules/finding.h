/* finding.h - what a rule decided, as facts.
 *
 * A finding carries raw facts (rule, call arguments, the allocation as it was,
 * the stream, thread and stack); prose is made at the edges by report/. The
 * finding owns copies of everything it names, so it stays valid after the
 * allocation or stream it describes is gone.
 */
#ifndef AC_FINDING_H
#define AC_FINDING_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "model_types.h"

struct ac_alloc;

enum ac_severity { AC_SEV_ERROR, AC_SEV_WARNING, AC_SEV_NOTE };

/* What a device with concurrent managed access makes of a rule judged by
 * strict semantics (rule_catalog.inc's Reach). */
enum ac_rule_reach { AC_WRONG_EVERYWHERE, AC_LEGAL_WITH_CMA, AC_RACE_IF_REACHED };

enum ac_rule_id {
#define AC_RULE(Id, Name, Sev, Reach, Summary, Fix) AC_RULE_##Id,
#include "rule_catalog.inc"
#undef AC_RULE
  AC_RULE_COUNT
};

struct ac_rule_info {
  const char *id;
  const char *name;
  enum ac_severity severity;
  enum ac_rule_reach reach;
  const char *summary;
  const char *fix;
};

const struct ac_rule_info *ac_rule_info(enum ac_rule_id rule);
const char *ac_severity_name(enum ac_severity sev);
/* Returns the rule with this id ("AC101"), or AC_RULE_COUNT if there is none. */
enum ac_rule_id ac_rule_by_id(const char *id);

/* What a finding is about. Each kind has facts of its own, and each report
 * shows only those (docs/report-schema.md lists them per kind).
 *   AC_FINDING_KIND(Enum, json name) */
#define AC_FINDING_KINDS(AC_FINDING_KIND)                                                          \
  AC_FINDING_KIND(AC_KIND_ATTACH, "attach") /* an attach call: AC1xx, AC401 */                     \
  AC_FINDING_KIND(AC_KIND_LAUNCH, "launch") /* a kernel given the memory: AC3xx */                 \
  AC_FINDING_KIND(AC_KIND_COPY, "copy")     /* a copy, set or memory operation: AC301 */           \
  AC_FINDING_KIND(AC_KIND_STREAM_DESTROY, "stream_destroy") /* AC402 */                            \
  AC_FINDING_KIND(AC_KIND_HOST_ACCESS, "host_access")       /* the CPU touched it: AC2xx */
#define AC_FINDING_KIND_ENUM(Enum, Name) Enum,
enum ac_finding_kind { AC_FINDING_KINDS(AC_FINDING_KIND_ENUM) AC_KIND_COUNT };
const char *ac_finding_kind_name(enum ac_finding_kind kind);

/* The arguments of cuStreamAttachMemAsync as the program passed them. */
struct ac_attach_args {
  uintptr_t stream;
  uintptr_t dptr;
  size_t length;
  unsigned flags;
};

/* The stream a call named or put work on (attach, launch, copy, destroy). */
struct ac_stream_facts {
  enum ac_stream_kind kind;
  uint64_t serial;  /* 0 when the stream has no record */
  uintptr_t handle; /* as the program passed it */
};

/* The allocation as it was when the finding was made. */
struct ac_alloc_snapshot {
  bool present;
  uintptr_t base;
  size_t size;
  enum ac_mem_kind kind;
  enum ac_assoc assoc;
  uint64_t assoc_stream_serial;
  uintptr_t assoc_stream_handle;
  char name[64]; /* __managed__ variable name, or "" */
  const char *origin_api;
  uint64_t origin_thread;
  struct ac_stack origin_stack;
  struct ac_op_origin attach_origin; /* the last attach; api NULL if none */
};

enum ac_access_kind { AC_ACCESS_UNKNOWN, AC_ACCESS_READ, AC_ACCESS_WRITE };

/* A CPU access (AC2xx). */
struct ac_access_facts {
  uintptr_t addr;
  size_t length; /* 0 when unknown (a page fault) */
  enum ac_access_kind kind;
  const char *via; /* "page fault", "read(2)", ... */
};

/* The stream whose outstanding work makes the access or attach wrong, or
 * (AC301) the stream the memory belongs to. */
struct ac_busy_facts {
  bool present;
  uint64_t stream_serial;
  uintptr_t stream_handle;
  enum ac_stream_kind stream_kind;
  bool stream_live;
  uint64_t outstanding;       /* its operations the host has not seen complete */
  struct ac_op_origin origin; /* the first of them; api NULL if unknown */
  uint64_t tick;              /* the model's history tick when it was judged */
};

/* What the GPU work was (AC3xx). */
enum ac_work_operation {
  AC_WORK_KERNEL, /* a kernel launch, or a graph's kernel node */
  AC_WORK_COPY,   /* a copy, or a graph's memcpy node */
  AC_WORK_SET,    /* a set (memset), or a graph's memset node */
  AC_WORK_VALUE,  /* a stream memory operation: wait on or write a value */
};

/* How GPU work was given the memory (AC3xx). */
enum ac_work_via {
  AC_VIA_ARGUMENT,         /* a word of a kernel's parameter */
  AC_VIA_MANAGED_VARIABLE, /* a __managed__ variable of the kernel's module */
  AC_VIA_DESTINATION,      /* a copy's or set's destination */
  AC_VIA_SOURCE,           /* a copy's source */
  AC_VIA_ADDRESS,          /* the address a stream memory operation waits on or writes */
};

/* A launch's shape; all 0 when not known (a graph's kernel node). */
struct ac_launch_dims {
  unsigned grid[3], block[3];
  unsigned shared_bytes;
};

/* GPU work given managed memory (AC3xx): a launch's kernel and the argument
 * holding the pointer, or a copy's operands. */
struct ac_work_facts {
  uintptr_t addr; /* the pointer the work was given */
  enum ac_work_operation operation;
  enum ac_work_via via; /* how */
  bool graph;           /* a node of a launched graph */
  char kernel[96];      /* the kernel's name, "" if unknown */
  struct ac_launch_dims dims;
  int param;          /* AC_VIA_ARGUMENT: the parameter's index */
  size_t offset;      /* ... and the pointer's byte offset inside it */
  uintptr_t dst, src; /* a copy's operands (0: none, or an array) */
  enum ac_mem_kind dst_kind, src_kind;
};

/* What became of the call. */
enum ac_driver_outcome {
  AC_DRIVER_RETURNED, /* forwarded; driver_result is the driver's answer */
  AC_DRIVER_GUARDED,  /* not forwarded: the guard answered driver_result */
  AC_DRIVER_CRASHES,  /* forwarded with the guard off although the driver crashes on it;
                         reported before the call, so the report survives the crash */
};

/* What a device with concurrent managed access makes of a finding judged by
 * strict semantics (AC202, AC302): filled when every device has it. */
struct ac_semantics_facts {
  bool present;
  char device[128]; /* the first device's name */
};

/* The latest operations of one stream (or of the host) before a finding. */
struct ac_history {
  bool present;
  uint64_t stream_serial; /* 0 for the host */
  enum ac_stream_kind stream_kind;
  uintptr_t stream_handle;
  uint64_t owner_thread;       /* a per-thread default stream's thread */
  struct ac_op_origin created; /* the call that made the stream; api NULL if not seen */
  uint64_t total; /* operations ever recorded there: more than count means some were cut */
  int count;
  struct ac_op_record op[AC_HISTORY_MAX]; /* oldest first */
};

/* Where a finding lies among the operations around it, for the timeline
 * (filled by the shim when the finding is reported). */
struct ac_finding_history {
  uint64_t tick;          /* the model's order when it was judged */
  uint64_t alloc_tick;    /* when its allocation was recorded; 0 if unknown */
  struct ac_history call; /* the stream the call was on, if any */
  struct ac_history busy; /* the busy (or owning) stream, if any and not the call's */
  struct ac_history host; /* the host's synchronisations and allocations */
};

/* A finding: what every kind has, then the facts of its kind (the others
 * stay zero). */
struct ac_finding {
  enum ac_rule_id rule;
  enum ac_finding_kind kind;
  const char *api; /* exact entry point, e.g. "cuStreamAttachMemAsync_ptsz"; a host access's via */
  uint64_t thread;
  uint64_t tick; /* the model's history tick when it was judged: findings in the model's order */
  struct ac_stack stack;
  struct ac_alloc_snapshot alloc; /* the memory at fault (its operand's, for work) */
  struct ac_busy_facts busy;      /* host access, AC401, destroy; AC301: the memory's stream */
  struct ac_stream_facts stream;  /* attach, launch, copy, destroy */
  /* AC_KIND_ATTACH */
  struct ac_attach_args args;
  enum ac_mem_kind mem_kind;
  enum ac_driver_outcome outcome;
  int driver_result; /* what the program got back (AC_DRIVER_RETURNED, _GUARDED) */
  char driver_result_name[48];
  /* AC_KIND_LAUNCH, AC_KIND_COPY */
  struct ac_work_facts work;
  /* AC_KIND_HOST_ACCESS */
  struct ac_access_facts access;
  struct ac_semantics_facts semantics;
  const struct ac_finding_history *history; /* NULL when none was taken */
  bool repair; /* --on-error repair: the CPU access waits for the busy work */
};

/* Copies what a finding needs to keep of an allocation (all zero for NULL). */
void ac_alloc_snapshot_fill(struct ac_alloc_snapshot *snap, const struct ac_alloc *a);

#endif
