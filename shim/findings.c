/* findings.c - the shim's side of reporting: completes a finding with what
 * only the shim knows (the driver's answer and its name) and hands it over. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "shim.h"

void ac_emit_finding(struct ac_finding *f, enum ac_driver_outcome outcome, CUresult driver_result) {
  const char *name = NULL;
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
  ac_report_finding(f);
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
  if (result == CUDA_SUCCESS) describe_cuda(&facts);
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
