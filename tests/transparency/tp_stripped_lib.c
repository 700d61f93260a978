/* tp_stripped_lib.c - a library built without debug information and
 * stripped of its symbol table (tests/transparency/CMakeLists.txt): a frame
 * in it sends the symboliser looking for separate debug information that
 * does not exist, as a frame in a distribution's stripped binary does. */
void tp_call_through(void (*fn)(void));

void tp_call_through(void (*fn)(void)) {
  fn();
  __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}
