/* tp_soak.c - a long random run of legal operations on several threads, as
 * a real application mixes them: allocations (small ones share pages,
 * across threads), single and host attaches, kernels, memsets, three kinds
 * of synchronisation, CPU reads and writes once they are allowed, read(2)
 * into managed memory, frees. Each thread draws its operations from its own
 * generator seeded from SEED, and folds everything it reads into a hash, so
 * the output depends only on the arguments.
 *
 *   tp_soak right SEED ITERATIONS [THREADS]   legal only: no finding
 *   tp_soak wrong SEED ITERATIONS [THREADS]   also reads single-attached
 *                                             memory while its stream
 *                                             works: one AC201 each (the
 *                                             count is printed), and no
 *                                             cuCtxSynchronize
 *
 * ITERATIONS is per thread (a few thousand over the stand-in driver in CI,
 * a million on a GPU); THREADS defaults to 8. Memory is touched only where
 * the programming model allows it: single-attached memory after its stream
 * synchronised, host-attached memory at any time once its attach has
 * completed; kernels and memsets get single-attached memory of their own
 * stream only. What a memset wrote is never read (the stand-in driver moves
 * no data); the CPU writes such memory before it reads it again.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp.h"

enum { SLOTS = 12, PAGE = 4096, FILE_BYTES = 1 << 20, MAX_THREADS = 64 };

enum attach { NONE, SINGLE, HOST };

struct slot {
  CUdeviceptr p;
  size_t n;
  enum attach attached;
  bool settled; /* its last attach is behind a synchronisation */
  bool known;   /* the CPU knows what it holds (a memset makes it unknown) */
};

struct worker {
  int id;
  uint64_t rng;
  CUstream s;
  CUevent ev;
  bool busy; /* work on s since the last synchronisation */
  struct slot slot[SLOTS];
  uint32_t hash;
  long ops, allocs, frees, attaches, launches, memsets, syncs, touches, reads, forbidden;
};

static int file_fd;
static long iterations;
static bool wrong;
static uint64_t seed;

static uint64_t next(struct worker *w) {
  w->rng ^= w->rng >> 12, w->rng ^= w->rng << 25, w->rng ^= w->rng >> 27;
  return w->rng * 2685821657736338717ull;
}

static unsigned below(struct worker *w, unsigned n) {
  return (unsigned)(next(w) >> 33) % n;
}

static void fold(struct worker *w, uint32_t v) {
  w->hash = (w->hash ^ v) * 16777619u;
}

/* A slot in the given state, picked at random; -1 if none. */
static int pick(struct worker *w, bool (*ok)(const struct worker *, const struct slot *)) {
  int start = (int)below(w, SLOTS);
  for (int i = 0; i < SLOTS; i++) {
    int k = (start + i) % SLOTS;
    if (ok(w, &w->slot[k])) return k;
  }
  return -1;
}

static bool is_free(const struct worker *w, const struct slot *sl) {
  (void)w;
  return sl->attached == NONE;
}
static bool is_used(const struct worker *w, const struct slot *sl) {
  (void)w;
  return sl->attached != NONE;
}
static bool is_single(const struct worker *w, const struct slot *sl) {
  (void)w;
  return sl->attached == SINGLE && sl->settled;
}
/* Where the CPU may touch now. */
static bool is_touchable(const struct worker *w, const struct slot *sl) {
  return sl->settled && (sl->attached == HOST || (sl->attached == SINGLE && !w->busy));
}
/* Single-attached memory of a working stream with a page of its own: a read
 * there is always caught, on shared pages too. */
static bool is_forbidden(const struct worker *w, const struct slot *sl) {
  return sl->attached == SINGLE && sl->settled && w->busy && sl->n >= 4 * PAGE;
}

/* The buggy variant leaves cuCtxSynchronize out: another thread's would
 * complete this thread's stream between its launch and its forbidden read,
 * making the read legal, and the count of findings a matter of timing. */
static void synchronise(struct worker *w) {
  switch (below(w, wrong ? 2 : 3)) {
  case 0:
    EXPECT_RC(cu.cuStreamSynchronize(w->s), CUDA_SUCCESS);
    break;
  case 1:
    EXPECT_RC(cu.cuEventRecord(w->ev, w->s), CUDA_SUCCESS);
    EXPECT_RC(cu.cuEventSynchronize(w->ev), CUDA_SUCCESS);
    break;
  default:
    EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  }
  w->busy = false;
  for (int k = 0; k < SLOTS; k++)
    w->slot[k].settled = true;
  w->syncs++;
}

static void attach(struct worker *w, struct slot *sl, enum attach to) {
  unsigned flags = to == SINGLE ? CU_MEM_ATTACH_SINGLE : CU_MEM_ATTACH_HOST;
  EXPECT_RC(cu.cuStreamAttachMemAsync(w->s, sl->p, 0, flags), CUDA_SUCCESS);
  sl->attached = to;
  sl->settled = false;
  w->busy = true;
  w->attaches++;
}

static void op_alloc(struct worker *w) {
  int k = pick(w, is_free);
  if (k < 0) return;
  struct slot *sl = &w->slot[k];
  /* a third small (sharing pages with other threads' allocations), the rest
   * 16 KiB to 256 KiB */
  sl->n = below(w, 3) == 0 ? 64 * (1 + below(w, 64)) : (size_t)PAGE * (4 + below(w, 61));
  unsigned how = below(w, 3);
  EXPECT_RC(
      cu.cuMemAllocManaged(&sl->p, sl->n, how == 2 ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST),
      CUDA_SUCCESS);
  sl->attached = HOST, sl->settled = true, sl->known = false;
  if (how != 0) attach(w, sl, SINGLE); /* GLOBAL or HOST to this thread's stream */
  w->allocs++;
}

static void op_attach(struct worker *w) {
  int k = pick(w, is_used);
  if (k >= 0) attach(w, &w->slot[k], w->slot[k].attached == SINGLE ? HOST : SINGLE);
}

static void op_launch(struct worker *w) {
  int k = pick(w, is_single);
  if (k < 0) return;
  tp_launch(w->s, w->slot[k].p);
  w->busy = true;
  w->launches++;
}

static void op_memset(struct worker *w) {
  int k = pick(w, is_single);
  if (k < 0) return;
  struct slot *sl = &w->slot[k];
  EXPECT_RC(cuMemsetD8Async(sl->p, (unsigned char)below(w, 256), sl->n, w->s), CUDA_SUCCESS);
  sl->known = false;
  w->busy = true;
  w->memsets++;
}

static void op_touch(struct worker *w) {
  int k = pick(w, is_touchable);
  if (k < 0) return;
  struct slot *sl = &w->slot[k];
  if (sl->known) fold(w, tp_sum((void *)sl->p, sl->n));
  tp_fill((void *)sl->p, sl->n, (unsigned)next(w));
  sl->known = true;
  w->touches++;
}

static void op_read(struct worker *w) {
  int k = pick(w, is_touchable);
  if (k < 0) return;
  struct slot *sl = &w->slot[k];
  size_t n = sl->n < FILE_BYTES ? sl->n : FILE_BYTES;
  off_t at = (off_t)below(w, (unsigned)(FILE_BYTES - n + 1));
  ssize_t r = pread(file_fd, (void *)sl->p, n, at);
  fold(w, (uint32_t)r);
  if (r == (ssize_t)n) {
    fold(w, tp_sum((void *)sl->p, n));
    sl->known = sl->known || n == sl->n;
  }
  w->reads++;
}

static void op_free(struct worker *w) {
  int k = pick(w, is_used);
  if (k < 0) return;
  if (w->busy) synchronise(w);
  EXPECT_RC(cu.cuMemFree(w->slot[k].p), CUDA_SUCCESS);
  w->slot[k].attached = NONE;
  w->frees++;
}

/* One place, so that every forbidden read is the same finding. What it
 * reads races with the GPU's writes (that is the bug), so only the fact of
 * the read goes into the hash, not the byte. */
__attribute__((noinline)) static void forbidden_read(struct worker *w, const struct slot *sl) {
  uintptr_t page = (sl->p + PAGE - 1) / PAGE * PAGE + PAGE; /* wholly inside the allocation */
  (void)*(volatile unsigned char *)page;
  fold(w, 1);
}

static void op_forbidden(struct worker *w) {
  int k = pick(w, is_single);
  if (k < 0 || w->slot[k].n < 4 * PAGE) return;
  tp_launch(w->s, w->slot[k].p);
  w->busy = true;
  if (is_forbidden(w, &w->slot[k])) forbidden_read(w, &w->slot[k]), w->forbidden++;
}

static void *soak(void *arg) {
  struct worker *w = arg;
  w->rng = (seed + 1) * 0x9e3779b97f4a7c15ull + (uint64_t)w->id * 0x632be59bd9b4e019ull;
  w->hash = 2166136261u;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  w->s = tp_stream();
  EXPECT_RC(cu.cuEventCreate(&w->ev, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  for (long i = 0; i < iterations; i++, w->ops++) {
    unsigned what = below(w, wrong ? 20 : 19);
    if (what < 3)
      op_alloc(w);
    else if (what < 5)
      op_attach(w);
    else if (what < 8)
      op_launch(w);
    else if (what < 9)
      op_memset(w);
    else if (what < 12)
      synchronise(w);
    else if (what < 15)
      op_touch(w);
    else if (what < 17)
      op_read(w);
    else if (what < 19)
      op_free(w);
    else
      op_forbidden(w);
  }
  synchronise(w);
  for (int k = 0; k < SLOTS; k++)
    if (w->slot[k].attached != NONE) EXPECT_RC(cu.cuMemFree(w->slot[k].p), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(w->ev), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(w->s), CUDA_SUCCESS);
  return NULL;
}

static void run(bool buggy) {
  wrong = buggy;
  if (tp_argc < 2)
    fprintf(stderr, "usage: tp_soak right|wrong SEED ITERATIONS [THREADS]\n"), exit(2);
  seed = strtoull(tp_argv[0], NULL, 0);
  iterations = atol(tp_argv[1]);
  int threads = tp_argc > 2 ? atoi(tp_argv[2]) : 8;
  if (threads < 1 || threads > MAX_THREADS) fprintf(stderr, "tp_soak: 1 to 64 threads\n"), exit(2);
  /* the file read(2) reads from: a pattern in memory of its own */
  file_fd = memfd_create("tp_soak", MFD_CLOEXEC);
  static unsigned char data[FILE_BYTES];
  tp_fill(data, FILE_BYTES, 17);
  if (file_fd < 0 || write(file_fd, data, FILE_BYTES) != FILE_BYTES)
    perror("tp_soak: pattern file"), exit(2);
  tp_start();
  static struct worker w[MAX_THREADS];
  pthread_t t[MAX_THREADS];
  for (int i = 0; i < threads; i++) {
    w[i].id = i;
    pthread_create(&t[i], NULL, soak, &w[i]);
  }
  long forbidden = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    printf("thread %d: %ld ops: %ld allocs, %ld frees, %ld attaches, %ld launches, %ld memsets, "
           "%ld syncs, %ld touches, %ld reads; hash %08x\n",
           i, w[i].ops, w[i].allocs, w[i].frees, w[i].attaches, w[i].launches, w[i].memsets,
           w[i].syncs, w[i].touches, w[i].reads, w[i].hash);
    forbidden += w[i].forbidden;
  }
  if (wrong) printf("forbidden reads: %ld\n", forbidden);
  close(file_fd);
}

static void right(void) {
  run(false);
}

static void wrong_case(void) {
  run(true);
}

static const struct scenario_case cases[] = {{"right", right}, {"wrong", wrong_case}};

TP_MAIN(cases)
