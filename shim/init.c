/* init.c - start-up, exit and fork.
 *
 * Loading does almost nothing (read the options, announce the process to the
 * CLI, register the fork handlers). The real start-up - opening the driver
 * and resolving every table entry - happens on the first intercepted call,
 * under a lock, guarded against re-entry from the same thread (the driver's
 * own constructors may call back into dlsym), and is marked done only once
 * it has succeeded. If it cannot succeed the shim says why, once, and the
 * wrappers answer CUDA_ERROR_NOT_INITIALIZED.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd_gate.h"
#include "libc_real.h"
#include "report.h"
#include "sys.h"
#include "shim.h"

struct ac_real_table ac_real;
void *ac_driver_entry[AC_ENTRY_COUNT];
struct ac_options ac_opts;
int ac_ready;
struct ac_model *ac_model;

static __thread bool starting;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void on_load_once(void);
static bool failure_told;
/* The process whose locks and state these are: set at load and in a child
 * made by fork(). A child made without the fork handlers (_Fork, a raw
 * clone) has another pid, and may find any lock held by a thread it does
 * not have. */
static pid_t own_pid;
#define AC_DEFAULT_DRIVER "libcuda.so.1"

bool ac_own_thread_start(void *(*fn)(void *)) {
  pthread_t tid;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool started = pthread_create(&tid, &attr, fn, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return started;
}

uint64_t ac_thread_id(void) {
  static uint64_t next = 1;
  static __thread uint64_t id;
  if (AC_UNLIKELY(!id)) id = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
  return id;
}

static void warn_line(const char *line) {
  fprintf(stderr, AC_PREFIX "warning: %s\n", line);
}

/* The next definition of a table row after the shim, when it is neither the
 * driver's nor the shim's: a wrapper library of the program's own. */
static void *next_definition(const char *name, void *driver_entry) {
  void *next = ac_real_dlsym(RTLD_NEXT, name);
  if (!next || next == driver_entry || ac_pc_in_shim(next)) return driver_entry;
  if (ac_opts.verbose) {
    Dl_info where;
    ac_log("%s: forwarding to %s, which stands before the driver", name,
           dladdr(next, &where) && where.dli_fname ? where.dli_fname : "another library");
  }
  return next;
}

/* Resolves every table row in the driver; a row that resolves to the shim
 * itself (the driver option names it) is refused. */
static bool resolve_driver(char *why, size_t len) {
  ac_stack_locate_shim(); /* for ac_pc_in_shim */
  void *driver = ac_fd_gate_dlopen(ac_opts.driver, RTLD_LAZY | RTLD_LOCAL);
  if (!driver) {
    snprintf(why, len, "cannot load the driver %s: %s", ac_opts.driver, dlerror());
    return false;
  }
#define RESOLVE(Name) ac_real.Name = (__typeof__(ac_real.Name))ac_real_dlsym(driver, #Name);
#define AC_WRAPPED(Name, Params, Effect, Why)                                                      \
  ac_driver_entry[AC_ID_##Name] = ac_real_dlsym(driver, #Name);                                    \
  if (ac_pc_in_shim(ac_driver_entry[AC_ID_##Name])) {                                              \
    snprintf(why, len, "the driver %s resolves %s to attachcheck itself", ac_opts.driver, #Name);  \
    return false;                                                                                  \
  }                                                                                                \
  ac_real.Name = (__typeof__(ac_real.Name))next_definition(#Name, ac_driver_entry[AC_ID_##Name]);
#define AC_LEFT_ALONE(Name, Reason, Why)
#include "driver_api.inc"
#undef AC_WRAPPED
#undef AC_LEFT_ALONE
  RESOLVE(cuPointerGetAttributes)
  RESOLVE(cuPointerGetAttribute)
  RESOLVE(cuCtxGetDevice)
  RESOLVE(cuCtxGetCurrent)
  RESOLVE(cuCtxPushCurrent_v2)
  RESOLVE(cuCtxPopCurrent_v2)
  RESOLVE(cuEventCreate)
  RESOLVE(cuDeviceGetAttribute)
  RESOLVE(cuGetErrorName)
  RESOLVE(cuFuncGetParamInfo)
  RESOLVE(cuKernelGetParamInfo)
  RESOLVE(cuFuncGetName)
  RESOLVE(cuKernelGetName)
  RESOLVE(cuFuncGetModule)
  RESOLVE(cuKernelGetLibrary)
  RESOLVE(cuGraphGetNodes)
  RESOLVE(cuGraphNodeGetType)
  RESOLVE(cuGraphKernelNodeGetParams_v2)
  RESOLVE(cuGraphKernelNodeGetParams)
  RESOLVE(cuGraphChildGraphNodeGetGraph)
  RESOLVE(cuGraphMemcpyNodeGetParams)
  RESOLVE(cuGraphMemsetNodeGetParams)
  RESOLVE(cuGraphEventRecordNodeGetEvent)
  RESOLVE(cuGraphEventWaitNodeGetEvent)
  RESOLVE(cuGraphGetEdges_v2)
  RESOLVE(cuDriverGetVersion)
  RESOLVE(cuDeviceGetCount)
  RESOLVE(cuDeviceGet)
  RESOLVE(cuDeviceGetName)
#undef RESOLVE
  if (!ac_real.cuGetProcAddress_v2 && !ac_real.cuInit) {
    snprintf(why, len, "%s does not look like the CUDA driver", ac_opts.driver);
    return false;
  }
  return true;
}

int ac_foreign_child;

void ac_become_foreign_child(void) {
  __atomic_store_n(&ac_foreign_child, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&ac_ready, 0, __ATOMIC_RELAXED);
}

void ac_before_foreign_clone(void) {
  ac_locks_fork_prepare();
}

void ac_after_foreign_clone(bool in_child) {
  if (in_child) {
    ac_locks_fork_child();
    ac_become_foreign_child();
  } else {
    ac_locks_fork_parent();
  }
}

bool ac_start_slow(void) {
  if (starting) return false; /* re-entered from inside start-up */
  if (__atomic_load_n(&ac_foreign_child, __ATOMIC_RELAXED)) return false;
  /* A library's constructor may reach the driver before the shim's own
   * constructor has run (glibc runs the preloaded library's last): read the
   * options first, whoever comes first. */
  pthread_once(&load_once, on_load_once);
  ac_lock(AC_LOCK_start);
  bool ok = __atomic_load_n(&ac_ready, __ATOMIC_ACQUIRE);
  if (!ok) {
    char why[512];
    starting = true;
    ok = resolve_driver(why, sizeof why);
    if (!ok && strcmp(ac_opts.driver, AC_DEFAULT_DRIVER) != 0) {
      /* A driver option that names no usable driver (the shim itself, say):
       * the program still gets the driver it would have had without us. */
      ac_log("warning: %s; using %s", why, AC_DEFAULT_DRIVER);
      ac_opts.driver = AC_DEFAULT_DRIVER;
      ok = resolve_driver(why, sizeof why);
    }
    if (ok) {
      ac_model = ac_model_create();
      ok = ac_model != NULL;
      if (!ok) snprintf(why, sizeof why, "out of memory");
    }
    if (ok) {
      ac_doors_build_map();
      ac_stack_start();
      ac_symbolize_start();
      ac_guard_start();
      __atomic_store_n(&ac_ready, 1, __ATOMIC_RELEASE);
      if (ac_opts.verbose) ac_log("started over %s", ac_opts.driver);
    } else if (!failure_told) {
      failure_told = true;
      char line[600];
      snprintf(line, sizeof line, "not checking: %s", why);
      ac_report_message(AC_MESSAGE_FATAL, line);
    }
    starting = false;
  }
  ac_unlock(AC_LOCK_start);
  return ok;
}

/* The fork handlers are the lock table's (base/locks.inc): every lock taken
 * in order before the copy, so that no other thread is half-way through
 * what one guards; in the child each is made anew, and then what the child
 * cannot keep is reset - its record stream, its model (a forked child cannot
 * use CUDA, and UVM unmaps managed memory there), the guard's threads. */
static void before_fork(void) {
  ac_locks_fork_prepare();
}

static void after_fork_in_parent(void) {
  ac_locks_fork_parent();
}

static void after_fork_in_child(void) {
  own_pid = (pid_t)syscall(SYS_getpid);
  ac_locks_fork_child();
  ac_report_fork_child();
  /* The child's only thread: the resets need no lock. */
  ac_check_reset_after_fork();
  ac_guard_after_fork_child();
}

/* --target-processes application-only: the programs this one runs (exec) do
 * not inherit the shim. Its forks are the same program and stay checked. */
static void keep_shim_from_programs_run(void) {
  Dl_info self;
  const char *preload = getenv("LD_PRELOAD");
  if (!preload || !dladdr((const void *)keep_shim_from_programs_run, &self) || !self.dli_fname)
    return;
  char *kept = calloc(1, strlen(preload) + 1), *copy = strdup(preload), *save = NULL;
  if (!kept || !copy) {
    free(kept), free(copy);
    return;
  }
  const char *own = strrchr(self.dli_fname, '/');
  own = own ? own + 1 : self.dli_fname;
  for (char *entry = strtok_r(copy, ": ", &save); entry; entry = strtok_r(NULL, ": ", &save)) {
    const char *base = strrchr(entry, '/');
    if (strcmp(entry, self.dli_fname) == 0 || strcmp(base ? base + 1 : entry, own) == 0) continue;
    if (*kept) strcat(kept, ":");
    strcat(kept, entry);
  }
  if (*kept)
    setenv("LD_PRELOAD", kept, 1);
  else
    unsetenv("LD_PRELOAD");
  free(kept), free(copy);
}

static void on_load_once(void) {
  ac_libc_resolve(); /* now, not in a forked child or a signal handler */
  ac_options_defaults(&ac_opts);
  ac_options_from_env(&ac_opts, warn_line);
  if (ac_opts.target_processes == AC_TARGET_APPLICATION_ONLY) keep_shim_from_programs_run();
  own_pid = (pid_t)syscall(SYS_getpid);
  ac_guard_threads_at_load();
  ac_report_announce(&ac_opts);
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

__attribute__((constructor)) static void on_load(void) {
  pthread_once(&load_once, on_load_once);
}

__attribute__((destructor)) static void on_unload(void) {
  /* A child made without the fork handlers leaves as bare: its locks may be
   * held by threads it does not have, and its record stream is its parent's. */
  if ((pid_t)syscall(SYS_getpid) != own_pid) return;
  /* What the signal handler found and the reporter thread has not written yet. */
  if (__atomic_load_n(&ac_ready, __ATOMIC_ACQUIRE)) {
    ac_guard_drain();
    ac_guard_print_stats();
    ac_kernel_args_print_stats();
    ac_stack_print_stats();
    ac_attach_print_stats();
  }
  ac_report_finish();
}
