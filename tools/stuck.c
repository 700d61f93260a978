/* stuck.c - where each thread of a hung process is, without a debugger.
 *
 * For machines that have no gdb (the GPU machines): each thread of PID is
 * stopped for a moment (ptrace, PTRACE_INTERRUPT), and its system call (or
 * -1 when it runs user code), its instruction pointer and the words of its
 * stack that point into executable mappings are printed, each as a frame
 * line with its file and offset there - candidate return addresses, a
 * backtrace without unwind tables; then it is let go as it was. Given the address of attachcheck's
 * lock table (tools/stuck.sh finds it), it also prints which thread holds each of the shim's locks:
 * glibc's mutex keeps its owner's thread id. tools/stuck.sh symbolises the output.
 *
 *   stuck PID [LOCK_TABLE_ADDRESS LOCK_COUNT]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PC(r) (r).rip
#define SP(r) (r).rsp
#define SYSCALL_NR(r) (long long)(r).orig_rax
typedef struct user_regs_struct regs_t;
#elif defined(__aarch64__)
#define PC(r) (r).pc
#define SP(r) (r).sp
#define SYSCALL_NR(r) -1LL /* not in the general registers on arm64 */
typedef struct user_pt_regs regs_t;
#endif

#define STACK_WORDS 1024

struct span {
  unsigned long lo, hi, offset;
  char file[256]; /* "" for an anonymous mapping */
};

/* The executable mappings of pid: where a return address may point. */
static size_t text_spans(int pid, struct span *out, size_t max) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE *f = fopen(path, "r");
  size_t n = 0;
  while (f && n < max && fgets(line, sizeof line, f)) {
    unsigned long lo, hi, offset;
    char perms[8], file[256] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &lo, &hi, perms, &offset, file) >= 4 &&
        perms[2] == 'x') {
      out[n] = (struct span){lo, hi, offset, ""};
      snprintf(out[n++].file, sizeof out[0].file, "%s", file);
    }
  }
  if (f) fclose(f);
  return n;
}

static const struct span *text_at(unsigned long a, const struct span *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a >= s[i].lo && a < s[i].hi) return &s[i];
  return NULL;
}

/* "frame ADDRESS FILE OFFSET" (FILE "-" when anonymous) for the shell to name. */
static void print_frame(unsigned long a, const struct span *s) {
  printf("frame %lx %s %lx\n", a, s && s->file[0] ? s->file : "-", s ? a - s->lo + s->offset : 0);
}

static int read_regs(int tid, regs_t *r) {
  struct iovec v = {r, sizeof *r};
  return (int)ptrace(PTRACE_GETREGSET, tid, (void *)1 /* NT_PRSTATUS */, &v);
}

static void one_thread(int tid, int mem, const struct span *spans, size_t nspans) {
  if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
    printf("thread %d: cannot trace: %s\n", tid, strerror(errno));
    return;
  }
  int status;
  ptrace(PTRACE_INTERRUPT, tid, 0, 0);
  waitpid(tid, &status, __WALL);
  regs_t r;
  if (read_regs(tid, &r) != 0) {
    printf("thread %d: no registers: %s\n", tid, strerror(errno));
  } else {
    printf("thread %d syscall %lld\n", tid, SYSCALL_NR(r));
    print_frame((unsigned long)PC(r), text_at((unsigned long)PC(r), spans, nspans));
    static unsigned long w[STACK_WORDS];
    ssize_t got = pread(mem, w, sizeof w, (off_t)SP(r));
    for (ssize_t i = 0; i < got / (ssize_t)sizeof w[0]; i++) {
      const struct span *at = text_at(w[i], spans, nspans);
      if (at) print_frame(w[i], at);
    }
  }
  ptrace(PTRACE_DETACH, tid, 0, 0);
}

/* Which thread holds each lock of the table: glibc's mutex has its owner's
 * thread id after its lock word and count. */
static void lock_owners(int mem, unsigned long table, int count) {
  for (int i = 0; i < count; i++) {
    pthread_mutex_t m;
    if (pread(mem, &m, sizeof m, (off_t)(table + (unsigned long)i * sizeof m)) != sizeof m) {
      printf("lock %d: unreadable\n", i);
      continue;
    }
    printf("lock %d: %s", i, m.__data.__lock ? "held" : "free");
    if (m.__data.__lock)
      printf(" by thread %d%s", m.__data.__owner, m.__data.__lock > 1 ? ", others waiting" : "");
    printf("\n");
  }
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: stuck PID [LOCK_TABLE_ADDRESS LOCK_COUNT]\n");
    return 2;
  }
  int pid = atoi(argv[1]);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int mem = open(path, O_RDONLY);
  snprintf(path, sizeof path, "/proc/%d/task", pid);
  DIR *d = opendir(path);
  if (mem < 0 || !d) {
    printf("process %d: cannot trace: %s\n", pid, strerror(errno));
    return 1;
  }
  static struct span spans[4096];
  size_t nspans = text_spans(pid, spans, sizeof spans / sizeof spans[0]);
  for (struct dirent *e; (e = readdir(d));)
    if (atoi(e->d_name) > 0) one_thread(atoi(e->d_name), mem, spans, nspans);
  closedir(d);
  if (argc == 4) lock_owners(mem, strtoul(argv[2], NULL, 16), atoi(argv[3]));
  return 0;
}
