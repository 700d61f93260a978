/* tp_syscalls.c - system calls and libc I/O whose buffers, paths and control
 * structures lie in managed memory.
 *
 *   tp_syscalls CASE
 *
 * In the right cases the memory is idle (its stream synchronised) when the
 * call runs: the kernel must see exactly what it sees without attachcheck,
 * so each case prints the call's result, errno and a checksum of the bytes
 * moved. The busy_* cases make the call while the stream still works: the
 * call must still succeed as it does bare, and attachcheck reports it.
 * libraries_after_finding prints which of the libraries a symboliser could
 * drag in (debuginfod, libcurl, OpenSSL) are mapped after a finding.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tp.h"

enum { MIB = 1 << 20 };

static CUstream s;
static CUdeviceptr m;
static char path[64];

/* A 1 MiB file of the pattern, its name in path. */
static int pattern_file(void) {
  static char data[MIB];
  strcpy(path, "/tmp/tp_syscalls.XXXXXX");
  int fd = mkstemp(path);
  tp_fill(data, MIB, 7);
  if (fd < 0 || write(fd, data, MIB) != MIB) perror("tp_syscalls: pattern file"), exit(2);
  lseek(fd, 0, SEEK_SET);
  printf("pattern sum %08x\n", tp_sum(data, MIB));
  return fd;
}

/* CUDA up, 1 MiB of globally attached managed memory idle after a launch. */
static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(MIB, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m);
}

static void result(const char *what, long r) {
  printf("%s = %ld errno %s\n", what, r, r < 0 ? strerrorname_np(errno) : "-");
}

static void done(int fd) {
  close(fd);
  unlink(path);
}

static void fread_fwrite(void) {
  setup();
  int fd = pattern_file();
  FILE *in = fdopen(fd, "r");
  result("fread", (long)fread((void *)m, 1, MIB, in));
  printf("sum %08x\n", tp_sum((void *)m, MIB));
  FILE *out = tmpfile();
  result("fwrite", (long)fwrite((void *)m, 1, MIB, out));
  result("fflush", fflush(out));
  static char back[MIB];
  rewind(out);
  result("fread back", (long)fread(back, 1, MIB, out));
  printf("back sum %08x\n", tp_sum(back, MIB));
  fclose(out);
  fclose(in);
  unlink(path);
}

static void plain_read(void) {
  setup();
  int fd = pattern_file();
  result("read", read(fd, (void *)m, MIB));
  printf("sum %08x\n", tp_sum((void *)m, MIB));
  done(fd);
}

static void plain_pread(void) {
  setup();
  int fd = pattern_file();
  result("pread", pread(fd, (void *)(m + 4096), MIB / 2, 1000));
  printf("sum %08x\n", tp_sum((void *)(m + 4096), MIB / 2));
  done(fd);
}

/* The iovec array itself lies in managed memory too. */
static void vectored(void) {
  setup();
  int fd = pattern_file();
  struct iovec *iov = (struct iovec *)m;
  char *buf = (char *)m + 4096;
  for (int i = 0; i < 4; i++)
    iov[i] = (struct iovec){buf + i * 65536, 65536};
  result("readv", readv(fd, iov, 4));
  printf("sum %08x\n", tp_sum(buf, 4 * 65536));
  result("preadv", preadv(fd, iov, 4, 12345));
  printf("sum %08x\n", tp_sum(buf, 4 * 65536));
  result("pwritev", pwritev(fd, iov, 2, 0));
  static char back[2 * 65536];
  result("pread back", pread(fd, back, sizeof back, 0));
  printf("back sum %08x\n", tp_sum(back, sizeof back));
  done(fd);
}

/* msghdr, iovec and data all in managed memory, over a socketpair. */
static void socket_messages(void) {
  setup();
  int sv[2];
  result("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
  struct msghdr *msg = (struct msghdr *)m;
  struct iovec *iov = (struct iovec *)(m + 256);
  char *data = (char *)m + 4096;
  tp_fill(data, 8192, 3);
  *iov = (struct iovec){data, 8192};
  *msg = (struct msghdr){.msg_iov = iov, .msg_iovlen = 1};
  result("sendmsg", sendmsg(sv[0], msg, 0));
  memset(data, 0, 8192);
  result("recvmsg", recvmsg(sv[1], msg, MSG_WAITALL));
  printf("sum %08x\n", tp_sum(data, 8192));
  close(sv[0]);
  close(sv[1]);
}

static void random_bytes(void) {
  setup();
  result("getrandom", getrandom((void *)m, 4096, 0));
}

static void raw_syscall(void) {
  setup();
  int fd = pattern_file();
  result("syscall(SYS_read)", syscall(SYS_read, fd, (void *)m, 65536));
  printf("sum %08x\n", tp_sum((void *)m, 65536));
  done(fd);
}

/* The path given to stat and open lies in managed memory. */
static void path_in_managed(void) {
  setup();
  int fd = pattern_file();
  close(fd);
  strcpy((char *)m, path);
  struct stat st;
  result("stat", stat((char *)m, &st));
  printf("size %lld\n", (long long)st.st_size);
  fd = open((char *)m, O_RDONLY);
  result("open >= 0", fd >= 0 ? 0 : -1);
  done(fd);
}

static void cwd_into_managed(void) {
  setup();
  char here[4096];
  char *r = getcwd((char *)m, 4096);
  printf("getcwd %s errno %s\n", r ? "ok" : "NULL", r ? "-" : strerrorname_np(errno));
  printf("same as a stack buffer: %d\n", r && strcmp(r, getcwd(here, sizeof here)) == 0);
}

static void fstat_into_managed(void) {
  setup();
  int fd = pattern_file();
  struct stat *st = (struct stat *)m;
  result("fstat", fstat(fd, st));
  printf("size %lld mode %o\n", (long long)st->st_size, st->st_mode & 0777);
  done(fd);
}

static void poll_managed(void) {
  setup();
  int p[2];
  result("pipe", pipe(p));
  result("write", write(p[1], "x", 1));
  struct pollfd *fds = (struct pollfd *)m;
  fds[0] = (struct pollfd){.fd = p[0], .events = POLLIN};
  fds[1] = (struct pollfd){.fd = p[1], .events = POLLOUT};
  result("poll", poll(fds, 2, 1000));
  printf("revents %x %x\n", fds[0].revents, fds[1].revents);
  close(p[0]);
  close(p[1]);
}

static void splice_managed(void) {
  setup();
  int p[2];
  result("pipe", pipe(p));
  tp_fill((void *)m, 16384, 5);
  struct iovec iov = {(void *)m, 16384};
  result("vmsplice", vmsplice(p[1], &iov, 1, 0));
  static char back[16384];
  result("read", read(p[0], back, sizeof back));
  printf("sum %08x\n", tp_sum(back, sizeof back));
  close(p[0]);
  close(p[1]);
}

/* ---- wrong: the stream still works on the memory ---- */
static void busy_read_global(void) {
  setup();
  int fd = pattern_file();
  tp_launch(s, m);
  result("read", read(fd, (void *)m, 65536)); /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("sum %08x\n", tp_sum((void *)m, 65536));
  done(fd);
}

static void busy_read_single(void) {
  setup();
  int fd = pattern_file();
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  tp_idle_after_work(s, m);
  tp_launch(s, m);
  result("read", read(fd, (void *)m, 65536)); /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("sum %08x\n", tp_sum((void *)m, 65536));
  done(fd);
}

/* Which libraries the process has mapped of those a symboliser could drag
 * in (debuginfod's client, and libcurl and OpenSSL under it): printed, so a
 * checked run that loads any of them differs from the bare one. */
static void attach_single_to_legacy(void) {
  printf("cuStreamAttachMemAsync %d\n",
         cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, m, 0, CU_MEM_ATTACH_SINGLE)); /* AC101 */
}

void tp_call_through(void (*fn)(void)); /* tp_stripped_lib.c */

static void libraries_after_finding(void) {
  setup();
  tp_call_through(attach_single_to_legacy); /* the finding's stack has a stripped frame */
  static const char *const watched[] = {"libdebuginfod", "libcurl", "libssl", "libcrypto"};
  char line[4096];
  FILE *maps = fopen("/proc/self/maps", "r");
  bool seen[sizeof watched / sizeof watched[0]] = {false};
  while (maps && fgets(line, sizeof line, maps))
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
      if (strstr(line, watched[i])) seen[i] = true;
  if (maps) fclose(maps);
  for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
    if (seen[i]) printf("mapped: %s\n", watched[i]);
}

static const struct scenario_case cases[] = {
    {"fread_fwrite", fread_fwrite},
    {"read", plain_read},
    {"pread", plain_pread},
    {"vectored", vectored},
    {"socket_messages", socket_messages},
    {"getrandom", random_bytes},
    {"raw_syscall", raw_syscall},
    {"path_in_managed", path_in_managed},
    {"getcwd", cwd_into_managed},
    {"fstat", fstat_into_managed},
    {"poll", poll_managed},
    {"vmsplice", splice_managed},
    {"busy_read_global", busy_read_global},
    {"busy_read_single", busy_read_single},
    {"libraries_after_finding", libraries_after_finding},
};

TP_MAIN(cases)
