/* fd_gate.h - the program's descriptors wait while the shim holds one of
 * theirs.
 *
 * Every file the shim opens (the record stream, the log, the ELF files its
 * libraries read) gets the program's lowest free number first, and is moved
 * above the program's range right after (report/output.c). A program that
 * closes every descriptor in between (a daemon's close_range), and opens a
 * file of its own in that number, would have the shim move, write into and
 * close the program's file. So the shim holds the gate from an open to the
 * move, and the program's calls that close or replace descriptors (close,
 * close_range, closefrom, dup2, dup3: shim/interceptors_fd.c) wait while
 * anyone holds it - never the thread that holds it itself (a signal handler
 * of the program's that interrupted the shim), and never longer than a
 * bound, so a gate left held by a bug costs a stall, not a hang.
 * Async-signal-safe: atomics and a futex.
 */
#ifndef AC_FD_GATE_H
#define AC_FD_GATE_H

/* The shim holds a descriptor in the program's range until the matching
 * leave (nested: each enter has its leave). */
void ac_fd_gate_enter(void);
void ac_fd_gate_leave(void);
/* Waits while another thread holds the gate (at most 2 s). */
void ac_fd_gate_wait(void);
/* dlopen with the gate held: the loader reads the library through a
 * descriptor in the program's range. */
void *ac_fd_gate_dlopen(const char *path, int flags);
/* In a forked child: no other thread is there to leave. */
void ac_fd_gate_after_fork_child(void);

#endif
