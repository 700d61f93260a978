/* static_prog.c - a statically linked program: LD_PRELOAD cannot reach it, so
 * the CLI must say that nothing was checked (exit status 3). */
int main(void) {
  return 0;
}
