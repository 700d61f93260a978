/* fake_stream.c - streams, events, host functions, graph capture and
 * cuStreamAttachMemAsync.
 *
 * Work is a sequence number per stream. Kernels and copies complete the moment
 * they are enqueued; host functions run on one driver thread, in order, and
 * everything enqueued on a stream after a host function completes when it
 * has run. Stream handles are recycled as the real driver's are.
 *
 * A capture sequence is begun on one stream (its origin) and other streams
 * join it by waiting for an event recorded in it; each keeps the nodes its
 * next captured node depends on, and the capture ends for all of them when
 * the origin ends it - refused with CUDA_ERROR_STREAM_CAPTURE_UNJOINED when a
 * node of the graph is not followed by the origin's last ones (cuda.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "fake.h"

#define STREAM_MAGIC 0x57e4a11u

/* A capture sequence: its graph, whether it was invalidated, where it began. */
struct fake_capture {
  uint64_t id; /* unique over the process, as cuStreamGetCaptureInfo's */
  struct fake_graph *graph;
  bool invalidated;
  struct fake_stream *origin;
  struct fake_capture *next; /* the captures in progress */
};

/* What a stream's work waited for on another stream (cuStreamWaitEvent):
 * once the host has seen the waiting work complete, it has seen that work
 * complete too, as the programming model orders it - on a Jetson the GPU
 * then gives back what the other stream may use (host_saw). The last
 * STREAM_DEPS waits of a stream are kept; serial tells a recycled stream. */
#define STREAM_DEPS 16
struct fake_dep {
  uint64_t at; /* the waiting stream's work up to here waited */
  struct fake_stream *on;
  uint64_t serial, seq; /* for on's work up to seq */
};

struct fake_stream {
  unsigned magic;
  unsigned flags;
  int priority;
  bool live;
  struct fake_capture *capture;  /* the capture it takes part in, or NULL */
  struct fake_capture_tail tail; /* ... the nodes its next node depends on */
  uint64_t enqueued, completed;
  unsigned pending_host_functions;
  CUgreenCtx green;         /* the green context it was made in, or NULL */
  CUcontext ctx;            /* its context (a green context's: its device's primary one) */
  struct fake_stream *next; /* live list, or free list once destroyed */
  struct fake_stream *prev; /* live list */
  void *self;               /* its handle: the key of the live streams' table */
  uint64_t serial;          /* unique over the process; 0 for the default streams */
  struct fake_dep deps[STREAM_DEPS];
  unsigned dep_count, dep_next;
  UT_hash_handle hh;
};

/* An event: where its last record stood on each stream it covered (one for
 * cuEventRecord, each stream of a green context for cuGreenCtxRecordEvent). */
#define EVENT_STREAMS 8
struct fake_event {
  unsigned magic;
  unsigned flags;
  CUcontext ctx; /* current when it was made */
  /* Last recorded in a capture: which one, and the nodes it stands for there. */
  uint64_t capture_id;
  struct fake_capture_tail tail;
  size_t count;
  struct {
    struct fake_stream *stream;
    uint64_t seq;
  } at[EVENT_STREAMS];
};

struct host_task {
  struct fake_stream *stream;
  uint64_t seq;
  CUhostFn fn;
  void *data;
  struct host_task *next;
};

static struct fake_stream *live_streams, *free_streams;
/* The live streams by handle: a handle is resolved in constant time, as the
 * real driver does, so a measure of the shim over many streams is not one
 * of this list. */
static struct fake_stream *live_by_handle;
static struct fake_stream legacy_stream = {.magic = STREAM_MAGIC, .live = true};
static __thread struct fake_stream per_thread_stream = {.magic = STREAM_MAGIC, .live = true};
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static struct host_task *tasks_head, *tasks_tail;
static pthread_once_t worker_once = PTHREAD_ONCE_INIT;
static unsigned host_functions_pending; /* on every stream */

/* The host observed that s's work up to seq completed (caller holds
 * fake_lock): on a Jetson the GPU gives back what s may use, if nothing was
 * enqueued after. */
static void host_saw_from(struct fake_stream *s, uint64_t seq, int depth) {
  if (s->pending_host_functions == 0 && seq >= s->enqueued) fake_tegra_idle(s);
  if (depth == 8) return; /* a chain of waits that long is not followed further */
  for (unsigned i = 0; i < s->dep_count; i++) {
    const struct fake_dep *d = &s->deps[i];
    if (d->at <= seq && d->on->serial == d->serial) host_saw_from(d->on, d->seq, depth + 1);
  }
}
static void host_saw(struct fake_stream *s, uint64_t seq) {
  host_saw_from(s, seq, 0);
}

/* s's work enqueued so far waited for e's work (caller holds fake_lock). */
static void note_waited(struct fake_stream *s, const struct fake_event *e);

bool fake_stream_is_null(CUstream h, bool per_thread_entry) {
  return h == NULL && !per_thread_entry;
}

/* Caller holds fake_lock. */
static struct fake_stream *resolve(CUstream h, bool per_thread_entry) {
  if (h == NULL) return per_thread_entry ? &per_thread_stream : &legacy_stream;
  if (h == CU_STREAM_LEGACY) return &legacy_stream;
  if (h == CU_STREAM_PER_THREAD) return &per_thread_stream;
  struct fake_stream *s;
  void *key = (void *)h;
  HASH_FIND_PTR(live_by_handle, &key, s);
  return s;
}

struct fake_stream *fake_stream_checked(CUstream h, bool per_thread_entry) {
  struct fake_stream *s = resolve(h, per_thread_entry);
  if (!s) {
    pthread_mutex_unlock(&fake_lock);
    fake_crash_like_the_driver();
  }
  return s;
}

/* ---- work and completion ---- */

static void *host_function_thread(void *unused) {
  (void)unused;
  pthread_mutex_lock(&fake_lock);
  for (;;) {
    while (!tasks_head)
      pthread_cond_wait(&progress, &fake_lock);
    struct host_task *t = tasks_head;
    tasks_head = t->next;
    if (!tasks_head) tasks_tail = NULL;
    pthread_mutex_unlock(&fake_lock);
    t->fn(t->data);
    pthread_mutex_lock(&fake_lock);
    struct fake_stream *s = t->stream;
    s->pending_host_functions--;
    host_functions_pending--;
    /* Work after this host function completes up to the next one still queued. */
    uint64_t until = s->enqueued;
    for (struct host_task *n = tasks_head; n; n = n->next)
      if (n->stream == s) {
        until = n->seq - 1;
        break;
      }
    s->completed = until;
    free(t);
    pthread_cond_broadcast(&progress);
  }
  return NULL;
}

static void start_worker(void) {
  pthread_t tid;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_create(&tid, &attr, host_function_thread, NULL);
  pthread_attr_destroy(&attr);
}

/* Enqueues one operation; caller holds fake_lock. Returns its sequence number. */
static uint64_t enqueue(struct fake_stream *s) {
  s->enqueued++;
  if (s->pending_host_functions == 0) s->completed = s->enqueued;
  return s->enqueued;
}

CUresult fake_enqueue_kernel(CUstream h, bool per_thread_entry) {
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, per_thread_entry);
  if (!s->capture) {
    enqueue(s);
    fake_tegra_active(s);
  }
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

CUresult fake_enqueue_work(CUstream h, bool per_thread_entry) {
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, per_thread_entry);
  if (!s->capture) enqueue(s);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

static void wait_for(struct fake_stream *s, uint64_t seq) {
  while (s->completed < seq)
    pthread_cond_wait(&progress, &fake_lock);
}

static CUresult enqueue_host_function(CUstream h, bool per_thread_entry, CUhostFn fn, void *data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  struct host_task *t = calloc(1, sizeof *t);
  if (!t) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_once(&worker_once, start_worker);
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, per_thread_entry);
  if (s->capture) { /* a host node of the capture's graph */
    pthread_mutex_unlock(&fake_lock);
    free(t);
    fake_capture_plain(h, per_thread_entry, CU_GRAPH_NODE_TYPE_HOST);
    return CUDA_SUCCESS;
  }
  s->pending_host_functions++;
  host_functions_pending++;
  fake_tegra_active(s);
  t->stream = s;
  t->seq = enqueue(s);
  t->fn = fn;
  t->data = data;
  if (tasks_tail)
    tasks_tail->next = t;
  else
    tasks_head = t;
  tasks_tail = t;
  pthread_cond_broadcast(&progress);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *data) {
  return enqueue_host_function(h, false, fn, data);
}
FAKE_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *data) {
  return enqueue_host_function(h, true, fn, data);
}

struct callback_call {
  CUstreamCallback cb;
  CUstream stream;
  void *data;
};
static void run_stream_callback(void *arg) {
  struct callback_call *c = arg;
  c->cb(c->stream, CUDA_SUCCESS, c->data);
  free(c);
}
static CUresult add_callback(CUstream h, bool pt, CUstreamCallback cb, void *data, unsigned flags) {
  if (!cb || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  struct callback_call *c = malloc(sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (struct callback_call){cb, h, data};
  CUresult r = enqueue_host_function(h, pt, run_stream_callback, c);
  if (r != CUDA_SUCCESS) free(c);
  return r;
}
FAKE_EXPORT CUresult cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *d, unsigned f) {
  return add_callback(h, false, cb, d, f);
}
FAKE_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *d,
                                              unsigned f) {
  return add_callback(h, true, cb, d, f);
}

/* ---- streams ---- */

static CUresult create_stream(CUstream *ph, unsigned flags, int priority, CUgreenCtx green) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = free_streams;
  if (s)
    free_streams = s->next;
  else
    s = malloc(sizeof *s);
  if (!s) {
    pthread_mutex_unlock(&fake_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  static uint64_t last_serial;
  *s = (struct fake_stream){.magic = STREAM_MAGIC,
                            .serial = ++last_serial,
                            .flags = flags,
                            .priority = priority,
                            .live = true,
                            .green = green,
                            .ctx = green ? fake_green_primary(green) : fake_current_context(),
                            .next = live_streams,
                            .self = s};
  if (live_streams) live_streams->prev = s;
  live_streams = s;
  HASH_ADD_PTR(live_by_handle, self, s);
  pthread_mutex_unlock(&fake_lock);
  *ph = (CUstream)s;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
  return create_stream(ph, flags, 0, NULL);
}
FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority) {
  return create_stream(ph, flags, priority, NULL);
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream h) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, false);
  if (s->prev)
    s->prev->next = s->next;
  else
    live_streams = s->next;
  if (s->next) s->next->prev = s->prev;
  HASH_DEL(live_by_handle, s);
  s->live = false;
  /* Recycle the handle once nothing queued refers to it. */
  if (s->pending_host_functions == 0) {
    s->next = free_streams;
    free_streams = s;
  }
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamDestroy(CUstream h) {
  return cuStreamDestroy_v2(h);
}

static CUresult stream_synchronize(CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, pt);
  wait_for(s, s->enqueued);
  host_saw(s, s->enqueued);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream h) {
  return stream_synchronize(h, false);
}
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) {
  return stream_synchronize(h, true);
}

static CUresult stream_query(CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, pt);
  CUresult r = s->completed == s->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  if (r == CUDA_SUCCESS) host_saw(s, s->enqueued);
  pthread_mutex_unlock(&fake_lock);
  return r;
}
FAKE_EXPORT CUresult cuStreamQuery(CUstream h) {
  return stream_query(h, false);
}
FAKE_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) {
  return stream_query(h, true);
}

FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  while (tasks_head)
    pthread_cond_wait(&progress, &fake_lock);
  for (struct fake_stream *s = live_streams; s; s = s->next)
    wait_for(s, s->enqueued);
  fake_tegra_all_idle();
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  (void)ctx;
  return cuCtxSynchronize();
}

/* ---- events ---- */

FAKE_EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ph) return CUDA_ERROR_INVALID_VALUE;
  struct fake_event *e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = STREAM_MAGIC;
  e->flags = flags;
  e->ctx = fake_current_context();
  *ph = (CUevent)e;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent h) {
  if (!h) return CUDA_ERROR_INVALID_HANDLE;
  free(h);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy(CUevent h) {
  return cuEventDestroy_v2(h);
}

/* The event now covers s's work so far; caller holds fake_lock. */
static void record_at(struct fake_event *e, struct fake_stream *s) {
  e->capture_id = 0;
  e->count = 1;
  e->at[0].stream = s;
  e->at[0].seq = s->enqueued;
}

/* A record on a capturing stream captures the event: it stands for the
 * stream's place in the capture, and covers no work that runs now. */
static CUresult event_record(CUevent h, CUstream sh, bool pt) {
  struct fake_event *e = (struct fake_event *)h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(sh, pt);
  e->capture_id = s->capture ? s->capture->id : 0;
  if (s->capture)
    e->tail = s->tail, e->count = 0;
  else
    record_at(e, s);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

/* Whether every stream the event covers has reached it; caller holds fake_lock. */
static bool event_complete(const struct fake_event *e) {
  for (size_t i = 0; i < e->count; i++)
    if (e->at[i].stream->completed < e->at[i].seq) return false;
  return true;
}

/* ---- the events a launch records (cuLaunchKernelEx's attributes) ----
 * A programmatic event fires when every block of the kernel has triggered it,
 * a launch completion event when every block has begun: both after the work
 * before the kernel, before the kernel completes. Here a kernel completes the
 * moment it may begin, so both are recorded at the kernel. */

/* Whether attribute a records an event: which, and with what record flags. */
static bool launch_event(const CUlaunchAttribute *a, struct fake_event **e, unsigned *flags) {
  if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT) {
    *e = (struct fake_event *)a->value.programmaticEvent.event;
    *flags = (unsigned)a->value.programmaticEvent.flags;
    return true;
  }
  if (a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT) {
    *e = (struct fake_event *)a->value.launchCompletionEvent.event;
    *flags = (unsigned)a->value.launchCompletionEvent.flags;
    return true;
  }
  return false;
}

/* The driver documents that such an event must disable timing and that its
 * record may not be external. */
bool fake_launch_events_valid(const CUlaunchConfig *config) {
  for (unsigned i = 0; config->attrs && i < config->numAttrs; i++) {
    struct fake_event *e;
    unsigned flags;
    if (launch_event(&config->attrs[i], &e, &flags) &&
        (!e || !(e->flags & CU_EVENT_DISABLE_TIMING) || (flags & CU_EVENT_RECORD_EXTERNAL)))
      return false;
  }
  return true;
}

void fake_launch_events_record(const CUlaunchConfig *config, bool pt) {
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(config->hStream, pt);
  for (unsigned i = 0; !s->capture && config->attrs && i < config->numAttrs; i++) {
    struct fake_event *e;
    unsigned flags;
    if (launch_event(&config->attrs[i], &e, &flags)) record_at(e, s);
  }
  pthread_mutex_unlock(&fake_lock);
}
FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  return event_record(e, s, false);
}
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) {
  return event_record(e, s, true);
}
/* CU_EVENT_RECORD_EXTERNAL on a capturing stream makes an event-record node. */
static CUresult record_with_flags(CUevent e, CUstream s, unsigned f, bool pt) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if ((f & CU_EVENT_RECORD_EXTERNAL) && fake_capture_event(s, pt, e)) return CUDA_SUCCESS;
  return event_record(e, s, pt);
}
FAKE_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned f) {
  return record_with_flags(e, s, f, false);
}
FAKE_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned f) {
  return record_with_flags(e, s, f, true);
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent h) {
  struct fake_event *e = (struct fake_event *)h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_lock);
  for (size_t i = 0; i < e->count; i++)
    wait_for(e->at[i].stream, e->at[i].seq);
  for (size_t i = 0; i < e->count; i++)
    host_saw(e->at[i].stream, e->at[i].seq);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventQuery(CUevent h) {
  struct fake_event *e = (struct fake_event *)h;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_lock);
  CUresult r = event_complete(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  for (size_t i = 0; r == CUDA_SUCCESS && i < e->count; i++)
    host_saw(e->at[i].stream, e->at[i].seq);
  pthread_mutex_unlock(&fake_lock);
  return r;
}

static struct fake_capture *captures; /* in progress */

static struct fake_capture *capture_by_id(uint64_t id) {
  for (struct fake_capture *c = captures; id && c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

/* tail gains the nodes of more (a wait inside one capture). */
static void tail_join(struct fake_capture_tail *tail, const struct fake_capture_tail *more) {
  for (size_t i = 0; i < more->count; i++) {
    bool have = false;
    for (size_t j = 0; j < tail->count; j++)
      have |= tail->node[j] == more->node[i];
    if (!have && tail->count < FAKE_CAPTURE_DEPS) tail->node[tail->count++] = more->node[i];
  }
}

/* A wait for an event captured in a capture in progress: the stream joins
 * that capture (or, in it already, its next node depends on the event's
 * nodes too); a stream of another capture would cross from one sequence into
 * another, which the driver refuses. True if the wait was such a one. */
static bool wait_captured(struct fake_stream *s, const struct fake_event *e, CUresult *r) {
  struct fake_capture *c = capture_by_id(e->capture_id);
  if (!c) return false;
  *r = CUDA_SUCCESS;
  if (s == &legacy_stream) {
    *r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  } else if (!s->capture) {
    s->capture = c;
    s->tail = e->tail;
  } else if (s->capture == c) {
    tail_join(&s->tail, &e->tail);
  } else {
    s->capture->invalidated = c->invalidated = true;
    *r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  return true;
}

/* CU_EVENT_WAIT_EXTERNAL while capturing: an event-wait node of the graph. */
static CUresult stream_wait_event(CUstream sh, CUevent h, unsigned flags, bool pt) {
  if (!h) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;
  CUresult r;
  pthread_mutex_lock(&fake_lock);
  bool captured = wait_captured(fake_stream_checked(sh, pt), (struct fake_event *)h, &r);
  pthread_mutex_unlock(&fake_lock);
  if (captured) return r;
  if ((flags & CU_EVENT_WAIT_EXTERNAL) && fake_capture_event_wait(sh, pt, h)) return CUDA_SUCCESS;
  r = fake_enqueue_work(sh, pt);
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&fake_lock);
    note_waited(fake_stream_checked(sh, pt), (struct fake_event *)h);
    pthread_mutex_unlock(&fake_lock);
  }
  return r;
}

static void note_waited(struct fake_stream *s, const struct fake_event *e) {
  for (size_t i = 0; i < e->count; i++) {
    struct fake_stream *on = e->at[i].stream;
    if (on == s) continue;
    s->deps[s->dep_next] = (struct fake_dep){s->enqueued, on, on->serial, e->at[i].seq};
    s->dep_next = (s->dep_next + 1) % STREAM_DEPS;
    if (s->dep_count < STREAM_DEPS) s->dep_count++;
  }
}
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) {
  return stream_wait_event(s, e, f, false);
}
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned f) {
  return stream_wait_event(s, e, f, true);
}

/* ---- graph capture ---- */

static CUresult begin_capture(CUstream h, bool pt) {
  static uint64_t last_id;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, pt);
  struct fake_capture *c = NULL;
  CUresult r = CUDA_SUCCESS;
  if (s == &legacy_stream)
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  else if (s->capture)
    r = CUDA_ERROR_ILLEGAL_STATE;
  else if (!(c = calloc(1, sizeof *c)) || !(c->graph = fake_graph_new()))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    *c = (struct fake_capture){++last_id, c->graph, false, s, captures};
    captures = c;
    s->capture = c;
    s->tail.count = 0;
  } else {
    free(c);
  }
  pthread_mutex_unlock(&fake_lock);
  return r;
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  (void)mode;
  return begin_capture(h, false);
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  (void)mode;
  return begin_capture(h, true);
}
FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream h) {
  return begin_capture(h, false);
}
FAKE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  return begin_capture(h, true);
}

/* Every stream of capture c leaves it, and c ends; caller holds fake_lock. */
static void capture_over(struct fake_capture *c) {
  for (struct fake_stream *s = live_streams; s; s = s->next)
    if (s->capture == c) s->capture = NULL;
  if (per_thread_stream.capture == c) per_thread_stream.capture = NULL;
  struct fake_capture **link = &captures;
  while (*link != c)
    link = &(*link)->next;
  *link = c->next;
  fake_graph_free(c->graph); /* an abandoned capture's nodes */
  free(c);
}

/* Only the origin ends a capture, and only with every other stream joined
 * back into it: each node then comes before the origin's last ones. */
static CUresult end_capture(CUstream h, CUgraph *graph, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, pt);
  struct fake_capture *c = s->capture;
  CUresult r = CUDA_SUCCESS;
  *graph = NULL;
  if (!c)
    r = CUDA_ERROR_ILLEGAL_STATE;
  else if (c->origin != s)
    r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  else if (c->invalidated)
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  else if (!fake_graph_joined(c->graph, &s->tail))
    r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  else
    *graph = (CUgraph)c->graph, c->graph = NULL;
  if (c && c->origin == s) capture_over(c);
  pthread_mutex_unlock(&fake_lock);
  return r;
}
FAKE_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *g) {
  return end_capture(h, g, false);
}
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) {
  return end_capture(h, g, true);
}

struct fake_graph *fake_capture_graph_locked(CUstream h, bool pt, struct fake_capture_tail **tail) {
  struct fake_stream *s = fake_stream_checked(h, pt);
  *tail = &s->tail;
  return s->capture ? s->capture->graph : NULL;
}

/* ---- attach ---- */

static bool memory_accepts_attach(CUdeviceptr dptr, size_t length) {
  struct fake_alloc *a = fake_find_alloc(dptr);
  if (dptr == 0) return false;
  if (a && a->kind == FAKE_MANAGED) return dptr == a->base && (length == 0 || length == a->size);
  if (a) return false; /* device or pinned */
  return fake_device_attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, fake_current_device()) &&
         length != 0;
}

/* FAKECUDA_ATTACH_US=N: an attach that took effect returns N microseconds
 * later, as one does that waits behind the driver's own work; the program's
 * other threads run meanwhile (a test's window for a race). */
static void attach_returns_late(void) {
  static long us = -1;
  long v = __atomic_load_n(&us, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("FAKECUDA_ATTACH_US");
    v = e ? atol(e) : 0;
    __atomic_store_n(&us, v, __ATOMIC_RELAXED);
  }
  if (v > 0) usleep((useconds_t)v);
}

/* FAKECUDA_ATTACH_REFUSE=N: the Nth attach that would take effect (from 1)
 * is refused with CUDA_ERROR_OUT_OF_MEMORY and changes nothing, as any call
 * of the real driver may be when it runs out of resources: a refusal no
 * rule foresees. Caller holds fake_lock. */
static bool attach_refused_now(void) {
  static long nth = -1, seen;
  if (nth < 0) {
    const char *e = getenv("FAKECUDA_ATTACH_REFUSE");
    nth = e ? atol(e) : 0;
  }
  return nth > 0 && ++seen == nth;
}

/* The checks in the order that reproduces docs/driver-facts.md row by row. */
static CUresult attach(CUstream h, CUdeviceptr dptr, size_t length, unsigned flags, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags == 0) fake_crash_like_the_driver();
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = fake_stream_checked(h, pt);
  CUresult r = CUDA_SUCCESS;
  if (s->capture) {
    s->capture->invalidated = true;
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
             flags != CU_MEM_ATTACH_SINGLE) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (flags == CU_MEM_ATTACH_SINGLE && fake_stream_is_null(h, pt)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (!memory_accepts_attach(dptr, length)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (attach_refused_now()) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    struct fake_alloc *a = fake_find_alloc(dptr);
    if (a) a->assoc = flags, a->stream = flags == CU_MEM_ATTACH_SINGLE ? s : NULL;
    enqueue(s);
    fake_tegra_changed();
  }
  pthread_mutex_unlock(&fake_lock);
  if (r == CUDA_SUCCESS) attach_returns_late();
  return r;
}

FAKE_EXPORT CUresult cuStreamAttachMemAsync(CUstream h, CUdeviceptr p, size_t n, unsigned f) {
  return attach(h, p, n, f, false);
}
FAKE_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream h, CUdeviceptr p, size_t n, unsigned f) {
  return attach(h, p, n, f, true);
}

/* One operation on the legacy stream (the per-thread stream for per_thread)
 * that the host waits for: a synchronous copy or set (fake_copy.c). */
CUresult fake_sync_work(bool per_thread) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  struct fake_stream *s = per_thread ? &per_thread_stream : &legacy_stream;
  wait_for(s, enqueue(s));
  host_saw(s, s->enqueued);
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}

/* Destroys every created stream, as the end of their context does: handles
 * are recycled, and one used afterwards is no live stream. */
void fake_streams_end_all(void) {
  pthread_mutex_lock(&fake_lock);
  while (live_streams) {
    struct fake_stream *s = live_streams;
    live_streams = s->next;
    HASH_DEL(live_by_handle, s);
    s->live = false;
    if (s->pending_host_functions == 0) {
      s->next = free_streams;
      free_streams = s;
    }
  }
  pthread_mutex_unlock(&fake_lock);
}

/* A green context's stream is a stream like any other; the driver requires
 * CU_STREAM_NON_BLOCKING. */
FAKE_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *ph, CUgreenCtx green, unsigned int flags,
                                            int priority) {
  if (!green) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  return create_stream(ph, flags, priority, green);
}

/* Whether s is one of the streams an event over a green context (green) or
 * a context (ctx: its own streams, its green contexts', its legacy and
 * per-thread default streams) covers. */
static bool stream_of_owner(const struct fake_stream *s, CUgreenCtx green, CUcontext ctx) {
  if (green) return s->green == green;
  return s->ctx == ctx || s == &legacy_stream || s == &per_thread_stream;
}

/* An event record over a green context or a context covers each of its
 * streams, and a wait holds each back; either, with a capturing stream
 * among them, is refused and invalidates the capture (both documented). */
static CUresult owner_event(CUgreenCtx green, CUcontext ctx, struct fake_event *e, bool record) {
  CUresult r = CUDA_SUCCESS;
  struct fake_stream *all[2] = {&legacy_stream, &per_thread_stream};
  pthread_mutex_lock(&fake_lock);
  for (struct fake_stream *s = live_streams; s; s = s->next)
    if (stream_of_owner(s, green, ctx) && s->capture) {
      s->capture->invalidated = true;
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  if (r == CUDA_SUCCESS && record) {
    e->count = 0;
    for (size_t i = 0; !green && i < 2; i++) {
      e->at[e->count].stream = all[i];
      e->at[e->count++].seq = all[i]->enqueued;
    }
    for (struct fake_stream *s = live_streams; s && e->count < EVENT_STREAMS; s = s->next)
      if (stream_of_owner(s, green, ctx)) {
        e->at[e->count].stream = s;
        e->at[e->count++].seq = s->enqueued;
      }
  }
  pthread_mutex_unlock(&fake_lock);
  return r;
}

static CUresult green_event(CUgreenCtx green, CUevent h, bool record) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!green || !h) return CUDA_ERROR_INVALID_HANDLE;
  return owner_event(green, NULL, (struct fake_event *)h, record);
}
FAKE_EXPORT CUresult cuGreenCtxRecordEvent(CUgreenCtx green, CUevent e) {
  return green_event(green, e, true);
}
FAKE_EXPORT CUresult cuGreenCtxWaitEvent(CUgreenCtx green, CUevent e) {
  return green_event(green, e, false);
}

/* A context's events: hCtx must be given (the documentation names no
 * "current context" for NULL) and the event made in it. */
static CUresult context_event(CUcontext ctx, CUevent h, bool record) {
  struct fake_event *e = (struct fake_event *)h;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (!e || e->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  return owner_event(NULL, ctx, e, record);
}
FAKE_EXPORT CUresult cuCtxRecordEvent(CUcontext ctx, CUevent e) {
  return context_event(ctx, e, true);
}
FAKE_EXPORT CUresult cuCtxWaitEvent(CUcontext ctx, CUevent e) {
  return context_event(ctx, e, false);
}

/* ---- stream memory operations: one operation each, which completes at once
 * (the GPU's read or write of the address is not played). The real driver
 * refuses a managed address with CUDA_ERROR_INVALID_VALUE
 * (docs/driver-facts.md). ---- */

static bool managed_address(CUdeviceptr addr) {
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(addr);
  bool managed = a && a->kind == FAKE_MANAGED;
  pthread_mutex_unlock(&fake_lock);
  return managed;
}

static CUresult value_op(CUstream h, bool pt, CUdeviceptr addr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (addr == 0 || managed_address(addr)) return CUDA_ERROR_INVALID_VALUE;
  return fake_enqueue_work(h, pt);
}

/* The address a batched operation names (0 for a flush or barrier). */
static CUdeviceptr op_address(const CUstreamBatchMemOpParams *op) {
  switch (op->operation) {
  case CU_STREAM_MEM_OP_WAIT_VALUE_32:
  case CU_STREAM_MEM_OP_WAIT_VALUE_64:
    return op->waitValue.address;
  case CU_STREAM_MEM_OP_WRITE_VALUE_32:
  case CU_STREAM_MEM_OP_WRITE_VALUE_64:
    return op->writeValue.address;
  default:
    return 0;
  }
}

#define FAKE_VALUE_OP(Name, PerThread, T)                                                          \
  FAKE_EXPORT CUresult Name(CUstream h, CUdeviceptr addr, T value, unsigned int flags) {           \
    (void)value, (void)flags;                                                                      \
    return value_op(h, PerThread, addr);                                                           \
  }
FAKE_VALUE_OP(cuStreamWaitValue32_v2, false, cuuint32_t)
FAKE_VALUE_OP(cuStreamWaitValue32_v2_ptsz, true, cuuint32_t)
FAKE_VALUE_OP(cuStreamWaitValue64_v2, false, cuuint64_t)
FAKE_VALUE_OP(cuStreamWaitValue64_v2_ptsz, true, cuuint64_t)
FAKE_VALUE_OP(cuStreamWriteValue32_v2, false, cuuint32_t)
FAKE_VALUE_OP(cuStreamWriteValue32_v2_ptsz, true, cuuint32_t)
FAKE_VALUE_OP(cuStreamWriteValue64_v2, false, cuuint64_t)
FAKE_VALUE_OP(cuStreamWriteValue64_v2_ptsz, true, cuuint64_t)

bool fake_mem_ops_name_managed(unsigned count, const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = 0; ops && i < count; i++)
    if (managed_address(op_address(&ops[i]))) return true;
  return false;
}

bool fake_mem_ops_valid(unsigned count, const CUstreamBatchMemOpParams *ops) {
  return count && ops && !fake_mem_ops_name_managed(count, ops);
}

static CUresult batch_mem_op(CUstream h, bool pt, unsigned count,
                             const CUstreamBatchMemOpParams *ops) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_mem_ops_valid(count, ops)) return CUDA_ERROR_INVALID_VALUE;
  return fake_enqueue_work(h, pt);
}
FAKE_EXPORT CUresult cuStreamBatchMemOp_v2(CUstream h, unsigned int count,
                                           CUstreamBatchMemOpParams *ops, unsigned int flags) {
  (void)flags;
  return batch_mem_op(h, false, count, ops);
}
FAKE_EXPORT CUresult cuStreamBatchMemOp_v2_ptsz(CUstream h, unsigned int count,
                                                CUstreamBatchMemOpParams *ops, unsigned int flags) {
  (void)flags;
  return batch_mem_op(h, true, count, ops);
}

/* ---- more work on a stream ---- */

/* A batch of prefetches: one operation of the stream (nothing migrates here). */
static CUresult prefetch_batch(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUstream h,
                               bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptrs || !sizes || count == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_prefetch_allowed()) return CUDA_ERROR_INVALID_DEVICE;
  return fake_enqueue_work(h, pt);
}
FAKE_EXPORT CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                             CUmemLocation *locs, size_t *loc_idxs, size_t num_locs,
                                             unsigned long long flags, CUstream h) {
  (void)locs, (void)loc_idxs, (void)num_locs, (void)flags;
  return prefetch_batch(dptrs, sizes, count, h, false);
}
FAKE_EXPORT CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                                  CUmemLocation *locs, size_t *loc_idxs,
                                                  size_t num_locs, unsigned long long flags,
                                                  CUstream h) {
  (void)locs, (void)loc_idxs, (void)num_locs, (void)flags;
  return prefetch_batch(dptrs, sizes, count, h, true);
}
