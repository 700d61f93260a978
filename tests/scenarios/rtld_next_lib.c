/* rtld_next_lib.c - a library that interposes a function and finds the one it
 * interposes with dlsym(RTLD_NEXT), as OpenMP runtimes and profilers do. With
 * the shim's dlsym in front, RTLD_NEXT must still mean "after this library". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

pid_t getpid(void) {
  return -42;
}

int rtld_next_finds_libc(void) {
  pid_t (*next)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
  return next && next != getpid && next() > 0;
}
