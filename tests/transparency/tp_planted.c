/* tp_planted.c - a file planted in a shared folder where a checker's record
 * stream will be: under plain LD_PRELOAD with ATTACHCHECK_JSON=DIR/REPORT,
 * the stream of process PID is DIR/REPORT.PID.jsonl (report/jsonl.c), a name
 * anyone who can write DIR can predict and make first.
 *
 *   tp_planted stream REPORT
 *
 * The program plays both sides: it forks a child that waits, plants a file
 * at the child's stream name (REPORT relative to the current folder, which is
 * the report's folder in the transparency runner) holding a forged finding
 * (AC105), lets the child make a real one (AC101) and exit, then checks the
 * planted file. A checker must neither adopt the file (the forged finding
 * must not reach the report, the real one must) nor delete or change it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static const char forged[] =
    "{\"type\":\"process\",\"pid\":%d,\"ppid\":1,\"argv\":[\"planted\"]}\n"
    "{\"type\":\"finding\",\"pid\":%d,\"key\":\"0123456789abcdef\",\"rule\":\"AC105\","
    "\"name\":\"attach-invalid-flags\",\"severity\":\"error\",\"api\":\"cuStreamAttachMemAsync\","
    "\"message\":\"a finding planted by another user\"}\n";

static void victim(int go) {
  char byte;
  if (read(go, &byte, 1) != 1) _exit(3);
  tp_start();
  CUdeviceptr p = tp_managed(4096, CU_MEM_ATTACH_GLOBAL);
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, p, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
  exit(finish());
}

static void stream(void) {
  if (tp_argc != 1) fprintf(stderr, "usage: tp_planted stream REPORT\n"), exit(2);
  int go[2];
  if (pipe(go) != 0) perror("tp_planted: pipe"), exit(2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    victim(go[0]);
  }
  close(go[0]);
  char path[4096], content[1024];
  snprintf(path, sizeof path, "%s.%d.jsonl", tp_argv[0], (int)pid);
  int len = snprintf(content, sizeof content, forged, (int)pid, (int)pid);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  printf("planted: %s\n", fd >= 0 && write(fd, content, (size_t)len) == len ? "yes" : "no");
  if (fd >= 0) close(fd);
  if (write(go[1], "g", 1) != 1) perror("tp_planted: go");
  close(go[1]);
  int st = 0;
  waitpid(pid, &st, 0);
  printf("the child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  char back[1024];
  fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, back, sizeof back) : -1;
  printf("the planted file is still there: %s; unchanged: %s\n", fd >= 0 ? "yes" : "no",
         n == len && memcmp(back, content, (size_t)len) == 0 ? "yes" : "no");
  if (fd >= 0) close(fd);
  unlink(path);
}

static const struct scenario_case cases[] = {{"stream", stream}};

TP_MAIN(cases)
