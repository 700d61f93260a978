/* findings.c - the shim's side of reporting: completes a finding with what
 * only the shim knows (the driver's answer and its name) and hands it over. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "shim.h"
#include "stack_depot.h"

/* The latest operations of ring up to tick; the call itself (the first later
 * record of api by the finding's thread: an attach is recorded after it was
 * judged) is kept too. */
static void copy_ring(struct ac_history *h, const struct ac_op_ring *ring, uint64_t tick,
                      const struct ac_finding *f) {
  h->present = true;
  h->count = ac_history_copy(ring, tick, h->op);
  h->total = ac_history_total_upto(ring, tick);
  const struct ac_op_record *call = ac_history_find_after(ring, tick, f->api, f->thread);
  if (!call) return;
  if (h->count == AC_HISTORY_MAX) /* the call is the one to keep */
    memmove(h->op, h->op + 1, sizeof h->op[0] * --h->count);
  h->op[h->count++] = *call;
  h->total++;
}

static void copy_stream(struct ac_history *h, uint64_t serial, uint64_t tick,
                        const struct ac_finding *f) {
  const struct ac_stream *s = ac_model_stream_by_serial(ac_model, serial);
  if (!s) return;
  copy_ring(h, &s->history, tick, f);
  h->stream_serial = s->serial;
  h->stream_kind = s->live ? s->kind : AC_STREAM_DESTROYED;
  h->stream_handle = s->handle;
  h->owner_thread = s->owner_thread;
  ac_origin_expand(&s->created, &h->created);
}

/* What the timeline of a report shows around f: the operations of its call's
 * stream, of the stream it conflicts with and of the host, as the model
 * recorded them up to when f was judged. */
static void take_history(struct ac_finding *f, struct ac_finding_history *h) {
  bool held = ac_model_held(); /* a finding made under the lock (AC402) */
  if (!held) ac_model_enter();
  memset(h, 0, sizeof *h);
  h->tick = f->busy.present ? f->busy.tick : ac_history_tick(ac_model);
  if (!f->tick) f->tick = h->tick; /* an attach: judged just now */
  copy_ring(&h->host, ac_history_host(ac_model), h->tick, f);
  copy_stream(&h->call, f->stream.serial, h->tick, f);
  if (f->busy.present && f->busy.stream_serial != f->stream.serial)
    copy_stream(&h->busy, f->busy.stream_serial, h->tick, f);
  const struct ac_alloc *a =
      f->alloc.present ? ac_model_find_alloc_at(ac_model, f->alloc.base) : NULL;
  if (a && a->tick <= h->tick) h->alloc_tick = a->tick;
  if (!held) ac_model_leave();
  f->history = h;
}

/* The devices as CUDA came up: the first one's name, and whether every one
 * has concurrent managed access (then strict findings say what they mean
 * there). Written once, before any finding can read them. */
static struct {
  char name[128];
  int all_concurrent; /* atomic: 1 once known true */
} devices;

static void note_devices(const struct ac_cuda_facts *facts) {
  int count = 0, concurrent = 1;
  snprintf(devices.name, sizeof devices.name, "%s",
           facts->device_count ? facts->device_names[0] : "this device");
  if (!ac_real.cuDeviceGetCount || ac_real.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1)
    return;
  for (int i = 0; i < count && concurrent; i++) {
    CUdevice dev;
    if (!ac_real.cuDeviceGet || ac_real.cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
        !ac_real.cuDeviceGetAttribute ||
        ac_real.cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                                     dev) != CUDA_SUCCESS)
      concurrent = 0;
  }
  __atomic_store_n(&devices.all_concurrent, concurrent != 0, __ATOMIC_RELEASE);
}

/* A finding judged by strict semantics that a device with concurrent managed
 * access would judge otherwise: it says so, with the device. */
static void note_semantics(struct ac_finding *f) {
  if (ac_rule_info(f->rule)->reach == AC_WRONG_EVERYWHERE ||
      ac_opts.semantics != AC_SEMANTICS_STRICT ||
      !__atomic_load_n(&devices.all_concurrent, __ATOMIC_ACQUIRE))
    return;
  f->semantics.present = true;
  snprintf(f->semantics.device, sizeof f->semantics.device, "%s", devices.name);
}

void ac_emit_finding(struct ac_finding *f, enum ac_driver_outcome outcome, CUresult driver_result) {
  struct ac_finding_history history;
  const char *name = NULL;
  if (ac_model) take_history(f, &history);
  note_semantics(f);
  f->outcome = outcome;
  f->driver_result = (int)driver_result;
  if (outcome == AC_DRIVER_CRASHES)
    snprintf(f->driver_result_name, sizeof f->driver_result_name, "(none yet)");
  else if (ac_real.cuGetErrorName && ac_real.cuGetErrorName(driver_result, &name) == CUDA_SUCCESS &&
           name)
    snprintf(f->driver_result_name, sizeof f->driver_result_name, "%s", name);
  else
    snprintf(f->driver_result_name, sizeof f->driver_result_name, "CUresult %d",
             (int)driver_result);
  bool error = ac_report_finding(f);
  f->history = NULL; /* it lives on this stack frame */
  /* A handler's finding drained at exit comes after the fact: reported only. */
  if (error && ac_opts.on_error == AC_ON_ERROR_HALT &&
      (!ac_guard_draining() || ac_guard_is_reporter()))
    ac_halt_at_finding(ac_rule_info(f->rule)->id, ac_guard_draining());
}

/* The session's hardware, for the reports: the driver's version and the
 * devices' names, asked once CUDA is up. */
static void describe_cuda(struct ac_cuda_facts *facts) {
  if (ac_real.cuDriverGetVersion) ac_real.cuDriverGetVersion(&facts->driver_version);
  int count = 0;
  if (!ac_real.cuDeviceGetCount || ac_real.cuDeviceGetCount(&count) != CUDA_SUCCESS) return;
  for (int i = 0; i < count && facts->device_count < AC_MAX_DEVICES_DESCRIBED; i++) {
    CUdevice dev;
    char *name = facts->device_names[facts->device_count];
    if (ac_real.cuDeviceGet && ac_real.cuDeviceGet(&dev, i) == CUDA_SUCCESS &&
        ac_real.cuDeviceGetName &&
        ac_real.cuDeviceGetName(name, sizeof facts->device_names[0], dev) == CUDA_SUCCESS)
      facts->device_count++;
  }
}

void ac_note_cuda_init(CUresult result) {
  static int told;
  if (__atomic_exchange_n(&told, 1, __ATOMIC_ACQ_REL)) return;
  struct ac_cuda_facts facts;
  memset(&facts, 0, sizeof facts);
  if (result == CUDA_SUCCESS) {
    describe_cuda(&facts);
    note_devices(&facts);
  }
  ac_report_cuda_init((int)result, &facts);
}

/* Goes where every line of the shim goes (report/sink.c): the log file when
 * there is one, else stderr unless --print-stderr off. */
void ac_log(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  ac_report_message(AC_MESSAGE_INFO, line);
}
