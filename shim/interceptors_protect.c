/* interceptors_protect.c - the program's own protection of its memory.
 *
 * mprotect and pkey_mprotect are forwarded, then told to the page guard
 * (guard/program_prot.c): on managed memory the protection the program set
 * is the one the guard's opening gives back, and what the guard holds
 * closed stays closed. Nothing else changes: the call's answer is the C
 * library's.
 *
 * pkey_alloc: the page guard on protection keys holds some of the process's
 * keys. A program that allocates keys until there are none must get as many
 * as bare: when the kernel says ENOSPC and the guard holds keys, the guard
 * gives them back (it goes on with mprotect) and the call is made again.
 * A key allocated with a raw system call is not seen.
 *
 * munmap, mremap and a mapping made over another (MAP_FIXED): freed managed
 * memory keeps its protection key for the next allocation there, and a new
 * mapping takes the key away; the guard is told (keys_park.c). Whoever
 * calls - the driver, the program, before the shim has started - the call
 * itself is the C library's. These four run inside the guard's fault
 * handler too (the unwinder maps its caches), on whatever stack the program
 * gave it: they are kept out of AddressSanitizer's frames, whose redzones
 * overflowed a small alternate signal stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "libc_real.h"
#include "shim.h"

/* The program's call: not one the driver makes on its own memory (a
 * driver that protects managed memory itself while the GPU owns it), nor
 * one the shim makes or has made under its locks (ac_call_is_shims_own). */
#define PROGRAMS_CALL()                                                                            \
  (!ac_call_is_shims_own() && !ac_pc_in_driver((uintptr_t)__builtin_return_address(0)))

AC_EXPORT int mprotect(void *addr, size_t len, int prot) {
  int r = AC_LIBC_REAL(mprotect)(addr, len, prot);
  if (r == 0 && PROGRAMS_CALL()) ac_guard_program_protects((uintptr_t)addr, len, prot, -1);
  return r;
}

AC_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int key) {
  int r = AC_LIBC_REAL(pkey_mprotect)(addr, len, prot, key);
  if (r == 0 && PROGRAMS_CALL()) ac_guard_program_protects((uintptr_t)addr, len, prot, key);
  return r;
}

AC_EXPORT int pkey_alloc(unsigned int flags, unsigned int rights) {
  __typeof__(&pkey_alloc) real = AC_LIBC_REAL(pkey_alloc);
  int key = real(flags, rights);
  if (key < 0 && errno == ENOSPC && PROGRAMS_CALL() && ac_guard_give_keys_back())
    key = real(flags, rights);
  return key;
}

/* The mapping calls are made as system calls of the shim's own, not through
 * the C library's functions found at run time: a sanitizer's runtime maps
 * memory through these exports while it starts, before any instrumented
 * code - the lookup of the C library's function included - may run. On
 * these processors the C library's own mmap, munmap and mremap are the bare
 * system calls too. */
AC_NO_SANITIZE_ADDRESS static long mapping_call(long number, long a, long b, long c, long d, long e,
                                                long f) {
  long r;
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "0"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = number, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
                   x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e,
                   x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  r = x0;
#else
#error "mapping_call: a system call on this processor"
#endif
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return -1;
  }
  return r;
}

/* Under ThreadSanitizer, once the shim has loaded, the next definition (ac_libc's row, resolved
 * at load, not here): the runtime's own interceptor, which forgets what it knew of the memory
 * unmapped or mapped anew. A system call of the shim's own would leave it believing accesses
 * made there before, and report races with whatever is mapped there next (a debug file libdw
 * maps where the program's freed memory was). While the shim loads, and in other builds, the
 * system call itself. */
#ifdef __SANITIZE_THREAD__
#define RUNTIME_FIRST(Name) __atomic_load_n(&ac_libc.Name, __ATOMIC_ACQUIRE)
#else
#define RUNTIME_FIRST(Name) ((__typeof__(ac_libc.Name))NULL)
#endif

AC_NO_SANITIZE_ADDRESS AC_EXPORT int munmap(void *addr, size_t len) {
  __typeof__(ac_libc.munmap) next = RUNTIME_FIRST(munmap);
  int r = next ? next(addr, len) : (int)mapping_call(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0);
  if (r == 0) ac_guard_note_remap((uintptr_t)addr, len);
  return r;
}

AC_NO_SANITIZE_ADDRESS AC_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags,
                                              ...) {
  void *at = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    at = va_arg(ap, void *);
    va_end(ap);
  }
  __typeof__(ac_libc.mremap) next = RUNTIME_FIRST(mremap);
  void *r = next ? next(old, old_len, new_len, flags, at)
                 : (void *)mapping_call(SYS_mremap, (long)old, (long)old_len, (long)new_len, flags,
                                        (long)at, 0);
  if (r != MAP_FAILED) {
    ac_guard_note_remap((uintptr_t)old, old_len);
    ac_guard_note_remap((uintptr_t)r, new_len);
  }
  return r;
}

#define MMAP(Name, Off)                                                                            \
  AC_NO_SANITIZE_ADDRESS AC_EXPORT void *Name(void *addr, size_t len, int prot, int flags, int fd, \
                                              Off off) {                                           \
    __typeof__(ac_libc.Name) next = RUNTIME_FIRST(Name);                                           \
    void *r =                                                                                      \
        next ? next(addr, len, prot, flags, fd, off)                                               \
             : (void *)mapping_call(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);  \
    if (r != MAP_FAILED) ac_guard_note_mapped((uintptr_t)r, len, flags, fd);                       \
    return r;                                                                                      \
  }
MMAP(mmap, off_t)
MMAP(mmap64, off64_t)
