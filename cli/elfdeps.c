/* elfdeps.c - what the CLI can tell from the program's file when the shim
 * never loaded into it: whether it is dynamically linked (else LD_PRELOAD
 * cannot reach it) and whether it is setuid (the loader then ignores
 * LD_PRELOAD). Every read is bounded, and a file that is not a 64-bit ELF of
 * this machine (a script) is simply "not known".
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

#define MAX_HEADERS 256

static bool read_at(int fd, void *buf, size_t n, off_t at) {
  return at >= 0 && pread(fd, buf, n, at) == (ssize_t)n;
}

static void read_program_headers(int fd, const Elf64_Ehdr *eh, struct ac_elf_facts *facts) {
  Elf64_Phdr ph[MAX_HEADERS];
  int n = eh->e_phnum < MAX_HEADERS ? eh->e_phnum : MAX_HEADERS;
  if (eh->e_phentsize != sizeof ph[0] ||
      !read_at(fd, ph, (size_t)n * sizeof ph[0], (off_t)eh->e_phoff))
    return;
  facts->known = true;
  for (int i = 0; i < n; i++)
    if (ph[i].p_type == PT_INTERP) facts->dynamic = true;
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
