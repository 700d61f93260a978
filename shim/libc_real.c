/* libc_real.c - the C library's definitions behind the shim's exports,
 * resolved once at load (libc_real.h says why). */
#include "libc_real.h"

#include <string.h>

#include "shim.h"

struct ac_libc_table ac_libc;

/* Whether a and b lie in the same loaded object. */
static bool same_object(void *a, void *b) {
  Dl_info ia, ib;
  return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

/* The condition-variable waits every program built since glibc 2.3.2 calls
 * (x86-64), where a plain lookup gives the C library's oldest; a C library
 * with one version of them (aarch64's, from 2.17 on) has no 2.3.2 and its
 * only one is the right one. A library preloaded between the shim and the C
 * library that defines them unversioned (a sanitizer runtime's interceptor)
 * is what the program's call would reach without the shim: that one. The
 * exported dlsym is the shim's own stub (doors.c), never forwarded here. */
static void *lookup(const char *name) {
  if (strcmp(name, "dlsym") == 0) return NULL;
  void *plain = ac_real_dlsym(RTLD_NEXT, name);
  if (strcmp(name, "pthread_cond_wait") == 0 || strcmp(name, "pthread_cond_timedwait") == 0) {
    void *v = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
    if (v && (!plain || same_object(v, plain))) return v;
  }
  return plain;
}

void ac_libc_resolve(void) {
#define AC_LIBC(Name)                                                                              \
  if (!__atomic_load_n(&ac_libc.Name, __ATOMIC_ACQUIRE))                                           \
    __atomic_store_n(&ac_libc.Name, (__typeof__(ac_libc.Name))lookup(#Name), __ATOMIC_RELEASE);
#include "libc_interceptors.inc"
#undef AC_LIBC
}
