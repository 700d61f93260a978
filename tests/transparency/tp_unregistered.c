/* tp_unregistered.c - threads a checker never saw being made: the thread
 * pool made after the first kernel, a thread made before CUDA started, and
 * more threads than a fixed table holds. A checker that follows threads
 * (protection keys are per thread) must know each from its first
 * instruction.
 *
 *   tp_unregistered pool_wrong     a worker made after the first kernel, when
 *                                  the main thread had touched the memory,
 *                                  touches it while a kernel runs (AC202)
 *   tp_unregistered pool_right     the same worker touches it after the sync
 *   tp_unregistered early_syscalls a thread made before any CUDA call hands
 *                                  idle managed memory to system calls the
 *                                  checker cannot see (raw syscall(), stat,
 *                                  uname, process_vm_readv...): each must
 *                                  succeed as bare (no EFAULT)
 *   tp_unregistered many_threads [N]  N (1,100) short-lived threads, one after
 *                                  the other, each touches its own page of
 *                                  busy memory once: N findings of AC202
 *   tp_unregistered many_alive [N] the same with all N threads alive at once
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "tp.h"

enum { PAGE = 4096, BUF = 1 << 20 };

static CUstream s;
static CUdeviceptr m;
static sem_t go, done;

static void setup(size_t size) {
  tp_start();
  s = tp_stream();
  m = tp_managed(size, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m); /* the first kernel: the guard is up */
}

/* ---- a thread pool made after the first kernel ---- */
static int pool_read;

static void *pool_worker(void *arg) {
  (void)arg;
  sem_wait(&go);
  ((volatile char *)m)[PAGE] = 7;
  pool_read = ((volatile char *)m)[PAGE];
  sem_post(&done);
  return NULL;
}

static void pool(int wrong) {
  pthread_t t;
  setup(BUF);
  sem_init(&go, 0, 0);
  sem_init(&done, 0, 0);
  /* The main thread uses the memory while idle: with protection keys its
   * register lets the memory's key through, and a thread it makes now
   * starts with a copy of that register. */
  ((volatile char *)m)[0] = 1;
  pthread_create(&t, NULL, pool_worker, NULL);
  tp_launch(s, m);
  if (!wrong) EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sem_post(&go);
  sem_wait(&done);
  if (wrong) EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  pthread_join(t, NULL);
  printf("the worker read back %d\n", pool_read);
}

static void pool_wrong(void) {
  pool(1);
}

static void pool_right(void) {
  pool(0);
}

/* ---- a thread made before CUDA hands idle managed memory to the kernel ----
 *
 * The main thread lays out every buffer, path and control structure in m;
 * the early thread then makes only system calls on them, and reads nothing
 * of m itself until all are made: a touch of its own would teach a guard
 * that follows threads about it, and the calls after would pass whatever the
 * guard does for threads it does not know. */
static char pattern_path[64];
static int early_fd, early_null, early_sv[2], early_pipe[2];
static char remote[PAGE];

struct call_result {
  const char *what;
  long r;
  int err;
};
static struct call_result results[32];
static int nresults;

static void note(const char *what, long r) {
  results[nresults++] = (struct call_result){what, r, r < 0 ? errno : 0};
}

/* Offsets into m, one page per call, so no two calls share a buffer. */
static char *at(int page) {
  return (char *)m + (size_t)page * PAGE;
}

/* Main thread, memory idle: what the calls read. */
static void lay_out_early(void) {
  early_fd = open(pattern_path, O_RDONLY | O_CLOEXEC);
  early_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  struct iovec *wv = (struct iovec *)at(2);
  wv[0] = (struct iovec){at(0), 100};
  wv[1] = (struct iovec){at(1), 200};
  strcpy(at(4), pattern_path);
  snprintf(at(5), PAGE, "%s.link", pattern_path);
  if (symlink("tp-unregistered-target", at(5)) != 0) perror("tp_unregistered: symlink");
  socketpair(AF_UNIX, SOCK_DGRAM, 0, early_sv);
  send(early_sv[1], "hello", 5, 0);
  struct mmsghdr *mm = (struct mmsghdr *)at(9);
  struct iovec *riov = (struct iovec *)at(10);
  memset(mm, 0, sizeof *mm);
  riov[0] = (struct iovec){at(11), 64};
  mm->msg_hdr.msg_iov = riov;
  mm->msg_hdr.msg_iovlen = 1;
  tp_fill(remote, PAGE, 11);
  ((struct iovec *)at(12))[0] = (struct iovec){at(13), PAGE};
  /* non-blocking: a vmsplice that failed must not leave the read back waiting */
  if (pipe2(early_pipe, O_CLOEXEC | O_NONBLOCK) != 0) perror("tp_unregistered: pipe"), exit(2);
  tp_fill(at(16), PAGE, 13);
  ((struct iovec *)at(15))[0] = (struct iovec){at(16), PAGE};
  ((struct pollfd *)at(17))[0] = (struct pollfd){.fd = early_pipe[0], .events = POLLIN};
  *(struct timespec *)at(25) = (struct timespec){0, 1000};
}

/* Early thread: system calls only. */
static void early_calls(void) {
  errno = 0, note("raw read", syscall(SYS_read, early_fd, at(0), PAGE));
  errno = 0, note("raw pread64", syscall(SYS_pread64, early_fd, at(1), PAGE, 2 * PAGE + 100));
  errno = 0, note("raw write", syscall(SYS_write, early_null, at(0), PAGE));
  errno = 0,
  note("raw writev (iovec in managed memory)", syscall(SYS_writev, early_null, at(2), 2));
  errno = 0, note("fstat", fstat(early_fd, (struct stat *)at(3)));
  errno = 0, note("stat (path and struct in managed memory)", stat(at(4), (struct stat *)at(3)));
  errno = 0, note("readlink (path and buffer in managed memory)", readlink(at(5), at(6), PAGE));
  errno = 0, note("uname", uname((struct utsname *)at(7)));
  errno = 0, note("getcwd", getcwd(at(8), PAGE) ? 0 : -1);
  errno = 0,
  note("recvmmsg", recvmmsg(early_sv[0], (struct mmsghdr *)at(9), 1, MSG_DONTWAIT, NULL));
  struct iovec rem = {remote, PAGE};
  errno = 0,
  note("process_vm_readv", process_vm_readv(getpid(), (struct iovec *)at(12), 1, &rem, 1, 0));
  errno = 0, note("vmsplice", vmsplice(early_pipe[1], (struct iovec *)at(15), 1, 0));
  errno = 0, note("pipe2 (descriptors into managed memory)", pipe2((int *)at(14), O_CLOEXEC));
  errno = 0, note("poll (pollfd in managed memory)", poll((struct pollfd *)at(17), 1, 0));
  errno = 0, note("raw getrandom", syscall(SYS_getrandom, at(18), 64, 0));
  errno = 0,
  note("raw clock_gettime", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (struct timespec *)at(19)));
  errno = 0, note("sysinfo", sysinfo((struct sysinfo *)at(20)));
  errno = 0, note("getrusage", getrusage(RUSAGE_SELF, (struct rusage *)at(21)));
  errno = 0, note("prlimit (old limit into managed memory)",
                  prlimit(0, RLIMIT_NOFILE, NULL, (struct rlimit *)at(22)));
  errno = 0, note("socketpair (descriptors into managed memory)",
                  socketpair(AF_UNIX, SOCK_STREAM, 0, (int *)at(23)));
  errno = 0, note("sched_getaffinity", sched_getaffinity(0, 128, (cpu_set_t *)at(24)));
  errno = 0,
  note("nanosleep (timespec in managed memory)", nanosleep((struct timespec *)at(25), NULL));
}

/* Early thread, after every call: what they left. */
static void early_report(void) {
  for (int i = 0; i < nresults; i++)
    printf("%s = %ld errno %s\n", results[i].what, results[i].r,
           results[i].r < 0 ? strerrorname_np(results[i].err) : "-");
  char here[PATH_MAX];
  struct utsname *u = (struct utsname *)at(7);
  struct mmsghdr *mm = (struct mmsghdr *)at(9);
  static char back[PAGE];
  ssize_t n = read(early_pipe[0], back, PAGE);
  printf("read %08x, pread %08x, fstat and stat size %lld, readlink %.22s, sysname %s\n",
         tp_sum(at(0), PAGE), tp_sum(at(1), PAGE), (long long)((struct stat *)at(3))->st_size,
         at(6), u->sysname);
  printf("getcwd as into private memory: %s; recvmmsg %u bytes %.5s\n",
         getcwd(here, sizeof here) && strcmp(here, at(8)) == 0 ? "yes" : "no", mm->msg_len, at(11));
  printf("process_vm_readv %08x (the source's %08x); vmsplice read back %zd, %08x\n",
         tp_sum(at(13), PAGE), tp_sum(remote, PAGE), n, tp_sum(back, PAGE));
  unlink(at(5));
  close(((int *)at(14))[0]), close(((int *)at(14))[1]);
  close(((int *)at(23))[0]), close(((int *)at(23))[1]);
  close(early_fd), close(early_null), close(early_sv[0]), close(early_sv[1]);
  close(early_pipe[0]), close(early_pipe[1]);
}

static void *early_thread(void *arg) {
  (void)arg;
  sem_wait(&go);
  early_calls();
  early_report();
  return NULL;
}

static void early_syscalls(void) {
  pthread_t t;
  sem_init(&go, 0, 0);
  /* Made before anything of CUDA: with protection keys, before the guard
   * took any key. */
  pthread_create(&t, NULL, early_thread, NULL);
  static char data[4 * PAGE];
  strcpy(pattern_path, "/tmp/tp_unregistered.XXXXXX");
  int fd = mkstemp(pattern_path);
  tp_fill(data, sizeof data, 7);
  if (fd < 0 || write(fd, data, sizeof data) != (ssize_t)sizeof data)
    perror("tp_unregistered: pattern file"), exit(2);
  close(fd);
  setup(BUF);
  lay_out_early();
  sem_post(&go);
  pthread_join(t, NULL);
  unlink(pattern_path);
}

/* ---- many threads, each touching its own page of busy memory once ---- */
static pthread_barrier_t all_touched;

static void *toucher(void *arg) {
  ((volatile char *)m)[(size_t)(intptr_t)arg * PAGE] = 1;
  return NULL;
}

static void *toucher_staying(void *arg) {
  toucher(arg);
  pthread_barrier_wait(&all_touched);
  return NULL;
}

static int thread_count(void) {
  int n = tp_argc > 0 ? atoi(tp_argv[0]) : 1100;
  if (n < 1 || n > 100000) fprintf(stderr, "tp_unregistered: 1 to 100000 threads\n"), exit(2);
  return n;
}

static pthread_attr_t small_stack(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  return attr;
}

static void many_threads(void) {
  int n = thread_count(), made = 0;
  setup((size_t)n * PAGE);
  tp_launch(s, m); /* busy until the end */
  pthread_attr_t attr = small_stack();
  for (int i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, toucher, (void *)(intptr_t)i) == 0) made++, pthread_join(t, NULL);
  }
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("%d threads made, each touched busy memory once\n", made);
}

static void many_alive(void) {
  int n = thread_count(), made = 0;
  pthread_t *t = calloc((size_t)n, sizeof *t);
  setup((size_t)n * PAGE);
  pthread_barrier_init(&all_touched, NULL, (unsigned)n + 1);
  tp_launch(s, m);
  pthread_attr_t attr = small_stack();
  for (int i = 0; i < n; i++)
    made += pthread_create(&t[i], &attr, toucher_staying, (void *)(intptr_t)i) == 0;
  if (made != n) fprintf(stderr, "tp_unregistered: only %d threads\n", made), exit(2);
  pthread_barrier_wait(&all_touched);
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("%d threads alive at once, each touched busy memory once\n", made);
  free(t);
}

static const struct scenario_case cases[] = {
    {"pool_wrong", pool_wrong},     {"pool_right", pool_right}, {"early_syscalls", early_syscalls},
    {"many_threads", many_threads}, {"many_alive", many_alive},
};

TP_MAIN(cases)
