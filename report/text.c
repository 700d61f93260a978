/* text.c - a finding as a readable block, in the manner of the sanitizers:
 * what is wrong, the call, the driver's answer, the memory and where it was
 * made, the stack of the call, and the fix. */
#include <inttypes.h>
#include <string.h>

#include "report.h"

#define P AC_PREFIX

static void write_stack(FILE *out, const struct ac_stack *s) {
  for (int i = 0; i < s->depth; i++) {
    struct ac_frame fr;
    ac_symbolize(s->pc[i], &fr);
    const char *mod = strrchr(fr.module, '/');
    mod = mod ? mod + 1 : fr.module;
    fprintf(out, P "    #%d %p", i, s->pc[i]);
    if (fr.function) fprintf(out, " in %s+0x%lx", fr.function, fr.function_offset);
    if (fr.file) fprintf(out, " %s:%d", fr.file, fr.line);
    fprintf(out, " (%s+0x%lx)\n", *mod ? mod : "?", fr.offset);
  }
  if (s->depth == 0) fprintf(out, P "    (no stack)\n");
}

static void write_stream_arg(FILE *out, const struct ac_finding *f) {
  uintptr_t h = f->args.stream;
  if (h == 0)
    fprintf(out, "0 /* NULL */");
  else if (h == 1)
    fprintf(out, "CU_STREAM_LEGACY");
  else if (h == 2)
    fprintf(out, "CU_STREAM_PER_THREAD");
  else
    fprintf(out, "0x%" PRIxPTR, h);
}

static void write_flags_arg(FILE *out, unsigned flags) {
  const char *name = ac_assoc_name(flags);
  if (strcmp(name, "invalid") == 0)
    fprintf(out, "%u /* not a valid flag */", flags);
  else
    fprintf(out, "%s", name);
}

static void write_call(FILE *out, const struct ac_finding *f) {
  fprintf(out, P "  call:   %s(hStream=", f->api);
  write_stream_arg(out, f);
  fprintf(out, ", dptr=0x%" PRIxPTR ", length=%zu, flags=", f->args.dptr, f->args.length);
  write_flags_arg(out, f->args.flags);
  fprintf(out, ")\n");
  fprintf(out, P "          on thread %" PRIu64 "; the stream is a %s", f->thread,
          ac_stream_kind_name(f->stream_kind));
  if (f->stream_serial) fprintf(out, " (#%" PRIu64 ")", f->stream_serial);
  fprintf(out, "\n");
}

static void write_driver(FILE *out, const struct ac_finding *f) {
  if (f->outcome == AC_DRIVER_CRASHES)
    fprintf(out, P "  driver: called with --guard=off; the real driver crashes the process on "
                   "this call\n");
  else if (f->outcome == AC_DRIVER_GUARDED)
    fprintf(out,
            P "  driver: not called: the real driver crashes the process on this call; the guard "
              "returned %s instead (--guard=off forwards it)\n",
            f->driver_result_name);
  else if (f->driver_result == 0)
    fprintf(out, P "  driver: returned %s: the driver accepted the call silently\n",
            f->driver_result_name);
  else
    fprintf(out, P "  driver: returned %s\n", f->driver_result_name);
}

static bool is_host_access(enum ac_rule_id rule) {
  return rule == AC_RULE_AC201 || rule == AC_RULE_AC202;
}

/* The placement advice the host gave inside the allocation, as far back as
 * the host's timeline reaches: it changes no attachment, which a reader
 * wondering why the memory was not the CPU's may need to be told. */
static void write_advice(FILE *out, const struct ac_finding *f) {
  const struct ac_alloc_snapshot *a = &f->alloc;
  if (!f->history) return;
  const struct ac_history *host = &f->history->host;
  for (int i = 0; i < host->count; i++) {
    const struct ac_op_record *r = &host->op[i];
    if (r->kind != AC_OP_ADVICE || r->addr < a->base || r->addr - a->base >= a->size) continue;
    const char *name = ac_advice_name(r->flags);
    if (name)
      fprintf(out, P "          advised %s", name);
    else
      fprintf(out, P "          advised %u", r->flags);
    fprintf(out, " by %s on thread %" PRIu64 " (advice changes no attachment)\n",
            r->api ? r->api : "cuMemAdvise", r->thread);
  }
}

static void write_memory(FILE *out, const struct ac_finding *f) {
  const struct ac_alloc_snapshot *a = &f->alloc;
  uintptr_t addr = is_host_access(f->rule) ? f->access.addr : f->args.dptr;
  if (!a->present) {
    fprintf(out, P "  memory: 0x%" PRIxPTR " is %s memory\n", addr, ac_mem_kind_name(f->mem_kind));
    return;
  }
  fprintf(out, P "  memory: 0x%" PRIxPTR " is at offset %" PRIuPTR " of a %s allocation ", addr,
          addr - a->base, ac_mem_kind_name(a->kind));
  if (a->name[0]) fprintf(out, "'%s' ", a->name);
  fprintf(out, "[0x%" PRIxPTR ", 0x%" PRIxPTR ") of %zu bytes", a->base, a->base + a->size,
          a->size);
  if (a->kind == AC_MEM_MANAGED || a->kind == AC_MEM_MANAGED_VAR)
    fprintf(out, ", attached %s", ac_assoc_name(a->assoc));
  if (a->assoc == AC_ASSOC_SINGLE) fprintf(out, " to stream #%" PRIu64, a->assoc_stream_serial);
  fprintf(out, "\n");
  if (a->origin_api) {
    fprintf(out, P "          made by %s on thread %" PRIu64 " at:\n", a->origin_api,
            a->origin_thread);
    write_stack(out, &a->origin_stack);
  } else {
    fprintf(out, P "          made where attachcheck could not see it\n");
  }
  if (a->attach_origin.api) {
    fprintf(out, P "          last attached by %s on thread %" PRIu64 " at:\n",
            a->attach_origin.api, a->attach_origin.thread);
    write_stack(out, &a->attach_origin.stack);
  }
  write_advice(out, f);
}

static const char *access_kind_name(enum ac_access_kind kind) {
  return kind == AC_ACCESS_READ ? "read" : kind == AC_ACCESS_WRITE ? "write" : "access";
}

static void write_access(FILE *out, const struct ac_finding *f) {
  const struct ac_access_facts *a = &f->access;
  fprintf(out, P "  access: %s of 0x%" PRIxPTR, access_kind_name(a->kind), a->addr);
  if (a->length) fprintf(out, " (%zu bytes)", a->length);
  if (f->alloc.present) fprintf(out, ", offset %" PRIuPTR, a->addr - f->alloc.base);
  fprintf(out, " by the CPU on thread %" PRIu64 " (seen by %s) at:\n", f->thread, a->via);
}

static void write_busy(FILE *out, const struct ac_finding *f) {
  const struct ac_busy_facts *b = &f->busy;
  if (!b->present) return;
  fprintf(out, P "  busy:   %s #%" PRIu64, ac_stream_kind_name(b->stream_kind), b->stream_serial);
  if (b->stream_kind == AC_STREAM_CREATED || b->stream_kind == AC_STREAM_DESTROYED)
    fprintf(out, " (handle 0x%" PRIxPTR "%s)", b->stream_handle,
            b->stream_live ? "" : ", destroyed");
  fprintf(out, " has %" PRIu64 " operation%s the host has not seen complete", b->outstanding,
          b->outstanding == 1 ? "" : "s");
  if (!b->origin.api) {
    fprintf(out, "\n");
    return;
  }
  fprintf(out, "; the first, %s on thread %" PRIu64 ", at:\n", b->origin.api, b->origin.thread);
  write_stack(out, &b->origin.stack);
}

void ac_text_write_finding(FILE *out, const struct ac_finding *f) {
  const struct ac_rule_info *r = ac_rule_info(f->rule);
  fprintf(out, P "%s %s [%s]\n", r->id, r->name, ac_severity_name(r->severity));
  fprintf(out, P "  %s.\n", r->summary);
  if (is_host_access(f->rule)) {
    write_access(out, f);
    write_stack(out, &f->stack);
    write_busy(out, f);
    write_memory(out, f);
  } else {
    write_call(out, f);
    write_driver(out, f);
    write_busy(out, f);
    write_memory(out, f);
    fprintf(out, P "  called at:\n");
    write_stack(out, &f->stack);
  }
  fprintf(out, P "  fix: %s.\n", r->fix);
  fprintf(out, P "\n");
}
