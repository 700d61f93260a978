/* dlsym_x86_64.S - the exported dlsym.
 *
 * glibc's dlsym decides what RTLD_NEXT means from its return address. A C
 * wrapper that calls the real dlsym would make every RTLD_NEXT lookup relative
 * to the shim, breaking programs that interpose functions themselves. So the
 * exported dlsym is this stub: it asks ac_dlsym_route (C, doors.c) where to go,
 * restores the caller's arguments and jumps there, leaving the caller's own
 * return address on the stack.
 */
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        endbr64
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                /* keep the stack 16-byte aligned for the call */
        .cfi_adjust_cfa_offset 8
        movq    24(%rsp), %rdx          /* the caller's return address */
        call    ac_dlsym_route@PLT
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        jmp     *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym

        .section .note.GNU-stack, "", @progbits
