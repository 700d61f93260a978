/* tp_exits.c - signal handlers that run while their thread is inside the
 * driver, children that leave through exit() while another thread works and
 * makes findings, and a daemon that closes every descriptor it did not open.
 *
 *   tp_exits handler_legal [SECONDS]  a SIGALRM handler every 200 us adds to
 *                                     memory single-attached to a stream that
 *                                     never works, while the main thread is
 *                                     nearly always inside driver calls on
 *                                     another stream: no finding, no hang
 *   tp_exits handler_busy [SECONDS]   the handler adds to memory of the
 *                                     stream the main thread keeps busy
 *                                     (AC201): judged or let through, never a
 *                                     deadlock and never a death
 *   tp_exits fork_exit N              N children made by fork() leave through
 *                                     exit() - atexit handlers, destructors -
 *                                     while another thread launches, touches
 *                                     busy memory (AC202) and synchronises
 *   tp_exits _Fork_exit N             the same with glibc's _Fork()
 *   tp_exits clone_exit N             the same with a raw clone system call
 *   tp_exits daemon [N]               after its first finding the program
 *                                     closes every descriptor above 2
 *                                     (close_range), opens its own data file
 *                                     and goes on making findings: N (8) of
 *                                     AC202, each from a stack of its own, so
 *                                     each is new to the reporter; the file
 *                                     holds only what the program wrote, and
 *                                     no step stalls
 *   tp_exits daemon_storm [N]         N (200) times, while a thread keeps
 *                                     making findings (one AC202, repeated:
 *                                     a record each), the program closes
 *                                     every descriptor above 2, opens its 8
 *                                     data files again and appends a line to
 *                                     each: every file holds exactly its
 *                                     lines, and no write fails
 *
 * The handler's add is made 40 calls deep, below any frame of the code it
 * interrupted: a finding's stack (32 frames) is then the same wherever the
 * signal landed, so its findings are one finding.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp.h"

enum { BUF = 1 << 20, PAGE = 4096, DEPTH = 40 };

static CUstream s;
static CUdeviceptr m;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double seconds_arg(double fallback) {
  return tp_argc > 0 ? atof(tp_argv[0]) : fallback;
}

/* ---- a periodic handler while its thread is inside the driver ---- */
static CUdeviceptr target;
static volatile sig_atomic_t ticks;

/* depth calls down, then one add; noinline and the add after the call keep
 * every level a frame of its own */
__attribute__((noinline)) static int add_deep(int depth) {
  if (depth == 0) {
    ((volatile int *)target)[0] += 1;
    return 0;
  }
  int r = add_deep(depth - 1);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

static void on_alarm(int sig) {
  (void)sig;
  add_deep(DEPTH);
  ticks++;
}

/* Driver calls on s over w, for SECONDS and at least 50 ticks; between a
 * launch and its synchronisation, a run of queries of another stream, so the
 * thread is inside the driver (and a checker) nearly all the time. */
static void driver_loop(CUdeviceptr w, CUstream other, double secs) {
  double started = now();
  for (long i = 0; now() - started < secs || ticks < 50; i++) {
    tp_launch(s, w);
    for (int k = 0; k < 20; k++)
      EXPECT_RC(cu.cuStreamQuery(other), CUDA_SUCCESS);
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  }
}

static void handler(bool busy) {
  tp_start();
  s = tp_stream();
  CUstream quiet = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_HOST);
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  if (busy) {
    target = m; /* busy from each launch to its synchronisation */
  } else {
    target = tp_managed(BUF, CU_MEM_ATTACH_HOST);
    attach_sync(quiet, target, CU_MEM_ATTACH_SINGLE); /* quiet never works: always the CPU's */
  }
  tp_ticks_start(on_alarm, 200);
  driver_loop(m, quiet, seconds_arg(0.5));
  tp_ticks_stop();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  printf("at least 50 ticks: %s; every add landed: %s\n", ticks >= 50 ? "yes" : "no",
         *(volatile int *)target == ticks ? "yes" : "no");
}

static void handler_legal(void) {
  handler(false);
}

static void handler_busy(void) {
  handler(true);
}

/* ---- children that leave through exit() ---- */
static pid_t parent;
static int marks[2] = {-1, -1}; /* each child writes 'a' from atexit, 'd' from its destructor */
static volatile int looping = 1;

static void child_mark(char c) {
  if (getpid() != parent && marks[1] >= 0 && write(marks[1], &c, 1) != 1) _exit(3);
}

static void at_exit_mark(void) {
  child_mark('a');
}

__attribute__((destructor)) static void destructor_mark(void) {
  child_mark('d');
}

/* One place, so that every busy touch is the same finding. */
__attribute__((noinline)) static void touch_busy(int i) {
  ((volatile char *)m)[(size_t)(i % 256) * PAGE] = 1;
}

/* A busy touch depth calls down: each depth is a stack, a finding, of its own. */
__attribute__((noinline)) static int touch_busy_at_depth(int depth, int i) {
  if (depth == 0) {
    touch_busy(i);
    return 0;
  }
  int r = touch_busy_at_depth(depth - 1, i);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

static void *looper(void *arg) {
  (void)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  for (int i = 0; looping || i < 20; i++) {
    tp_launch(s, m);
    touch_busy(i);
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  }
  return NULL;
}

static pid_t raw_clone(void) {
  return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
}

static int wait_child(pid_t pid) {
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void children(pid_t (*make)(void)) {
  int n = tp_argc > 0 ? atoi(tp_argv[0]) : 200, failed = 0;
  parent = getpid();
  if (pipe2(marks, O_CLOEXEC) != 0) perror("tp_exits: pipe"), exit(2);
  fcntl(marks[0], F_SETFL, O_NONBLOCK);
  atexit(at_exit_mark);
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  fflush(stdout);
  pthread_t t;
  pthread_create(&t, NULL, looper, NULL);
  for (int i = 0; i < n; i++) {
    pid_t pid = make();
    if (pid == 0) exit(7);
    failed += wait_child(pid) != 7;
  }
  looping = 0;
  pthread_join(t, NULL);
  int atexits = 0, destructors = 0;
  char buf[4096];
  for (ssize_t r; (r = read(marks[0], buf, sizeof buf)) > 0;)
    for (ssize_t i = 0; i < r; i++)
      atexits += buf[i] == 'a', destructors += buf[i] == 'd';
  printf("%d children, %d did not exit 7; atexit handlers ran %d times, destructors %d times\n", n,
         failed, atexits, destructors);
}

static void fork_exit(void) {
  children(fork);
}

static void fork_underscore_exit(void) {
  children(_Fork);
}

static void clone_exit(void) {
  children(raw_clone);
}

/* ---- a daemon that closes what it did not open ---- */

/* close_range(3, ~0U, 0), as daemons do; on a GPU the driver's own
 * descriptors (/dev/nvidia*) are kept, or the program could not go on. */
static int close_all_but_driver(void) {
  DIR *d = opendir("/proc/self/fd");
  int keep[256], n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char link[64], target[256];
    int fd = atoi(e->d_name);
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (fd > 2 && len > 0 && n < 256 && strncmp(target, "/dev/nvidia", 11) == 0) keep[n++] = fd;
  }
  if (d) closedir(d);
  if (n == 0) return close_range(3, ~0U, 0);
  for (int fd = 3; fd < 4096; fd++) {
    bool kept = false;
    for (int i = 0; i < n; i++)
      kept = kept || keep[i] == fd;
    if (!kept) close(fd);
  }
  return 0;
}
/* Its files take the lowest numbers, those of whatever it closed: each must
 * hold only what the program wrote into it. */
enum { DAEMON_FILES = 8 };

static void daemon_case(void) {
  int n = tp_argc > 0 ? atoi(tp_argv[0]) : 8;
  if (n < 1 || n > 30) fprintf(stderr, "tp_exits: 1 to 30 findings\n"), exit(2);
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  char path[DAEMON_FILES][64];
  int data[DAEMON_FILES];
  for (int f = 0; f < DAEMON_FILES; f++)
    snprintf(path[f], sizeof path[f], "/tmp/tp_exits.daemon.%d.%d", (int)getpid(), f);
  double started = now(), slowest = 0;
  char expected[4096];
  size_t expected_len = 0;
  for (int i = 0; i < n; i++) {
    double step = now();
    tp_launch(s, m);
    touch_busy_at_depth(i, i);
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
    if (i == 0) {
      printf("close_range = %d\n", close_all_but_driver());
      int opened = 0;
      for (int f = 0; f < DAEMON_FILES; f++)
        opened += (data[f] = open(path[f], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0;
      printf("data files opened: %d\n", opened);
    }
    char line[64];
    int len = snprintf(line, sizeof line, "record %d\n", i);
    for (int f = 0; f < DAEMON_FILES; f++)
      if (write(data[f], line, (size_t)len) != len) printf("write of record %d failed\n", i);
    memcpy(expected + expected_len, line, (size_t)len);
    expected_len += (size_t)len;
    double took = now() - step;
    if (took > slowest) slowest = took;
  }
  int clean = 0;
  for (int f = 0; f < DAEMON_FILES; f++) {
    static char back[64 * 1024];
    ssize_t got = pread(data[f], back, sizeof back, 0);
    clean += got == (ssize_t)expected_len && memcmp(back, expected, expected_len) == 0;
    close(data[f]);
    unlink(path[f]);
  }
  printf("data files holding only the program's records: %d of %d\n", clean, DAEMON_FILES);
  printf("no step took a second: %s; the steps took less than 2 s: %s\n",
         slowest < 1.0 ? "yes" : "no", now() - started < 2.0 ? "yes" : "no");
  if (slowest >= 1.0) fprintf(stderr, "tp_exits: the slowest step took %.1f s\n", slowest);
}

/* The shim's record stream is closed with everything else at each round,
 * and opened again at its next record, in the program's lowest numbers
 * before it moves up: a close_range in between would give the program's next
 * file that number. */
static void daemon_storm(void) {
  int rounds = tp_argc > 0 ? atoi(tp_argv[0]) : 200, failed_writes = 0;
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  char path[DAEMON_FILES][64];
  for (int f = 0; f < DAEMON_FILES; f++)
    snprintf(path[f], sizeof path[f], "/tmp/tp_exits.storm.%d.%d", (int)getpid(), f);
  pthread_t t;
  pthread_create(&t, NULL, looper, NULL);
  int data[DAEMON_FILES];
  static char expected[1 << 16];
  size_t expected_len = 0;
  for (int i = 0; i < rounds; i++) {
    close_all_but_driver();
    for (int f = 0; f < DAEMON_FILES; f++)
      data[f] = open(path[f], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    char line[64];
    int len = snprintf(line, sizeof line, "round %d\n", i);
    for (int f = 0; f < DAEMON_FILES; f++)
      failed_writes += write(data[f], line, (size_t)len) != len;
    if (expected_len + (size_t)len <= sizeof expected) {
      memcpy(expected + expected_len, line, (size_t)len);
      expected_len += (size_t)len;
    }
  }
  looping = 0;
  pthread_join(t, NULL);
  int clean = 0;
  for (int f = 0; f < DAEMON_FILES; f++) {
    static char back[1 << 16];
    int fd = open(path[f], O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? pread(fd, back, sizeof back, 0) : -1;
    bool same = got == (ssize_t)expected_len && memcmp(back, expected, expected_len) == 0;
    clean += same;
    size_t at = 0; /* where it first differs: the shim's bytes, if any, say whose they are */
    while (!same && got > 0 && at < (size_t)got && at < expected_len && back[at] == expected[at])
      at++;
    if (!same)
      fprintf(stderr, "tp_exits: file %d: %zd bytes, %zu expected; from byte %zu: %.200s\n", f, got,
              expected_len, at, got > 0 && at < (size_t)got ? back + at : "");
    if (fd >= 0) close(fd);
    unlink(path[f]);
  }
  printf("%d rounds; failed writes: %d; data files holding only the program's lines: %d of %d\n",
         rounds, failed_writes, clean, DAEMON_FILES);
}

static const struct scenario_case cases[] = {
    {"handler_legal", handler_legal},     {"handler_busy", handler_busy}, {"fork_exit", fork_exit},
    {"_Fork_exit", fork_underscore_exit}, {"clone_exit", clone_exit},     {"daemon", daemon_case},
    {"daemon_storm", daemon_storm},
};

TP_MAIN(cases)
