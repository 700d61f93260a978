/* host_access.c - CPU access to managed memory against the ordering model:
 * AC201, AC202, AC401, AC402 and the synchronisation that makes access right.
 *
 *   host_access CASE
 *
 * Kernels are empty (the stand-in driver does not run them); what matters is
 * that they make their stream busy until the program synchronises.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n";

static CUfunction kernel;
static CUstream s, t;
static CUdeviceptr m;
static volatile int sink;

static void launch(CUstream stream, CUdeviceptr p) {
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
}

static void attach(CUstream stream, CUdeviceptr p, unsigned flags) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(stream, p, 0, flags), CUDA_SUCCESS);
}

static void cpu_read(CUdeviceptr p) {
  sink = *(volatile int *)p;
}
static void cpu_write(CUdeviceptr p) {
  *(volatile int *)p = 42;
}

static void setup_single(void) {
  attach(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* Another thread touches m once while it is idle (a guard may then count
 * that thread as one that uses it), then again when told: step 1 and 2. */
static sem_t go[2], done_step[2];
static void *other_thread(void *arg) {
  (void)arg;
  for (int step = 0; step < 2; step++) {
    sem_wait(&go[step]);
    cpu_read(m);
    sem_post(&done_step[step]);
  }
  return NULL;
}
static pthread_t other;
static void other_thread_step(int step) {
  if (step == 0) {
    for (int i = 0; i < 2; i++)
      sem_init(&go[i], 0, 0), sem_init(&done_step[i], 0, 0);
    pthread_create(&other, NULL, other_thread, NULL);
  }
  sem_post(&go[step]);
  sem_wait(&done_step[step]);
  if (step == 1) pthread_join(other, NULL);
}

/* ---- wrong ---- */
static void other_thread_touch_busy(void) {
  other_thread_step(0);
  launch(s, m);
  other_thread_step(1); /* AC202: this thread's launch is the other thread's business too */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void global_touch_busy(void) {
  launch(s, m);
  cpu_read(m); /* AC202: the GPU owns globally attached memory while any stream works */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void single_touch_busy(void) {
  setup_single();
  launch(s, m);
  cpu_write(m); /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void event_before_work(void) {
  CUevent e;
  setup_single();
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  launch(s, m); /* after the record: the event does not cover it */
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  cpu_read(m); /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void sync_copy_nonblocking(void) {
  int x = 1;
  CUdeviceptr dst;
  EXPECT_RC(cu.cuMemAllocManaged(&dst, 4096, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  launch(s, m); /* s is non-blocking: the legacy stream does not wait for it */
  EXPECT_RC(cu.cuMemcpyHtoD(dst, &x, sizeof x), CUDA_SUCCESS);
  cpu_read(m); /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void host_fn_global(void *arg) {
  (void)arg;
  cpu_read(m); /* AC202: stream t is still busy */
}
static void callback_other_stream_busy(void) {
  launch(t, m);
  EXPECT_RC(cu.cuLaunchHostFunc(s, host_fn_global, NULL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
}
static void destroy_then_touch(void) {
  CUstream d;
  EXPECT_RC(cu.cuStreamCreate(&d, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  attach(d, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(d), CUDA_SUCCESS);
  launch(d, m);
  EXPECT_RC(cu.cuStreamDestroy(d), CUDA_SUCCESS); /* AC402; does not synchronise */
  cpu_read(m);                                    /* AC201 */
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* The same, and the next stream made gets the destroyed one's handle (the
 * stand-in driver hands it out again at once): the record lives on without a
 * handle while its work runs - the touch names it - and is forgotten once
 * the host has seen that work complete. */
static void destroy_reuse_touch(void) {
  CUstream d, e;
  EXPECT_RC(cu.cuStreamCreate(&d, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  attach(d, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(d), CUDA_SUCCESS);
  launch(d, m);
  EXPECT_RC(cu.cuStreamDestroy(d), CUDA_SUCCESS); /* AC402; its work still runs */
  EXPECT_RC(cu.cuStreamCreate(&e, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  cpu_read(m);                                    /* AC201: d's work */
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS); /* d's record can go */
  launch(e, m);
  EXPECT_RC(cu.cuStreamSynchronize(e), CUDA_SUCCESS);
  cpu_write(m); /* reverted to CU_MEM_ATTACH_GLOBAL, nothing busy */
  EXPECT_RC(cu.cuStreamDestroy(e), CUDA_SUCCESS);
}
/* Streams made, used and destroyed by the hundred - blocking ones that the
 * legacy stream joins, memory single-attached to each, an event recorded on
 * each that outlives it and that another stream waits for: each record is
 * forgotten once its work is done, and nothing that named it is left behind. */
static void stream_cycles(void) {
  CUevent ev;
  CUdeviceptr x;
  EXPECT_RC(cu.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&x, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  for (int i = 0; i < 300; i++) {
    CUstream c;
    EXPECT_RC(cu.cuStreamCreate(&c, i % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
              CUDA_SUCCESS);
    attach(c, x, CU_MEM_ATTACH_SINGLE);
    launch(c, x);
    EXPECT_RC(cu.cuEventRecord(ev, c), CUDA_SUCCESS);
    EXPECT_RC(cu.cuStreamDestroy(c), CUDA_SUCCESS); /* AC402, with its work pending */
    EXPECT_RC(cu.cuStreamWaitEvent(s, ev, 0), CUDA_SUCCESS);
    launch(NULL, m); /* the legacy stream: after c's work if c is blocking */
    EXPECT_RC(cu.cuEventSynchronize(ev), CUDA_SUCCESS);
    EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  }
  cpu_write(x);
  cpu_write(m);
  EXPECT_RC(cu.cuStreamWaitEvent(t, ev, 0), CUDA_SUCCESS); /* names forgotten streams */
  EXPECT_RC(cu.cuEventSynchronize(ev), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(ev), CUDA_SUCCESS);
}
static void reattach_unordered(void) {
  setup_single();
  launch(s, m);
  attach(t, m, CU_MEM_ATTACH_SINGLE); /* AC401: s's kernel is not ordered before it */
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* The re-attach not ordered, then only the new stream synchronised: the old
 * stream's kernel is still not seen complete, so the CPU may not touch other
 * memory attached to the old stream (AC401, AC201). Under --on-error repair
 * the attach waits for that kernel (an event), so the synchronisation covers
 * it and the write is right (AC401 alone). */
static void reattach_then_sync_new(void) {
  CUdeviceptr other;
  EXPECT_RC(cu.cuMemAllocManaged(&other, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  attach(s, other, CU_MEM_ATTACH_SINGLE);
  setup_single();
  launch(s, m);
  attach(t, m, CU_MEM_ATTACH_SINGLE); /* AC401 */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  cpu_write(other); /* AC201 unless the attach was ordered after s's kernel */
}
static void pending_attach(void) {
  CUdeviceptr h;
  EXPECT_RC(cu.cuMemAllocManaged(&h, 4096, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  attach(s, h, CU_MEM_ATTACH_SINGLE);
  cpu_read(h); /* AC201: the attach is not known complete */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void read_syscall(void) {
  setup_single();
  launch(s, m);
  int fd = open("/dev/zero", O_RDONLY);
  ssize_t n = read(fd, (void *)m, 4096); /* AC201, seen by read(2) */
  close(fd);
  if (n != 4096) failures++, fprintf(stderr, "host_access: read returned %zd\n", n);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void repeated_touch(void) {
  setup_single();
  launch(s, m);
  for (int i = 0; i < 10; i++)
    cpu_read(m + (CUdeviceptr)i * 4); /* one finding */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void real_crash(void) {
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  volatile int *volatile nowhere = NULL;
  *nowhere = 1; /* a genuine crash must still crash */
}

/* ---- right ---- */
static void other_thread_touch_after_sync(void) {
  other_thread_step(0);
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  other_thread_step(1);
}
static void touch_after_sync(void) {
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(m);
}
static void single_other_stream_busy(void) {
  setup_single();
  launch(t, 0);
  cpu_write(m); /* attached to s, which is idle */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
}
static void host_attached(void) {
  attach(s, m, CU_MEM_ATTACH_HOST);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch(s, 0);
  cpu_write(m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void query_until_done(void) {
  launch(s, m);
  while (cu.cuStreamQuery(s) == CUDA_ERROR_NOT_READY) {
  }
  cpu_read(m);
}
static void event_after_work(void) {
  CUevent e;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  launch(s, m);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  cpu_read(m);
  EXPECT_RC(cu.cuEventDestroy(e), CUDA_SUCCESS);
}
static void context_sync(void) {
  launch(s, m);
  launch(t, m);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  cpu_read(m);
}
static void sync_copy_blocking(void) {
  CUstream b;
  int x = 1;
  CUdeviceptr dst;
  EXPECT_RC(cu.cuStreamCreate(&b, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&dst, 4096, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  launch(b, m);
  EXPECT_RC(cu.cuMemcpyHtoD(dst, &x, sizeof x), CUDA_SUCCESS); /* waits for b */
  cpu_read(m);
  EXPECT_RC(cu.cuStreamDestroy(b), CUDA_SUCCESS);
}
/* The driver reads a host-typed 2D source through the program's mapping,
 * after the legacy stream's attach it waits for: no CPU access of the
 * program's, and the bytes arrive. */
static void sync_copy_2d_after_attach(void) {
  unsigned char *src = (unsigned char *)(uintptr_t)m, out[4][64];
  for (int i = 0; i < 4 * 256; i++)
    src[i] = (unsigned char)(i * 7);
  attach(NULL, m, CU_MEM_ATTACH_GLOBAL);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = 256;
  c.dstHost = out;
  c.dstPitch = sizeof out[0];
  c.WidthInBytes = sizeof out[0];
  c.Height = 4;
  EXPECT_RC(cuMemcpy2D(&c), CUDA_SUCCESS);
  for (int r = 0; r < 4; r++)
    for (int x = 0; x < 64; x++)
      if (out[r][x] != (unsigned char)((r * 256 + x) * 7)) {
        fprintf(stderr, "scenario: row %d byte %d: %d\n", r, x, out[r][x]);
        failures++;
        return;
      }
}
static void wait_event_chain(void) {
  CUevent e;
  setup_single();
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  launch(s, m);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamWaitEvent(t, e, 0), CUDA_SUCCESS);
  launch(t, 0);
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS); /* covers s's kernel */
  cpu_read(m);
}
static void host_fn_single(void *arg) {
  (void)arg;
  cpu_write(m); /* inside a host function of s, s is idle */
}
static void callback_own_stream(void) {
  setup_single();
  launch(s, m);
  EXPECT_RC(cu.cuLaunchHostFunc(s, host_fn_single, NULL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void destroy_after_sync(void) {
  CUstream d;
  EXPECT_RC(cu.cuStreamCreate(&d, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  attach(d, m, CU_MEM_ATTACH_SINGLE);
  launch(d, m);
  EXPECT_RC(cu.cuStreamDestroy(d), CUDA_SUCCESS); /* AC402 note only */
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  cpu_read(m); /* reverted to CU_MEM_ATTACH_GLOBAL, nothing busy */
}
static void reattach_ordered(void) {
  CUevent e;
  setup_single();
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  launch(s, m);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamWaitEvent(t, e, 0), CUDA_SUCCESS);
  attach(t, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
static void shared_page(void) {
  CUdeviceptr a, b;
  EXPECT_RC(cu.cuMemAllocManaged(&a, 100, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&b, 100, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  attach(s, b, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch(s, b);
  cpu_write(a); /* HOST-attached, on the same page as b: never a finding */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void write_after_sync(void) {
  setup_single();
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  int fd = open("/dev/null", O_WRONLY);
  ssize_t n = write(fd, (void *)m, 4096);
  close(fd);
  if (n != 4096) failures++, fprintf(stderr, "host_access: write returned %zd\n", n);
}

/* Small GLOBAL allocations attached one by one to stream to while s is
 * busy: each attach leaves their pages as they were (forbidden before,
 * pending and forbidden after), so the guard need not look at them again
 * until something else changes - and must then. */
enum { BURST = 64 };
static CUdeviceptr burst[BURST];
static void attach_burst(CUstream to) {
  for (int i = 0; i < BURST; i++)
    EXPECT_RC(cu.cuMemAllocManaged(&burst[i], 64, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  launch(s, m);
  for (int i = 0; i < BURST; i++)
    attach(to, burst[i], CU_MEM_ATTACH_SINGLE);
}
static void attach_burst_touch_busy(void) {
  attach_burst(s);
  cpu_write(burst[BURST / 2]); /* AC201: s is busy and its attach not known complete */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void attach_burst_touch_after_sync(void) {
  attach_burst(s);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  for (int i = 0; i < BURST; i++)
    cpu_write(burst[i]);
}
static void attach_burst_other_touch_pending(void) {
  attach_burst(t);
  cpu_write(burst[BURST - 1]); /* a finding: the attach to t is not known complete */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void attach_burst_other_after_sync(void) {
  attach_burst(t);
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  for (int i = 0; i < BURST; i++)
    cpu_write(burst[i]); /* single-attached to t, which is idle: the CPU's while s works */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* An attach that settles after the protection keys were laid out with it
 * pending: the memory joins its stream's class at the synchronisation, a
 * move of class the guard must follow though no allocation or attach came.
 * The stream's class has a key of its own (kept settled into it first), and
 * the transitions of another stream after the attach lay the keys out again
 * while it pends. */
static CUdeviceptr kept, late;
static void settle_after_layout(void) {
  EXPECT_RC(cu.cuMemAllocManaged(&kept, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&late, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  setup_single(); /* m */
  attach(s, kept, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch(s, kept);
  attach(s, late, CU_MEM_ATTACH_SINGLE);
  for (int i = 0; i < 2; i++) { /* transitions while late pends */
    launch(t, 0);
    EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  }
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS); /* late settles into s's class */
  launch(s, kept);
}
static void settled_touch_busy(void) {
  settle_after_layout();
  cpu_write(late); /* AC201: late is s's, and s is busy */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void settled_touch_after_sync(void) {
  settle_after_layout();
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(late);
  cpu_write(kept);
}

/* A temporary made and freed at every step of a loop, as programs do: each
 * step moves memory between classes, and the protection keys follow by
 * giving up the pages the temporary lies on (mprotect's from then on) while
 * m's pages keep their key. A touch while s is busy is caught on either. */
enum { STEPS = 4 };
static void temp_step(int touch_busy) {
  CUdeviceptr tmp;
  EXPECT_RC(cu.cuMemAllocManaged(&tmp, 256, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  launch(s, tmp);
  if (touch_busy == 1) cpu_write(m + 8192); /* AC202: GLOBAL while s is busy */
  if (touch_busy == 2) cpu_write(tmp);      /* AC202: the same, on a page patched away */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(m + 8192);
  cpu_write(tmp);
  EXPECT_RC(cu.cuMemFree(tmp), CUDA_SUCCESS);
}
static void temp_each_step_touch_kept(void) {
  for (int i = 0; i < STEPS; i++)
    temp_step(i == STEPS - 1 ? 1 : 0);
}
static void temp_each_step_touch_temp(void) {
  for (int i = 0; i < STEPS; i++)
    temp_step(i == STEPS - 1 ? 2 : 0);
}
static void temp_each_step_after_sync(void) {
  for (int i = 0; i < STEPS; i++)
    temp_step(0);
}

/* A temporary of size touched while s is busy at each of the steps: where
 * the driver hands its address back (FAKECUDA_REUSE_SMALL=1 for a small
 * one; a large one is unmapped and mapped again there), its page's key was
 * kept or went with the mapping, and every step's touch is caught: AC202
 * six times. With touch_busy 0, touched only after the synchronisation: no
 * finding. The step count is TEMP_STEPS's where set (a protection trace
 * compares runs of different lengths). */
static void temps_touched(size_t size, unsigned flags, int touch_busy) {
  const char *steps = getenv("TEMP_STEPS");
  int n = steps ? atoi(steps) : 6;
  for (int i = 0; i < n; i++) {
    CUdeviceptr tmp;
    EXPECT_RC(cu.cuMemAllocManaged(&tmp, size, flags), CUDA_SUCCESS);
    launch(s, m);
    if (touch_busy) cpu_write(tmp); /* AC202 where GLOBAL */
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
    cpu_write(tmp);
    EXPECT_RC(cu.cuMemFree(tmp), CUDA_SUCCESS);
  }
}
static void temps_touched_busy(void) {
  temps_touched(256, CU_MEM_ATTACH_GLOBAL, 1);
}
static void temps_touched_busy_large(void) {
  temps_touched(64 << 10, CU_MEM_ATTACH_GLOBAL, 1);
}
static void temps_touched_after_sync(void) {
  temps_touched(256, CU_MEM_ATTACH_GLOBAL, 0);
}
static void temps_touched_after_sync_large(void) {
  temps_touched(64 << 10, CU_MEM_ATTACH_GLOBAL, 0);
}
/* Large temporaries, GLOBAL and then HOST-attached where they were: the
 * HOST ones are the CPU's while s is busy. No finding. */
static void host_where_global_was_large(void) {
  temps_touched(64 << 10, CU_MEM_ATTACH_GLOBAL, 0);
  temps_touched(64 << 10, CU_MEM_ATTACH_HOST, 1);
}
/* The program makes an allocation of a whole 2 MiB chunk read-only and
 * frees it; the driver maps inaccessible memory over the chunk at the free
 * and a mapping of its own, readable and writable, at the same address for
 * the next one of its size (a smaller allocation that shares its chunk with
 * live ones keeps the mapping, and the program's protection with it:
 * docs/driver-facts.md). Written after a busy period (the guard closed it and
 * opened it again): the program's protection went with the old mapping, so
 * the write succeeds, as bare. No finding. */
#define PROTECTED_LEN (2u << 20)
static void protected_then_freed(void) {
  CUdeviceptr old, fresh;
  EXPECT_RC(cu.cuMemAllocManaged(&old, PROTECTED_LEN, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  if (mprotect((void *)old, PROTECTED_LEN, PROT_READ) != 0)
    failures++, perror("host_access: mprotect");
  EXPECT_RC(cu.cuMemFree(old), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&fresh, PROTECTED_LEN, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(fresh);
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(fresh);
  EXPECT_RC(cu.cuMemFree(fresh), CUDA_SUCCESS);
}
/* A GLOBAL allocation made while s is busy, written before anything else
 * happens: forbidden from its birth (AC202), with no launch or attach
 * between. After the synchronisation it is the CPU's. */
static void fresh_touched_while_busy(void) {
  CUdeviceptr fresh;
  launch(s, m);
  EXPECT_RC(cu.cuMemAllocManaged(&fresh, 64 << 10, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  cpu_write(fresh); /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(fresh);
  EXPECT_RC(cu.cuMemFree(fresh), CUDA_SUCCESS);
}
/* A GLOBAL temporary freed, then a HOST-attached one where it was, touched
 * while s is busy: HOST memory is the CPU's at any time, whatever key the
 * page kept. No finding. */
static void host_where_global_was(void) {
  temps_touched(256, CU_MEM_ATTACH_GLOBAL, 0);
  temps_touched(256, CU_MEM_ATTACH_HOST, 1);
}
/* A freed temporary's page touched again while s is busy (its memory is
 * no allocation any more, and the driver's still: the stand-in's small
 * slots stay mapped): no finding, and the touch goes through. */
static void freed_temp_touched_busy(void) {
  temps_touched(256, CU_MEM_ATTACH_GLOBAL, 0);
  CUdeviceptr tmp;
  EXPECT_RC(cu.cuMemAllocManaged(&tmp, 256, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  launch(s, m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemFree(tmp), CUDA_SUCCESS);
  launch(s, m);
  cpu_write(tmp); /* no allocation: the stand-in's memory, not a finding */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* The program's own SIGSEGV handler keeps working: it recovers from a fault
 * of its own, installed before the guard's handler exists. */
static sigjmp_buf recover;
static volatile int own_faults;
static void own_handler(int sig, siginfo_t *info, void *uc) {
  (void)sig, (void)info, (void)uc;
  own_faults++;
  siglongjmp(recover, 1);
}
static void program_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = own_handler;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  launch(s, m);
  cpu_read(m); /* AC202, and the program's handler is not called for it */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (sigsetjmp(recover, 1) == 0) sink = page[0];
  struct sigaction now;
  sigaction(SIGSEGV, NULL, &now);
  if (own_faults != 1 || now.sa_sigaction != own_handler)
    failures++, fprintf(stderr, "host_access: own handler ran %d times\n", own_faults);
}

/* Under protection keys, a thread's fault on a keyed page can be reported
 * with the key another thread gave the page meanwhile (key 0, when the
 * guard let that page go after judging the other thread's touch): the
 * kernel reads the key from the mapping after the fault. Such a report is
 * sent here as the kernel sends it, while the memory is busy: the access it
 * stands for is run again, and the guard keeps its handler and still judges
 * the touch that follows. Where the processor has no keys there is no such
 * report, and only the touch is made. */
static void send_stale_key_report(void) {
#ifdef SEGV_PKUERR
  int key = (int)syscall(SYS_pkey_alloc, 0UL, 0UL);
  if (key < 0) return;
  syscall(SYS_pkey_free, key);
  siginfo_t info;
  memset(&info, 0, sizeof info);
  info.si_signo = SIGSEGV;
  info.si_code = SEGV_PKUERR;
  info.si_addr = (void *)m;
  info.si_pkey = 0;
  syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGSEGV, &info);
#endif
}
static void stale_key_report_busy(void) {
  launch(s, m);
  send_stale_key_report();
  cpu_read(m); /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void stale_key_report_idle(void) {
  launch(s, m);
  send_stale_key_report();
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  send_stale_key_report();
  cpu_write(m);
}

/* Two threads touch the same page in one busy period: each access is its
 * own finding where the page guard can tell threads apart (protection keys);
 * under mprotect the first access opens the page to every thread. The
 * second thread is made after the first access, with its creator's PKRU. */
static void (*second_touch)(CUdeviceptr);
static void *second_thread(void *arg) {
  (void)arg;
  second_touch(m); /* AC201 / AC202 too, on keys */
  return NULL;
}
static void second_thread_run(void (*touch)(CUdeviceptr)) {
  pthread_t thread;
  second_touch = touch;
  pthread_create(&thread, NULL, second_thread, NULL);
  pthread_join(thread, NULL);
}
static void two_threads(void (*touch)(CUdeviceptr)) {
  setup_single();
  launch(s, m);
  cpu_write(m); /* AC201 */
  second_thread_run(touch);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* Three threads, one after another, read m from the same code while it is
 * busy: one finding; on keys each thread's access is judged (count and
 * threads 3), under mprotect the first alone. */
static void three_threads_same_site(void (*touch)(CUdeviceptr)) {
  setup_single();
  launch(s, m);
  for (int i = 0; i < 3; i++)
    second_thread_run(touch); /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void threads_same_site(void) {
  three_threads_same_site(cpu_read);
}
/* The same with ordered and atomic accesses: a load-acquire (LDAR on
 * aarch64, where the guard carries it out) and an atomic add (LDADDAL there,
 * a locked add on x86-64). */
static void cpu_read_acquire(CUdeviceptr p) {
  sink = __atomic_load_n((int *)p, __ATOMIC_ACQUIRE);
}
static void cpu_atomic_add(CUdeviceptr p) {
#if defined(__aarch64__)
  int old;
  __asm__ volatile(".arch_extension lse\n\tldaddal %w1, %w0, [%2]"
                   : "=&r"(old)
                   : "r"(1), "r"(p)
                   : "memory");
  sink = old;
#else
  sink = __atomic_fetch_add((int *)p, 1, __ATOMIC_SEQ_CST);
#endif
}
static void threads_same_site_acquire(void) {
  three_threads_same_site(cpu_read_acquire);
}
static void threads_same_site_atomic(void) {
  three_threads_same_site(cpu_atomic_add);
}
static void two_threads_touch_busy(void) {
  two_threads(cpu_read);
}
/* The second thread's access a read(2) into the page: it must succeed
 * however the page was let go for the first thread. */
static void read_zero_into(CUdeviceptr p) {
  int fd = open("/dev/zero", O_RDONLY);
  ssize_t n = read(fd, (void *)p, 4096);
  close(fd);
  if (n != 4096) failures++, fprintf(stderr, "host_access: read returned %zd\n", n);
}
static void two_threads_read_busy(void) {
  two_threads(read_zero_into);
}
/* After the guard stepped a forbidden access (under mprotect on x86-64 it
 * then has a SIGTRAP handler of its own), the program's traps are still the
 * program's: an ignored SIGTRAP sent to itself is ignored, its own handler
 * installed after is called for raise() and int3 and reads back as its own,
 * and a second thread that blocks SIGTRAP has its forbidden access stepped
 * too without being killed. */
static volatile sig_atomic_t traps;
static void count_trap(int sig) {
  (void)sig;
  traps++;
}
static void read_trap_blocked(CUdeviceptr p) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTRAP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  cpu_read(p); /* AC201 */
}
static void own_trap_after_step(void) {
  setup_single();
  launch(s, m);
  cpu_write(m); /* AC201 */
  struct sigaction act, back;
  memset(&act, 0, sizeof act);
  act.sa_handler = SIG_IGN;
  sigaction(SIGTRAP, &act, NULL);
  raise(SIGTRAP); /* ignored */
  act.sa_handler = count_trap;
  sigaction(SIGTRAP, &act, NULL);
  raise(SIGTRAP);
  int expected = 1;
#if defined(__x86_64__)
  __asm__ volatile("int3");
  expected++;
#endif
  sigaction(SIGTRAP, NULL, &back);
  if (traps != expected || back.sa_handler != count_trap)
    failures++, fprintf(stderr, "host_access: %d traps of %d, handler %s\n", (int)traps, expected,
                        back.sa_handler == count_trap ? "the program's" : "not the program's");
  second_thread_run(read_trap_blocked);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* The program's SIGTRAP handler installed before the first step, with
 * SIGSEGV in its mask (the shim then keeps it behind a trampoline): after the
 * step it is still called for raise() and reads back as the program set it. */
static void own_trap_before_step(void) {
  struct sigaction act, back;
  memset(&act, 0, sizeof act);
  act.sa_handler = count_trap;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, SIGSEGV);
  sigaction(SIGTRAP, &act, NULL);
  setup_single();
  launch(s, m);
  cpu_write(m); /* AC201 */
  raise(SIGTRAP);
  sigaction(SIGTRAP, NULL, &back);
  if (traps != 1 || back.sa_handler != count_trap || sigismember(&back.sa_mask, SIGSEGV) != 1)
    failures++, fprintf(stderr, "host_access: %d traps, handler %s\n", (int)traps,
                        back.sa_handler == count_trap ? "the program's" : "not the program's");
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* Four pages of busy memory filled by one instruction site - x86-64's rep
 * stosb, which the processor steps one byte at a time, or a loop of byte
 * stores: each page's first store judged (one finding, four occurrences),
 * the same thread's later stores to it stepped or let through, never
 * judged again; the fill completes. */
static void fill_bytes(volatile char *p, size_t n) {
#if defined(__x86_64__)
  void *d = (void *)p;
  size_t c = n;
  __asm__ volatile("rep stosb" : "+D"(d), "+c"(c) : "a"(1) : "memory");
#else
  for (size_t i = 0; i < n; i++)
    p[i] = 1;
#endif
}
static void fill_busy(void) {
  CUdeviceptr big;
  EXPECT_RC(cu.cuMemAllocManaged(&big, 4 * 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  attach(s, big, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch(s, big);
  fill_bytes((volatile char *)big, 4 * 4096); /* AC201 x4 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  if (((volatile char *)big)[4 * 4096 - 1] != 1)
    failures++, fprintf(stderr, "host_access: the fill was lost\n");
  EXPECT_RC(cu.cuMemFree(big), CUDA_SUCCESS);
}
/* One thread touches busy memory, then reads a file into the same page in
 * the same busy period: its access was judged once, at the touch; the
 * read(2) must neither be judged again nor fail, on either backend. */
static void touch_then_read(void) {
  cpu_write(m); /* AC201 / AC202 */
  read_zero_into(m);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void touch_then_read_busy(void) {
  setup_single();
  launch(s, m);
  touch_then_read();
}
/* m's page given a protection key of the program's own (enabled for every
 * thread): the guard's keys leave that page out and close it with
 * PROT_NONE instead; a touch while busy is judged once and goes through,
 * and the program's key stays on the page. */
static void own_key_touch_busy(void) {
  setup_single();
  int key = pkey_alloc(0, 0);
  void *page = (void *)(m & ~(CUdeviceptr)4095);
  if (key >= 0 && pkey_mprotect(page, 4096, PROT_READ | PROT_WRITE, key) != 0)
    failures++, perror("host_access: pkey_mprotect");
  launch(s, m);
  cpu_write(m); /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  if (key >= 0 && pkey_mprotect(page, 4096, PROT_READ | PROT_WRITE, 0) != 0)
    failures++, perror("host_access: pkey_mprotect back");
}
/* Globally attached m busy after a few idle cycles, when the protection
 * keys have laid it out under the GLOBAL class's key. */
static void launch_laid_out(void) {
  for (int i = 0; i < 4; i++) {
    launch(s, m);
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  }
  launch(s, m);
}
/* The same once the keys have laid the memory out under its class's key. */
static void touch_then_read_laid_out(void) {
  launch_laid_out();
  touch_then_read();
}
/* Two threads' access to memory laid out: AC202 for each. */
static void two_threads_touch_laid_out(void) {
  launch_laid_out();
  cpu_write(m); /* AC202 */
  second_thread_run(cpu_read);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* ---- a page shared by memory of two kinds ----
 * A 256-byte GLOBAL buffer and a 64-byte HOST-attached status word made one
 * after the other: the driver places small allocations side by side, so
 * they share a page (tried a few times, in case a pair straddles a page's
 * end). While s works the buffer is the GPU's and the word the CPU's. */
static CUdeviceptr shared_buf, shared_word;
static void shared_setup(void) {
  for (int i = 0; i < 8; i++) {
    EXPECT_RC(cu.cuMemAllocManaged(&shared_buf, 256, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    EXPECT_RC(cu.cuMemAllocManaged(&shared_word, 64, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
    if (shared_buf / 4096 == shared_word / 4096) return;
  }
  failures++, fprintf(stderr, "host_access: no GLOBAL and HOST allocation shared a page\n");
}
/* The buffer read while s works: AC202, though the word shares its page. */
static void shared_global_touch_busy(void) {
  shared_setup();
  launch(s, shared_buf);
  cpu_write(shared_word); /* allowed: HOST-attached */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch(s, shared_buf);
  cpu_read(shared_buf); /* AC202 */
  cpu_write(shared_word);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* The word written, then the buffer read, in one busy period: the word's
 * access is allowed and let through for that one instruction where the
 * processor steps it (x86-64) - under mprotect the page is closed again
 * after it, with protection keys the lift key taken back - so the read is
 * AC202; without the step (aarch64) the page stays open and the read
 * unseen (docs/rules.md, limits). */
static void shared_word_then_buf_busy(void) {
  shared_setup();
  launch(s, shared_buf);
  cpu_write(shared_word); /* allowed: HOST-attached */
  cpu_read(shared_buf);   /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* Two threads, started together, each write the word a few times and then
 * read the buffer while s works: both reads are AC202 (one finding, two
 * occurrences). The threads' first faults on the shared page race; the one
 * judged second must not find the page opened to every thread by the
 * first (with protection keys it is lifted for the first thread alone). */
static pthread_barrier_t race_start;
static void *word_then_buf(void *arg) {
  (void)arg;
  pthread_barrier_wait(&race_start);
  for (int i = 0; i < 3; i++)
    cpu_write(shared_word); /* allowed: HOST-attached */
  cpu_read(shared_buf);     /* AC202 */
  return NULL;
}
static void shared_word_race_busy(void) {
  pthread_t t[2];
  shared_setup();
  pthread_barrier_init(&race_start, NULL, 2);
  launch(s, shared_buf);
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, word_then_buf, NULL);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race_start);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
/* A signal handler reads the buffer while s works (a periodic logger): AC202. */
static void read_shared_buf(int sig) {
  (void)sig;
  cpu_read(shared_buf);
}
static void shared_handler_reads_busy(void) {
  shared_setup();
  signal(SIGUSR1, read_shared_buf);
  launch(s, shared_buf);
  raise(SIGUSR1); /* AC202 */
  cpu_write(shared_word);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  signal(SIGUSR1, SIG_DFL);
}
/* The word used every way while s works - written, read, filled by read(2)
 * before any touch after a launch, written by another thread - and the
 * buffer after the synchronisation: no finding, and every value right. */
static void write_word_other_thread(CUdeviceptr unused) {
  (void)unused;
  ((volatile int *)shared_word)[1] = 7;
}
static void shared_word_busy(void) {
  shared_setup();
  launch(s, shared_buf);
  for (int i = 0; i < 100; i++)
    ((volatile int *)shared_word)[0] += 1;
  launch(s, shared_buf); /* the page closed again */
  int fd = open("/dev/zero", O_RDONLY);
  ssize_t n = read(fd, (void *)(shared_word + 8), 8);
  close(fd);
  second_thread_run(write_word_other_thread);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  cpu_write(shared_buf);
  const volatile int *w = (const volatile int *)shared_word;
  if (n != 8 || w[0] != 100 || w[1] != 7 || w[2] != 0 || *(volatile int *)shared_buf != 42)
    failures++, fprintf(stderr, "host_access: read %zd, word %d %d %d\n", n, w[0], w[1], w[2]);
}

/* A thread blocked in read(2) into the word while another thread's launch
 * closes the word's page: the read, whose buffer was open when it was
 * checked, must still fill it (no EFAULT when the data comes). */
static int word_pipe[2];
static ssize_t blocked_got;
static void *blocked_reader(void *arg) {
  (void)arg;
  blocked_got = read(word_pipe[0], (void *)(shared_word + 16), 16);
  return NULL;
}
static void shared_word_read_blocked(void) {
  pthread_t reader;
  shared_setup();
  if (pipe(word_pipe) != 0) failures++, perror("host_access: pipe");
  pthread_create(&reader, NULL, blocked_reader, NULL);
  usleep(50000); /* it blocks in read(2) */
  launch(s, shared_buf);
  if (write(word_pipe[1], "0123456789abcdef", 16) != 16) failures++, perror("host_access: write");
  pthread_join(reader, NULL);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  if (blocked_got != 16 || memcmp((const void *)(shared_word + 16), "0123456789abcdef", 16) != 0)
    failures++, fprintf(stderr, "host_access: the blocked read returned %zd\n", blocked_got);
  close(word_pipe[0]), close(word_pipe[1]);
}

/* Three threads, one after another, compare and swap 16 bytes of m from the
 * same code while it is busy (CASPAL on aarch64, where the guard carries it
 * out; a locked cmpxchg16b on x86-64): one finding, each thread's access
 * judged on keys. */
static void cpu_pair_cas(CUdeviceptr p) {
  uint64_t lo = 0, hi = 0;
#if defined(__aarch64__)
  register uint64_t x0 __asm__("x0") = lo, x1 __asm__("x1") = hi;
  register uint64_t x2 __asm__("x2") = 1, x3 __asm__("x3") = 2;
  __asm__ volatile(".arch_extension lse\n\tcaspal x0, x1, x2, x3, [%[p]]"
                   : "+r"(x0), "+r"(x1)
                   : "r"(x2), "r"(x3), [p] "r"(p)
                   : "memory");
  lo = x0, hi = x1;
#else
  __asm__ volatile("lock cmpxchg16b %[m]"
                   : [m] "+m"(*(volatile uint64_t(*)[2])p), "+a"(lo), "+d"(hi)
                   : "b"((uint64_t)1), "c"((uint64_t)2)
                   : "memory", "cc");
#endif
  sink = (int)(lo + hi);
}
static void threads_same_site_pair(void) {
  three_threads_same_site(cpu_pair_cas);
}
/* The same with a vector structure load (LD2 on aarch64, where the guard
 * carries it out; a plain load on x86-64, stepped like any other). */
static void cpu_read_structures(CUdeviceptr p) {
#if defined(__aarch64__)
  uint32_t out[4];
  __asm__ volatile("ld2 {v0.4s, v1.4s}, [%[p]]\n\tst1 {v0.4s}, [%[o]]"
                   :
                   : [p] "r"(p), [o] "r"(out)
                   : "v0", "v1", "memory");
  /* v0 holds the even words: what the guard loaded must reach the thread
   * (through the SVE record where SVE state is live) */
  const volatile uint32_t *words = (const volatile uint32_t *)p;
  if (out[0] != words[0] || out[1] != words[2] || out[3] != words[6]) {
    fprintf(stderr, "host_access: ld2 loaded other words than the memory holds\n");
    exit(9);
  }
  sink = (int)out[0];
#else
  sink = *(volatile int *)p;
#endif
}
static void threads_same_site_structures(void) {
  three_threads_same_site(cpu_read_structures);
}

/* The same with loads of one structure: a lane (LD1 {v0.s}[1]) and a
 * replicating load (LD1R), which the guard carries out on aarch64. */
static void cpu_read_lanes(CUdeviceptr p) {
#if defined(__aarch64__)
  uint32_t out[8];
  __asm__ volatile("movi v0.16b, #0\n\tld1 {v0.s}[1], [%[p]]\n\tld1r {v1.4s}, [%[p]]\n\t"
                   "st1 {v0.4s, v1.4s}, [%[o]]"
                   :
                   : [p] "r"(p), [o] "r"(out)
                   : "v0", "v1", "memory");
  const volatile uint32_t *words = (const volatile uint32_t *)p;
  if (out[0] != 0 || out[1] != words[0] || out[2] != 0 || out[4] != words[0] ||
      out[7] != words[0]) {
    fprintf(stderr, "host_access: ld1 (one structure) loaded other words than the memory holds\n");
    exit(9);
  }
  sink = (int)out[1];
#else
  sink = *(volatile int *)p;
#endif
}
static void threads_same_site_lanes(void) {
  three_threads_same_site(cpu_read_lanes);
}

static const struct scenario_case cases[] = {
    {"global_touch_busy", global_touch_busy},
    {"two_threads_touch_busy", two_threads_touch_busy},
    {"two_threads_read_busy", two_threads_read_busy},
    {"own_trap_after_step", own_trap_after_step},
    {"own_trap_before_step", own_trap_before_step},
    {"fill_busy", fill_busy},
    {"shared_word_then_buf_busy", shared_word_then_buf_busy},
    {"shared_word_race_busy", shared_word_race_busy},
    {"two_threads_touch_laid_out", two_threads_touch_laid_out},
    {"touch_then_read_busy", touch_then_read_busy},
    {"touch_then_read_laid_out", touch_then_read_laid_out},
    {"own_key_touch_busy", own_key_touch_busy},
    {"temps_touched_busy", temps_touched_busy},
    {"temps_touched_busy_large", temps_touched_busy_large},
    {"temps_touched_after_sync_large", temps_touched_after_sync_large},
    {"host_where_global_was_large", host_where_global_was_large},
    {"fresh_touched_while_busy", fresh_touched_while_busy},
    {"protected_then_freed", protected_then_freed},
    {"temps_touched_after_sync", temps_touched_after_sync},
    {"host_where_global_was", host_where_global_was},
    {"freed_temp_touched_busy", freed_temp_touched_busy},
    {"threads_same_site", threads_same_site},
    {"threads_same_site_acquire", threads_same_site_acquire},
    {"threads_same_site_atomic", threads_same_site_atomic},
    {"other_thread_touch_busy", other_thread_touch_busy},
    {"other_thread_touch_after_sync", other_thread_touch_after_sync},
    {"single_touch_busy", single_touch_busy},
    {"event_before_work", event_before_work},
    {"sync_copy_nonblocking", sync_copy_nonblocking},
    {"callback_other_stream_busy", callback_other_stream_busy},
    {"destroy_then_touch", destroy_then_touch},
    {"destroy_reuse_touch", destroy_reuse_touch},
    {"stream_cycles", stream_cycles},
    {"reattach_unordered", reattach_unordered},
    {"reattach_then_sync_new", reattach_then_sync_new},
    {"pending_attach", pending_attach},
    {"read_syscall", read_syscall},
    {"repeated_touch", repeated_touch},
    {"real_crash", real_crash},
    {"touch_after_sync", touch_after_sync},
    {"single_other_stream_busy", single_other_stream_busy},
    {"host_attached", host_attached},
    {"query_until_done", query_until_done},
    {"event_after_work", event_after_work},
    {"context_sync", context_sync},
    {"sync_copy_blocking", sync_copy_blocking},
    {"sync_copy_2d_after_attach", sync_copy_2d_after_attach},
    {"wait_event_chain", wait_event_chain},
    {"callback_own_stream", callback_own_stream},
    {"destroy_after_sync", destroy_after_sync},
    {"reattach_ordered", reattach_ordered},
    {"shared_page", shared_page},
    {"shared_global_touch_busy", shared_global_touch_busy},
    {"shared_handler_reads_busy", shared_handler_reads_busy},
    {"shared_word_busy", shared_word_busy},
    {"shared_word_read_blocked", shared_word_read_blocked},
    {"write_after_sync", write_after_sync},
    {"program_handler", program_handler},
    {"attach_burst_touch_busy", attach_burst_touch_busy},
    {"settled_touch_busy", settled_touch_busy},
    {"settled_touch_after_sync", settled_touch_after_sync},
    {"attach_burst_touch_after_sync", attach_burst_touch_after_sync},
    {"attach_burst_other_touch_pending", attach_burst_other_touch_pending},
    {"attach_burst_other_after_sync", attach_burst_other_after_sync},
    {"temp_each_step_touch_kept", temp_each_step_touch_kept},
    {"temp_each_step_touch_temp", temp_each_step_touch_temp},
    {"temp_each_step_after_sync", temp_each_step_after_sync},
    {"stale_key_report_busy", stale_key_report_busy},
    {"stale_key_report_idle", stale_key_report_idle},
    {"threads_same_site_pair", threads_same_site_pair},
    {"threads_same_site_structures", threads_same_site_structures},
    {"threads_same_site_lanes", threads_same_site_lanes},
};

int main(int argc, char **argv) {
  CUmodule mod;
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_cuda("link");
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&kernel, mod, "touch"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  return finish();
}
