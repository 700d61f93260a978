/* tp_ownprot.c - a program that protects its own managed memory: its
 * protection is its own, whatever a checker protects on the same pages.
 *
 *   tp_ownprot own_readonly  idle memory made read-only by the program: its
 *                            write faults to its own SIGSEGV handler, before
 *                            and after the memory turned busy and idle again;
 *                            made writable, the write lands
 *   tp_ownprot own_rw_busy   the program makes busy memory readable and
 *                            writable itself, then touches it while the
 *                            stream works: still AC202
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp.h"

enum { BUF = 1 << 20, PAGE = 4096 };

static CUstream s;
static CUdeviceptr m;

static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m);
}

static sigjmp_buf back;
static volatile int fault_code;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *info, void *uc) {
  (void)sig, (void)uc;
  fault_code = info->si_code;
  fault_addr = info->si_addr;
  siglongjmp(back, 1);
}

/* Writes one byte at p; says whether the program's handler saw the fault,
 * with which code, at p. */
static void try_write(const char *when, volatile char *p) {
  fault_code = 0, fault_addr = NULL;
  if (sigsetjmp(back, 1) == 0) {
    *p = 42;
    printf("%s: the write landed (%d)\n", when, *p);
  } else {
    printf("%s: the program's handler got the fault: code %s, at the address written: %s\n", when,
           fault_code == SEGV_ACCERR   ? "SEGV_ACCERR"
           : fault_code == SEGV_MAPERR ? "SEGV_MAPERR"
                                       : "other",
           fault_addr == (void *)p ? "yes" : "no");
  }
}

static void own_readonly(void) {
  setup();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  volatile char *page = (volatile char *)m + PAGE;
  *page = 1;
  printf("mprotect read-only = %d\n", mprotect((void *)page, PAGE, PROT_READ));
  printf("read %d\n", *page);
  try_write("idle, read-only", page);
  for (int i = 0; i < 10; i++)
    tp_idle_after_work(s, m); /* the guard protects and lifts the rest of m */
  printf("read after work %d\n", *page);
  try_write("after work, read-only", page);
  printf("mprotect read-write = %d\n", mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE));
  try_write("read-write again", page);
}

static void own_rw_busy(void) {
  setup();
  tp_launch(s, m);
  printf("mprotect read-write = %d\n", mprotect((void *)m, BUF, PROT_READ | PROT_WRITE));
  ((volatile char *)m)[2 * PAGE] = 5; /* the stream works: AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("read back %d\n", ((volatile char *)m)[2 * PAGE]);
}

static const struct scenario_case cases[] = {{"own_readonly", own_readonly},
                                             {"own_rw_busy", own_rw_busy}};

TP_MAIN(cases)
