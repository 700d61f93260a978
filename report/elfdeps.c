/* elfdeps.c - what the CLI needs to know of the program's ELF file before it
 * runs it: whether it is dynamically linked (else LD_PRELOAD cannot work) and
 * which sanitizer runtime it links (ASan and the like insist on coming first
 * in the list of libraries, so the shim must not be put before them).
 *
 * Every read is bounded (pread of the few pieces needed), and a file that is
 * not a 64-bit ELF of this machine is simply "not known".
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

#define MAX_HEADERS 256
#define MAX_DYNAMIC 4096
#define MAX_NAME 256

static bool read_at(int fd, void *buf, size_t n, off_t at) {
  return at >= 0 && pread(fd, buf, n, at) == (ssize_t)n;
}

/* The file offset of a virtual address, through the PT_LOAD segments. */
static bool file_offset(const Elf64_Phdr *ph, int n, Elf64_Addr addr, off_t *out) {
  for (int i = 0; i < n; i++)
    if (ph[i].p_type == PT_LOAD && addr >= ph[i].p_vaddr && addr < ph[i].p_vaddr + ph[i].p_filesz) {
      *out = (off_t)(addr - ph[i].p_vaddr + ph[i].p_offset);
      return true;
    }
  return false;
}

/* Whether a DT_NEEDED name is a sanitizer runtime that must be first. */
static bool is_sanitizer_runtime(const char *name) {
  static const char *const prefixes[] = {
      "libasan.so",  "libtsan.so",       "libhwasan.so",     "liblsan.so",
      "libubsan.so", "libclang_rt.asan", "libclang_rt.tsan", "libclang_rt.hwasan"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

static void scan_needed(int fd, const Elf64_Phdr *ph, int n, const Elf64_Dyn *dyn, size_t count,
                        struct ac_elf_facts *facts) {
  Elf64_Addr strtab = 0;
  for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; i++)
    if (dyn[i].d_tag == DT_STRTAB) strtab = dyn[i].d_un.d_ptr;
  off_t strings;
  if (!strtab || !file_offset(ph, n, strtab, &strings)) return;
  for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; i++) {
    char name[MAX_NAME] = "";
    if (dyn[i].d_tag != DT_NEEDED ||
        pread(fd, name, sizeof name - 1, strings + (off_t)dyn[i].d_un.d_val) <= 0)
      continue;
    name[sizeof name - 1] = 0;
    if (is_sanitizer_runtime(name) && !facts->sanitizer_runtime[0])
      snprintf(facts->sanitizer_runtime, sizeof facts->sanitizer_runtime, "%s", name);
  }
}

static void read_program_headers(int fd, const Elf64_Ehdr *eh, struct ac_elf_facts *facts) {
  Elf64_Phdr ph[MAX_HEADERS];
  int n = eh->e_phnum < MAX_HEADERS ? eh->e_phnum : MAX_HEADERS;
  if (eh->e_phentsize != sizeof ph[0] ||
      !read_at(fd, ph, (size_t)n * sizeof ph[0], (off_t)eh->e_phoff))
    return;
  facts->known = true;
  for (int i = 0; i < n; i++) {
    if (ph[i].p_type == PT_INTERP) facts->dynamic = true;
    if (ph[i].p_type != PT_DYNAMIC) continue;
    size_t count = ph[i].p_filesz / sizeof(Elf64_Dyn);
    if (count > MAX_DYNAMIC) count = MAX_DYNAMIC;
    Elf64_Dyn *dyn = malloc(count * sizeof *dyn);
    if (dyn && read_at(fd, dyn, count * sizeof *dyn, (off_t)ph[i].p_offset))
      scan_needed(fd, ph, n, dyn, count, facts);
    free(dyn);
  }
}

bool ac_elf_facts(const char *path, struct ac_elf_facts *facts) {
  memset(facts, 0, sizeof *facts);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  Elf64_Ehdr eh;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    facts->setuid = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
    if (read_at(fd, &eh, sizeof eh, 0) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_machine == EM_X86_64)
      read_program_headers(fd, &eh, facts);
  }
  close(fd);
  return facts->known;
}
