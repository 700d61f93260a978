/* symbolize.c - a return address as (module, offset, function, file, line).
 *
 * Used only when a finding is presented, never on the hot path. Debug
 * information is read with libdw (elfutils), which is loaded with dlopen when
 * checking starts, with libunwind - not at the first finding: the reporter
 * thread would then load it while the program runs, and the loader reads a
 * library through a descriptor in the program's range, which a daemon's
 * close_range may close (or hand to a file of the program's) half-way. It
 * comes from the shim's own folder first (a copy travels beside it, as
 * libunwind's does) and privately (RTLD_LOCAL). libdw also knows the
 * full symbol table, so static functions get names too. Without libdw, or
 * for a module without symbols, dladdr names what the dynamic symbol table
 * exports. C++ names are demangled with __cxa_demangle (the program's own
 * libstdc++, or a private one loaded when the first mangled name is seen).
 * --strip-paths removes a
 * prefix from source paths, so reports name files relative to a checkout.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h> /* program_invocation_name */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd_gate.h"
#include "own_code.h"
#include "report.h"
#include "sys.h"

static const char *strip_prefix;

void ac_symbolize_set_strip_prefix(const char *prefix) {
  strip_prefix = prefix && *prefix ? prefix : NULL;
}

/* ---- the program's own path ---- */

static char program_path[PATH_MAX];
static void find_program_path(void) {
  ssize_t n = readlink("/proc/self/exe", program_path, sizeof program_path - 1);
  program_path[n > 0 ? n : 0] = 0;
}

/* dladdr names the program itself by argv[0] (relative, or whatever the
 * program set it to): use the executable's absolute path instead. */
static const char *module_path(const char *name) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (name[0] == '/' || strcmp(name, program_invocation_name) != 0) return name;
  pthread_once(&once, find_program_path);
  return program_path[0] ? program_path : name;
}

/* ---- libdw, loaded on first use ---- */

static struct {
  bool tried;
  Dwfl_Callbacks callbacks;
  Dwfl *(*begin)(const Dwfl_Callbacks *);
  void (*end)(Dwfl *);
  int (*proc_report)(Dwfl *, pid_t);
  int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
                    void *);
  Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
  const char *(*addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *, Elf **,
                          Dwarf_Addr *);
  Dwfl_Line *(*getsrc)(Dwfl_Module *, Dwarf_Addr);
  int (*build_id_find_debuginfo)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
                                 const char *, GElf_Word, char **);
  const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
  /* The session's view of the process. Names it returned stay valid as long
   * as it lives, so an outdated one (a library loaded since) is replaced but
   * never freed: callers may still hold its strings. */
  Dwfl *dwfl;
  pid_t dwfl_pid;
} dw;

static void *open_beside_report(const char *name) {
  Dl_info info;
  char path[PATH_MAX];
  if (dladdr((const void *)ac_symbolize, &info) && info.dli_fname) {
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) + 1 + strlen(name) < sizeof path) {
      strcpy(slash + 1, name);
      void *h = ac_fd_gate_dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h) return h;
    }
  }
  return ac_fd_gate_dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

#define LOAD(field, symbol) (*(void **)&dw.field = dlsym(h, symbol)) != NULL

/* A module's separate debug information, looked for on this machine only:
 * by build ID under /usr/lib/debug (libdw's own search), then by its debug
 * link beside the file, in .debug/ beside it and under /usr/lib/debug (the
 * link's CRC unchecked). Not dwfl_standard_find_debuginfo: when that finds
 * nothing it asks debuginfod, which initialises libcurl and OpenSSL in the
 * program's process, from the reporter thread - global state a program may
 * be using or tearing down at exit (a crash seen at Python's exit) - and
 * may wait on the network. */
static int find_debuginfo_locally(Dwfl_Module *mod, void **userdata, const char *modname,
                                  Dwarf_Addr base, const char *file_name,
                                  const char *debuglink_file, GElf_Word debuglink_crc,
                                  char **debuginfo_file_name) {
  errno = 0;
  int fd = dw.build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                      debuglink_crc, debuginfo_file_name);
  const char *slash = file_name ? strrchr(file_name, '/') : NULL;
  if (fd >= 0 || errno != 0 || !debuglink_file || !slash) return fd;
  int dir_len = (int)(slash - file_name);
  static const char *const places[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
    int n = snprintf(path, sizeof path, places[i], dir_len, file_name, debuglink_file);
    if (n <= 0 || (size_t)n >= sizeof path || strcmp(path, file_name) == 0) continue;
    fd = AC_OPEN_OUT_OF_RANGE(ac_sys_open(path, O_RDONLY | O_CLOEXEC, 0));
    if (fd >= 0) {
      *debuginfo_file_name = strdup(path);
      return fd; /* libdw keeps it open */
    }
  }
  errno = 0;
  return -1;
}

static void load_libdw(void) {
  dw.tried = true;
  open_beside_report("libelf.so.1"); /* libdw's own dependency, from the same folder */
  void *h = open_beside_report("libdw.so.1");
  if (!h) return;
  /* The files libdw opens and keeps open (each module's ELF and debug file)
   * are moved out of the program's range by the shim's open wrapper, which
   * knows libdw's calls from the program's by their address. */
  ac_own_code_add(dlsym(h, "dwfl_begin"));
  ac_own_code_add(dlsym(h, "elf_version"));
  bool ok = LOAD(begin, "dwfl_begin") && LOAD(end, "dwfl_end") &&
            LOAD(proc_report, "dwfl_linux_proc_report") && LOAD(report_end, "dwfl_report_end") &&
            LOAD(addrmodule, "dwfl_addrmodule") && LOAD(addrinfo, "dwfl_module_addrinfo") &&
            LOAD(getsrc, "dwfl_module_getsrc") && LOAD(lineinfo, "dwfl_lineinfo") &&
            LOAD(callbacks.find_elf, "dwfl_linux_proc_find_elf") &&
            LOAD(build_id_find_debuginfo, "dwfl_build_id_find_debuginfo") &&
            LOAD(callbacks.section_address, "dwfl_offline_section_address");
  dw.callbacks.find_debuginfo = find_debuginfo_locally;
  if (!ok) dw.begin = NULL;
}

/* A fresh view of this process's modules. */
static Dwfl *report_process(void) {
  Dwfl *d = dw.begin(&dw.callbacks);
  if (!d) return NULL;
  /* libdw reads /proc/PID/maps through fopen, the C library's own open,
   * which no export of the shim's sees: that descriptor is in the program's
   * range for the whole report (fd_gate.h). */
  ac_fd_gate_enter();
  bool reported = dw.proc_report(d, getpid()) == 0 && dw.report_end(d, NULL, NULL) == 0;
  ac_fd_gate_leave();
  if (!reported) {
    dw.end(d); /* never handed out: no caller holds its names */
    return NULL;
  }
  dw.dwfl_pid = getpid();
  return d;
}

void ac_symbolize_start(void) {
  if (!dw.tried) load_libdw();
}

static Dwfl_Module *module_at(Dwarf_Addr addr) {
  if (!dw.tried) load_libdw(); /* a finding before checking started (none today) */
  if (!dw.begin) return NULL;
  if (!dw.dwfl || dw.dwfl_pid != getpid()) dw.dwfl = report_process();
  Dwfl_Module *m = dw.dwfl ? dw.addrmodule(dw.dwfl, addr) : NULL;
  if (!m) { /* loaded after the view was taken */
    Dwfl *fresh = report_process();
    if (fresh) dw.dwfl = fresh;
    m = dw.dwfl ? dw.addrmodule(dw.dwfl, addr) : NULL;
  }
  return m;
}

/* ---- names ---- */

static void demangle_into(struct ac_frame *out, const char *name) {
  typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
  static demangle_fn demangle;
  static bool looked;
  if (!looked && name[0] == '_' && name[1] == 'Z') {
    /* The program's own if it is C++ enough to have libstdc++ loaded; else a
     * private copy (a C++ name in a process without it: a library's). */
    demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    void *h = demangle ? NULL : ac_fd_gate_dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h) demangle = (demangle_fn)dlsym(h, "__cxa_demangle");
    looked = true;
  }
  int status = -1;
  char *plain =
      name[0] == '_' && name[1] == 'Z' && demangle ? demangle(name, NULL, NULL, &status) : NULL;
  snprintf(out->function_buf, sizeof out->function_buf, "%s", status == 0 && plain ? plain : name);
  free(plain);
  out->function = out->function_buf;
}

static const char *stripped(const char *path) {
  if (!strip_prefix) return path;
  const char *at = strstr(path, strip_prefix);
  return at ? at + strlen(strip_prefix) : path;
}

/* File, line and the full symbol table's name, from debug information. */
static void from_debug_info(const void *call, struct ac_frame *out) {
  Dwarf_Addr addr = (Dwarf_Addr)(uintptr_t)call;
  Dwfl_Module *m = module_at(addr);
  if (!m) return;
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char *name = out->function ? NULL : dw.addrinfo(m, addr, &offset, &sym, NULL, NULL, NULL);
  if (name) {
    demangle_into(out, name);
    out->function_offset = (unsigned long)offset + 1; /* from the call back to the return address */
  }
  Dwfl_Line *line = dw.getsrc(m, addr);
  int lineno = 0, column = 0;
  const char *file = line ? dw.lineinfo(line, NULL, &lineno, &column, NULL, NULL) : NULL;
  if (file && lineno > 0) {
    snprintf(out->file_buf, sizeof out->file_buf, "%s", stripped(file));
    out->file = out->file_buf;
    out->source_path = file; /* libdw's: lives as long as its view */
    out->line = lineno;
    out->column = column;
  }
}

void ac_symbolize(const void *pc, struct ac_frame *out) {
  Dl_info info;
  memset(out, 0, sizeof *out);
  out->pc = pc;
  out->module = "";
  /* A return address points after the call; look up the call itself. */
  const char *call = (const char *)pc - 1;
  ac_lock(AC_LOCK_symbolize); /* libdw's view and the demangler are shared */
  if (dladdr(call, &info)) {
    if (info.dli_fname) out->module = module_path(info.dli_fname);
    out->offset = (unsigned long)((const char *)pc - (const char *)info.dli_fbase);
    if (info.dli_sname && info.dli_saddr) {
      demangle_into(out, info.dli_sname);
      out->function_offset = (unsigned long)((const char *)pc - (const char *)info.dli_saddr);
    }
  }
  from_debug_info(call, out);
  ac_unlock(AC_LOCK_symbolize);
}
