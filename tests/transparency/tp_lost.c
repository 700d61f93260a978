/* tp_lost.c - findings made while the checker's own files cannot be written:
 * none may be lost in silence.
 *
 *   tp_lost nofile        RLIMIT_NOFILE lowered to 16 after CUDA started;
 *                         the program opens /dev/null until it fails (it
 *                         prints how many it got: the checker's descriptors
 *                         must not take the program's), makes findings with
 *                         every descriptor taken, closes its files and makes
 *                         one more
 *   tp_lost full_tmpdir   $TMPDIR is a small file system of its own (the
 *                         ctest fixture mounts one, 1 MiB); after a first
 *                         finding the program fills it, makes findings,
 *                         empties it and makes one more
 *
 * Findings: AC101 at three places (the attach to the legacy stream) and
 * AC202 (a touch while a stream works). A checker must keep every one -
 * retrying, keeping its stream open, writing elsewhere - or, if it cannot,
 * the run must not look clean (attachcheck's CLI exits non-zero and says
 * findings were lost). The transparency runner demands the program's own
 * status, so this table can state only the first: every finding present.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tp.h"

enum { BUF = 1 << 20, SMALL_FS = 16 << 20 };

static CUstream s;
static CUdeviceptr m, a1, a2, a3;

static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  a1 = tp_managed(4096, CU_MEM_ATTACH_GLOBAL);
  a2 = tp_managed(4096, CU_MEM_ATTACH_GLOBAL);
  a3 = tp_managed(4096, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m);
}

/* Called from three places in each case: three findings of AC101. */
static void legacy_attach(CUdeviceptr p) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, p, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
}

/* AC202, found by the page guard and written by its reporter thread. */
static void busy_touch(void) {
  tp_launch(s, m);
  ((volatile char *)m)[0] = 1;
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  usleep(100 * 1000); /* the reporter writes it while the files are still unwritable */
}

static void nofile(void) {
  setup();
  legacy_attach(a1);
  struct rlimit lim = {16, 16};
  printf("setrlimit = %d\n", setrlimit(RLIMIT_NOFILE, &lim));
  int fds[64], n = 0;
  for (; n < 64; n++) {
    fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fds[n] < 0) break;
  }
  printf("opened %d files, then errno %s\n", n, n < 64 ? strerrorname_np(errno) : "-");
  legacy_attach(a2);
  busy_touch();
  for (int i = 0; i < n; i++)
    close(fds[i]);
  legacy_attach(a3);
  printf("done\n");
}

static char filler[4096];

static void full_tmpdir(void) {
  const char *tmp = getenv("TMPDIR");
  struct statvfs fs;
  if (!tmp || statvfs(tmp, &fs) != 0 || (double)fs.f_blocks * fs.f_frsize > SMALL_FS) {
    /* filling a shared /tmp is no test to run: say so, and make no finding */
    fprintf(stderr,
            "tp_lost: TMPDIR (%s) is not a small file system of its own; run this case through "
            "ctest, whose fixture mounts one (as root), or set TMPDIR to one\n",
            tmp ? tmp : "unset");
    printf("no small TMPDIR\n");
    return;
  }
  setup();
  legacy_attach(a1);
  snprintf(filler, sizeof filler, "%s/tp_lost.fill.%d", tmp, (int)getpid());
  int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  static char block[65536];
  ssize_t w;
  while ((w = write(fd, block, sizeof block)) > 0)
    ;
  while ((w = write(fd, block, 1)) > 0) /* the last bytes of the last page */
    ;
  printf("filled TMPDIR: errno %s\n", strerrorname_np(errno));
  legacy_attach(a2);
  busy_touch();
  close(fd);
  unlink(filler);
  legacy_attach(a3);
  printf("done\n");
}

static const struct scenario_case cases[] = {{"nofile", nofile}, {"full_tmpdir", full_tmpdir}};

TP_MAIN(cases)
