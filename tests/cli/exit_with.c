/* exit_with.c - exits with the status given on its command line, without
 * touching CUDA: the CLI passes the program's own status through. */
#include <stdlib.h>
int main(int argc, char **argv) {
  return argc > 1 ? atoi(argv[1]) : 0;
}
