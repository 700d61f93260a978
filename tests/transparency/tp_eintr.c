/* tp_eintr.c - blocking calls that a handled signal cuts short whatever
 * SA_RESTART says (man 7 signal, "Interruption of system calls and library
 * functions by signal handlers"), made by a thread that used managed memory
 * while the main thread's kernels turn that memory busy and idle again and
 * again, so every transition of a checker's guard happens during the call.
 *
 *   tp_eintr CALL [SECONDS]
 *
 * The program installs no signal handler (pause, sigsuspend and raw_ppoll,
 * which wait for a handled signal, install one for SIGUSR1, the signal the
 * main thread sends to end them), so no call may ever fail with EINTR: a
 * timed call runs its whole time (SECONDS, 0.2 by default) and returns its
 * timeout; a call that waits for the main thread (semop, msgrcv, recvmmsg)
 * returns what the main thread sent; a pause-like call returns once, for
 * SIGUSR1. The calls are libc's System V IPC, socket and asynchronous I/O
 * calls, and raw syscall()s, which no interposed symbol sees, of the waits
 * a checker may wrap in libc (nanosleep, epoll_wait, rt_sigtimedwait, futex).
 */
#define _GNU_SOURCE
#include <linux/aio_abi.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tp.h"

enum { BUF = 1 << 20, KERNEL_SIGSET = 8 };

static double wait_s = 0.2;
static CUstream s;
static CUdeviceptr m;
static sem_t go, ready;
static volatile int done;
static pthread_t waiter_thread;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec wait_ts(void) {
  struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
  return ts;
}

static int wait_ms(void) {
  return (int)(wait_s * 1000);
}

/* One line per call: its result and errno, and for a timed call whether it
 * lasted its whole time (a call cut short and restarted by a checker would
 * still return early with a relative timeout). */
static void result(const char *what, long r, int err, double took, bool timed) {
  printf("%s = %ld errno %s", what, r, r < 0 ? strerrorname_np(err) : "-");
  if (timed) printf(", its whole time: %s", took >= wait_s * 0.95 ? "yes" : "no");
  printf("\n");
}

/* ---- the calls: prepare (main thread), call (waiter), wake (main thread) ---- */

static int semid = -1, msqid = -1, sock[2] = {-1, -1}, epfd = -1;
static aio_context_t aio;
static uint32_t futex_word;
static volatile sig_atomic_t woken;

static void on_usr1(int sig) {
  (void)sig;
  woken = 1;
}

static void prepare_sem(void) {
  semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
  if (semid < 0) perror("tp_eintr: semget"), exit(2);
}

static long call_semop(void) {
  struct sembuf op = {0, -1, 0};
  return semop(semid, &op, 1);
}

static long call_semtimedop(void) {
  struct sembuf op = {0, -1, 0};
  struct timespec ts = wait_ts();
  return semtimedop(semid, &op, 1, &ts);
}

static void wake_sem(void) {
  struct sembuf op = {0, 1, 0};
  if (semop(semid, &op, 1) != 0) perror("tp_eintr: semop +1");
}

struct message {
  long type;
  char text[16];
};

static void prepare_msg(void) {
  msqid = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  if (msqid < 0) perror("tp_eintr: msgget"), exit(2);
}

static long call_msgrcv(void) {
  struct message msg;
  return msgrcv(msqid, &msg, sizeof msg.text, 0, 0);
}

static void wake_msg(void) {
  struct message msg = {1, "wake"};
  if (msgsnd(msqid, &msg, 5, 0) != 0) perror("tp_eintr: msgsnd");
}

static void prepare_stream_socket(void) {
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0) perror("tp_eintr: socketpair"), exit(2);
  struct timeval tv = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e6)};
  if (setsockopt(sock[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
    perror("tp_eintr: SO_RCVTIMEO"), exit(2);
}

static long call_recv(void) {
  char buf[16];
  return recv(sock[0], buf, sizeof buf, 0);
}

/* With a receive timeout, which makes recvmmsg one of the calls a handled
 * signal always cuts short; long enough for the main thread's datagram. */
static void prepare_datagram_socket(void) {
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sock) != 0) perror("tp_eintr: socketpair"), exit(2);
  struct timeval tv = {(time_t)(wait_s * 20) + 1, 0};
  if (setsockopt(sock[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
    perror("tp_eintr: SO_RCVTIMEO"), exit(2);
}

static long call_recvmmsg(void) {
  char buf[16];
  struct iovec iov = {buf, sizeof buf};
  struct mmsghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_hdr.msg_iov = &iov;
  msg.msg_hdr.msg_iovlen = 1;
  return recvmmsg(sock[0], &msg, 1, 0, NULL);
}

static void wake_socket(void) {
  if (send(sock[1], "wake", 5, 0) != 5) perror("tp_eintr: send");
}

static long call_raw_nanosleep(void) {
  struct timespec ts = wait_ts();
  return syscall(SYS_nanosleep, &ts, NULL);
}

static long call_raw_clock_nanosleep(void) {
  struct timespec ts = wait_ts();
  return syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

static void prepare_epoll(void) {
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0)
    perror("tp_eintr: epoll"), exit(2);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = sock[0]};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, sock[0], &ev) != 0) perror("tp_eintr: epoll_ctl"), exit(2);
}

static long call_raw_epoll_wait(void) {
  struct epoll_event ev[4];
#ifdef SYS_epoll_wait
  return syscall(SYS_epoll_wait, epfd, ev, 4, wait_ms());
#else /* aarch64 has only epoll_pwait */
  return syscall(SYS_epoll_pwait, epfd, ev, 4, wait_ms(), NULL, KERNEL_SIGSET);
#endif
}

static long call_raw_epoll_pwait(void) {
  struct epoll_event ev[4];
  sigset_t none;
  sigemptyset(&none);
  return syscall(SYS_epoll_pwait, epfd, ev, 4, wait_ms(), &none, KERNEL_SIGSET);
}

static long call_raw_rt_sigtimedwait(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  struct timespec ts = wait_ts();
  return syscall(SYS_rt_sigtimedwait, &set, NULL, &ts, KERNEL_SIGSET);
}

static long call_raw_futex(void) {
  struct timespec ts = wait_ts();
  return syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static void prepare_aio(void) {
  long r = syscall(SYS_io_setup, 4, &aio);
  printf("io_setup = %ld errno %s\n", r, r < 0 ? strerrorname_np(errno) : "-");
  if (r != 0) exit(2);
}

static long call_io_getevents(void) {
  struct io_event ev[1];
  struct timespec ts = wait_ts();
  return syscall(SYS_io_getevents, aio, 1, 1, ev, &ts);
}

/* The pause-like waits end only for a handled signal: the program's SIGUSR1. */
static void prepare_usr1(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
}

static void wake_usr1(void) {
  pthread_kill(waiter_thread, SIGUSR1);
}

/* How many times the wait returned until SIGUSR1's handler had run: once
 * bare, for SIGUSR1; each more is a wait cut short by someone else's signal. */
static long returns_until_woken(long (*wait)(void)) {
  long n = 0;
  while (!woken) {
    long r = wait();
    if (r != -1 || errno != EINTR)
      printf("the wait returned %ld errno %s\n", r, strerrorname_np(errno));
    n++;
  }
  return n;
}

static long one_pause(void) {
  return pause();
}

static long call_pause(void) {
  return returns_until_woken(one_pause);
}

static long one_raw_ppoll(void) {
  return syscall(SYS_ppoll, NULL, 0, NULL, NULL, KERNEL_SIGSET);
}

static long call_raw_ppoll(void) {
  return returns_until_woken(one_raw_ppoll);
}

static long one_sigsuspend(void) {
  sigset_t none;
  sigemptyset(&none);
  return sigsuspend(&none);
}

/* SIGUSR1 stays blocked outside sigsuspend: it is taken only there. */
static long call_sigsuspend(void) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  return returns_until_woken(one_sigsuspend);
}

struct blocking_call {
  const char *name;
  void (*prepare)(void);
  long (*call)(void);
  void (*wake)(void); /* NULL: the call ends by its timeout */
  bool counts_returns;
};

static const struct blocking_call calls[] = {
    {"semop", prepare_sem, call_semop, wake_sem, false},
    {"semtimedop", prepare_sem, call_semtimedop, NULL, false},
    {"msgrcv", prepare_msg, call_msgrcv, wake_msg, false},
    {"recv_timeout", prepare_stream_socket, call_recv, NULL, false},
    {"recvmmsg", prepare_datagram_socket, call_recvmmsg, wake_socket, false},
    {"raw_nanosleep", NULL, call_raw_nanosleep, NULL, false},
    {"raw_clock_nanosleep", NULL, call_raw_clock_nanosleep, NULL, false},
    {"raw_epoll_wait", prepare_epoll, call_raw_epoll_wait, NULL, false},
    {"raw_epoll_pwait", prepare_epoll, call_raw_epoll_pwait, NULL, false},
    {"raw_rt_sigtimedwait", NULL, call_raw_rt_sigtimedwait, NULL, false},
    {"raw_futex", NULL, call_raw_futex, NULL, false},
    {"io_getevents", prepare_aio, call_io_getevents, NULL, false},
    {"pause", prepare_usr1, call_pause, wake_usr1, true},
    {"raw_ppoll", prepare_usr1, call_raw_ppoll, wake_usr1, true},
    {"sigsuspend", prepare_usr1, call_sigsuspend, wake_usr1, true},
};

static const struct blocking_call *chosen;

static void *waiter(void *arg) {
  (void)arg;
  sem_wait(&go);
  /* It uses the memory while idle: a guard now counts it among the threads
   * that hold the memory, and has to take it back from it. */
  tp_fill((void *)m, 4096, 3);
  sem_post(&ready);
  double started = now();
  errno = 0;
  long r = chosen->call();
  int err = errno;
  double took = now() - started;
  if (chosen->counts_returns)
    printf("%s returned %ld time(s), the last for SIGUSR1\n", chosen->name, r);
  else
    result(chosen->name, r, err, took, chosen->wake == NULL);
  done = 1;
  return NULL;
}

static void run(const char *name) {
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
    if (strcmp(calls[i].name, name) == 0) chosen = &calls[i];
  if (!chosen) fprintf(stderr, "tp_eintr: unknown call %s\n", name), exit(2);
  if (tp_argc > 0) wait_s = atof(tp_argv[0]);
  /* The waiter is made before CUDA starts, so that its first touch is one a
   * guard sees: a thread made later starts with a copy of its creator's
   * protection-key register, which may let the memory through unseen
   * (tp_unregistered tests that). */
  sem_init(&go, 0, 0);
  sem_init(&ready, 0, 0);
  pthread_create(&waiter_thread, NULL, waiter, NULL);
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m);
  if (chosen->prepare) chosen->prepare();
  sem_post(&go);
  sem_wait(&ready);
  /* a moment for the waiter to enter its call: a transition before that
   * would reach it outside the call */
  usleep(50 * 1000);
  /* Busy and idle, over and over, until the call is over; the waker's turn
   * comes after 1.5 waits, well inside the call. */
  double started = now();
  bool woke = false;
  long rounds = 0;
  while (!done) {
    tp_idle_after_work(s, m);
    rounds++;
    if (!woke && chosen->wake && now() - started >= wait_s * 1.5) chosen->wake(), woke = true;
  }
  pthread_join(waiter_thread, NULL);
  printf("memory turned busy and idle during the call: %s\n", rounds >= 2 ? "yes" : "no");
  if (semid >= 0) semctl(semid, 0, IPC_RMID);
  if (msqid >= 0) msgctl(msqid, IPC_RMID, NULL);
  if (aio) syscall(SYS_io_destroy, aio);
}

/* Each call is its own case; TP_MAIN looks it up in this table. */
#define CALL_CASE(Name)                                                                            \
  static void case_##Name(void) {                                                                  \
    run(#Name);                                                                                    \
  }
CALL_CASE(semop)
CALL_CASE(semtimedop)
CALL_CASE(msgrcv)
CALL_CASE(recv_timeout)
CALL_CASE(recvmmsg)
CALL_CASE(raw_nanosleep)
CALL_CASE(raw_clock_nanosleep)
CALL_CASE(raw_epoll_wait)
CALL_CASE(raw_epoll_pwait)
CALL_CASE(raw_rt_sigtimedwait)
CALL_CASE(raw_futex)
CALL_CASE(io_getevents)
CALL_CASE(pause)
CALL_CASE(raw_ppoll)
CALL_CASE(sigsuspend)

static const struct scenario_case cases[] = {
    {"semop", case_semop},
    {"semtimedop", case_semtimedop},
    {"msgrcv", case_msgrcv},
    {"recv_timeout", case_recv_timeout},
    {"recvmmsg", case_recvmmsg},
    {"raw_nanosleep", case_raw_nanosleep},
    {"raw_clock_nanosleep", case_raw_clock_nanosleep},
    {"raw_epoll_wait", case_raw_epoll_wait},
    {"raw_epoll_pwait", case_raw_epoll_pwait},
    {"raw_rt_sigtimedwait", case_raw_rt_sigtimedwait},
    {"raw_futex", case_raw_futex},
    {"io_getevents", case_io_getevents},
    {"pause", case_pause},
    {"raw_ppoll", case_raw_ppoll},
    {"sigsuspend", case_sigsuspend},
};

TP_MAIN(cases)
