/* secure_prog.c - a program linked with the shim itself (not preloaded: the
 * loader ignores LD_PRELOAD paths in a set-user-ID program), so that a
 * set-user-ID copy of it starts the shim in a secure-exec process. It says
 * whether it runs secure-exec (AT_SECURE). */
#include <stdio.h>
#include <sys/auxv.h>

int main(void) {
  printf("AT_SECURE %lu\n", getauxval(AT_SECURE));
  return 0;
}
