/* dlsym_aarch64.S - the exported dlsym on 64-bit Arm.
 *
 * The same contract as dlsym_x86_64.S: glibc's dlsym decides what RTLD_NEXT
 * means from its return address, which on AArch64 is the link register x30
 * at entry. So this stub asks ac_dlsym_route (C, doors.c) where to go, passing
 * the caller's x30, restores the caller's x0, x1, x29 and x30, and branches
 * (not calls) there: the function it reaches returns straight to the caller
 * and sees the caller's own return address.
 */
        .text
        .globl  dlsym
        .type   dlsym, %function
        .p2align 2
dlsym:
        .cfi_startproc
        hint    34                      /* bti c: a NOP where BTI is off */
        stp     x29, x30, [sp, #-32]!   /* the stack stays 16-byte aligned */
        .cfi_def_cfa_offset 32
        .cfi_offset 29, -32
        .cfi_offset 30, -24
        mov     x29, sp
        stp     x0, x1, [sp, #16]       /* handle, name */
        mov     x2, x30                 /* the caller's return address */
        bl      ac_dlsym_route
        mov     x16, x0                 /* x16: the branch register BTI's "bti c" admits */
        ldp     x0, x1, [sp, #16]
        ldp     x29, x30, [sp], #32
        .cfi_restore 29
        .cfi_restore 30
        .cfi_def_cfa_offset 0
        br      x16
        .cfi_endproc
        .size   dlsym, .-dlsym

        .section .note.GNU-stack, "", %progbits
