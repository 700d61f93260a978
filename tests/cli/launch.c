/* launch.c - a stand-in for a job launcher, for the report tests:
 *
 *   launch N PROGRAM [ARGS...]   runs N copies of PROGRAM, one after another
 *
 * It is built for the machine the tests run on (a shell would be the build
 * machine's under qemu, which cannot load the aarch64 shim). Exit status:
 * the first copy's status that was not 0, else 0.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: launch N PROGRAM [ARGS...]\n");
    return 2;
  }
  int first_failure = 0;
  for (int i = 0; i < atoi(argv[1]); i++) {
    pid_t pid;
    int status = 0;
    if (posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0 ||
        waitpid(pid, &status, 0) != pid)
      return 127;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!first_failure) first_failure = code;
  }
  return first_failure;
}
