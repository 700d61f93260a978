/* stream_prog.c - a program that does to the record stream what runs do to it:
 *
 *   stream_prog fill DIR [free|quit] [N]
 *                                fills the file system of DIR (its TMPDIR),
 *                                then makes a finding (N times: once, then
 *                                repeats); with free, makes room again before
 *                                it exits; with quit, leaves with _exit. DIR
 *                                "-": no file may grow instead (RLIMIT_FSIZE
 *                                of 1 byte, SIGXFSZ ignored)
 *   stream_prog files [hog]      prints how many files it can open before
 *                                any CUDA call; with hog, a finding (AC101),
 *                                then another (AC102) while every descriptor
 *                                is taken, then gives them back and exits
 *   stream_prog finding [STATUS] one finding (AC101), then exit(STATUS)
 *   stream_prog forked           one finding, then a forked child that makes
 *                                none and exits with 0; prints the child's
 *                                status
 *   stream_prog crash            one finding, then killed by SIGKILL
 *   stream_prog torn             under the CLI: writes half a record into its
 *                                own stream and leaves as a killed process
 *                                would, without an end
 *   stream_prog unjudged         under the CLI: writes into its own stream
 *                                the record of 3 CPU accesses the guard let
 *                                through unjudged, and exits with 0
 *   stream_prog late             a finding made in the destructor of a
 *                                library it links (late_lib.c), which runs
 *                                after the shim's own
 *
 * Exit status 0 when every call answered as expected.
 */
#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

void late_lib_attach_at_exit(CUdeviceptr memory);

static CUstream stream;
static CUdeviceptr managed;

static int start(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
      cuMemAllocManaged(&managed, 1 << 16, CU_MEM_ATTACH_GLOBAL))
    return 1;
  return 0;
}

/* Two different findings, from two different lines. */
static void finding_one(void) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, managed, 0, CU_MEM_ATTACH_SINGLE); /* AC101 */
}
static void finding_two(void) {
  cuStreamAttachMemAsync(stream, managed, 4096, CU_MEM_ATTACH_SINGLE); /* AC102 */
}

/* No file may grow (dir "-"), or it may again. */
static int limit_file_size(rlim_t bytes) {
  struct rlimit lim;
  signal(SIGXFSZ, SIG_IGN);
  if (getrlimit(RLIMIT_FSIZE, &lim) != 0) return 1;
  lim.rlim_cur = bytes;
  return setrlimit(RLIMIT_FSIZE, &lim) != 0;
}

/* Writes a file in dir until the file system is full; its path in path. */
static int fill(const char *dir, char *path, size_t len) {
  static char block[4096];
  if (strcmp(dir, "-") == 0) return path[0] = 0, limit_file_size(1);
  snprintf(path, len, "%s/filler", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 1;
  while (write(fd, block, sizeof block) > 0) {
  }
  int full = errno == ENOSPC;
  while (full && write(fd, block, 1) > 0) { /* the last bytes of the last page */
  }
  close(fd);
  return !full;
}

static int fill_then_find(const char *dir, const char *then, long times) {
  char filler[4096];
  if (start()) return 1;
  finding_one();
  if (fill(dir, filler, sizeof filler)) return 1;
  for (long i = 0; i < times; i++)
    finding_two();
  if (strcmp(then, "quit") == 0) _exit(0);
  if (strcmp(then, "free") == 0) return filler[0] ? unlink(filler) : limit_file_size(RLIM_INFINITY);
  return 0;
}

/* Opens /dev/null until it can no more: how many, and the descriptors. */
static int open_all(int *fds, int cap) {
  int n = 0;
  while (n < cap && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
    n++;
  return n;
}

static void close_all(const int *fds, int n) {
  for (int i = 0; i < n; i++)
    close(fds[i]);
}

static int files(int hog) {
  static int fds[1 << 16];
  int n = open_all(fds, 1 << 16);
  close_all(fds, n);
  printf("files %d\n", n);
  fflush(stdout);
  if (!hog) return 0;
  if (start()) return 1;
  finding_one();
  n = open_all(fds, 1 << 16);
  finding_two(); /* no descriptor left for anything */
  close_all(fds, n);
  return 0;
}

/* Half a record at the end of this process's stream in the session folder. */
/* Appends text to the process's own stream under the CLI; false when it
 * cannot. */
static bool append_own(const char *text) {
  const char *session = getenv("ATTACHCHECK_SESSION_DIR");
  char prefix[32], path[4096];
  snprintf(prefix, sizeof prefix, "%d.", (int)getpid());
  DIR *d = session ? opendir(session) : NULL;
  if (!d) return 1;
  path[0] = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
      snprintf(path, sizeof path, "%s/%s", session, e->d_name);
  closedir(d);
  int fd = path[0] ? open(path, O_WRONLY | O_APPEND) : -1;
  bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
  if (fd >= 0) close(fd);
  return ok;
}

static int tear(void) {
  if (!append_own("{\"type\": \"find")) return 1;
  _exit(0);
}

/* The record the page guard writes when it let CPU accesses through
 * unjudged (a reporter that could not keep up, more accesses at once than
 * it keeps for late judging), as the shim writes it. */
static int unjudged(void) {
  char record[200];
  snprintf(record, sizeof record,
           "{\"type\":\"unjudged\",\"pid\":%d,\"accesses\":3,\"why\":\"the reporter could "
           "not keep up\"}\n",
           (int)getpid());
  return append_own(record) ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const char *arg = argc > 2 ? argv[2] : "";
  if (strcmp(mode, "fill") == 0 && argc > 2)
    return fill_then_find(arg, argc > 3 ? argv[3] : "", argc > 4 ? atol(argv[4]) : 1);
  if (strcmp(mode, "files") == 0) return files(strcmp(arg, "hog") == 0);
  if (strcmp(mode, "torn") == 0) return tear();
  if (strcmp(mode, "unjudged") == 0) return unjudged();
  if (strcmp(mode, "late") == 0) {
    if (start()) return 1;
    late_lib_attach_at_exit(managed);
    return 0;
  }
  if (strcmp(mode, "forked") == 0) {
    if (start()) return 1;
    finding_one();
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) exit(0);
    int status = -1;
    waitpid(child, &status, 0);
    printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
  }
  if (strcmp(mode, "finding") == 0 || strcmp(mode, "crash") == 0) {
    if (start()) return 1;
    finding_one();
    if (strcmp(mode, "crash") == 0) raise(SIGKILL);
    exit(atoi(arg));
  }
  fprintf(stderr,
          "usage: stream_prog fill DIR [free|quit] [N]|files [hog]|finding [STATUS]|crash|torn|"
          "unjudged|late|forked\n");
  return 2;
}
