/* names.c - printable names of the model's value types and of the rules. */
#include <string.h>

#include "finding.h"

static const struct ac_rule_info rule_table[AC_RULE_COUNT] = {
#define AC_RULE(Id, Name, Sev, Reach, Summary, Fix) {#Id, Name, Sev, Reach, Summary, Fix},
#include "rule_catalog.inc"
#undef AC_RULE
};

const struct ac_rule_info *ac_rule_info(enum ac_rule_id rule) {
  return (unsigned)rule < AC_RULE_COUNT ? &rule_table[rule] : NULL;
}

const char *ac_finding_kind_name(enum ac_finding_kind kind) {
#define AC_FINDING_KIND_NAME(Enum, Name) Name,
  static const char *const names[] = {AC_FINDING_KINDS(AC_FINDING_KIND_NAME)};
#undef AC_FINDING_KIND_NAME
  return (unsigned)kind < AC_KIND_COUNT ? names[kind] : "?";
}

enum ac_rule_id ac_rule_by_id(const char *id) {
  for (int i = 0; i < AC_RULE_COUNT; i++)
    if (strcmp(rule_table[i].id, id) == 0) return (enum ac_rule_id)i;
  return AC_RULE_COUNT;
}

const char *ac_severity_name(enum ac_severity sev) {
  switch (sev) {
  case AC_SEV_ERROR:
    return "error";
  case AC_SEV_WARNING:
    return "warning";
  case AC_SEV_NOTE:
    return "note";
  }
  return "?";
}

const char *ac_mem_kind_name(enum ac_mem_kind kind) {
  switch (kind) {
  case AC_MEM_MANAGED:
    return "managed";
  case AC_MEM_MANAGED_VAR:
    return "__managed__ variable";
  case AC_MEM_DEVICE:
    return "device";
  case AC_MEM_PINNED:
    return "pinned host";
  case AC_MEM_PAGEABLE:
    return "pageable host";
  case AC_MEM_NULL:
    return "NULL";
  }
  return "?";
}

const char *ac_advice_name(unsigned advice) {
  static const char *const names[] = {NULL,
                                      "CU_MEM_ADVISE_SET_READ_MOSTLY",
                                      "CU_MEM_ADVISE_UNSET_READ_MOSTLY",
                                      "CU_MEM_ADVISE_SET_PREFERRED_LOCATION",
                                      "CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION",
                                      "CU_MEM_ADVISE_SET_ACCESSED_BY",
                                      "CU_MEM_ADVISE_UNSET_ACCESSED_BY"};
  return advice < sizeof names / sizeof names[0] ? names[advice] : NULL;
}

const char *ac_assoc_name(unsigned flags) {
  switch (flags) {
  case AC_ASSOC_GLOBAL:
    return "CU_MEM_ATTACH_GLOBAL";
  case AC_ASSOC_HOST:
    return "CU_MEM_ATTACH_HOST";
  case AC_ASSOC_SINGLE:
    return "CU_MEM_ATTACH_SINGLE";
  }
  return "invalid";
}

const char *ac_stream_kind_name(enum ac_stream_kind kind) {
  switch (kind) {
  case AC_STREAM_NULL_LEGACY:
    return "NULL stream (legacy default stream)";
  case AC_STREAM_LEGACY:
    return "CU_STREAM_LEGACY";
  case AC_STREAM_PER_THREAD:
    return "per-thread default stream";
  case AC_STREAM_CREATED:
    return "stream made by cuStreamCreate";
  case AC_STREAM_DESTROYED:
    return "destroyed stream";
  case AC_STREAM_NEVER_CREATED:
    return "handle that was never a stream";
  case AC_STREAM_UNTRACKED:
    return "stream not seen being created";
  }
  return "?";
}
