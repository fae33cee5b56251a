/* start.S: process entry point for a static Hexagon ELF under Linux
 * (qemu-hexagon user mode). The kernel leaves the stack pointer (r29)
 * pointing at argc, followed by argv[0..argc-1], NULL, envp[], NULL, auxv.
 * We hand that address to mmtune_start_c (platform.c), which never returns. */
    .text
    .globl  _start
    .type   _start, @function
    .p2align 4
_start:
    {
        r0 = r29            /* argument 1: the initial stack pointer */
        r30 = #0            /* frame pointer: end of the frame chain */
        r31 = #0            /* link register: nowhere to return to */
    }
    r29 = and(r29, #-128)   /* 128-byte aligned stack (HVX vector width) */
    call mmtune_start_c
1:
    jump 1b
    .size   _start, . - _start
    .section .note.GNU-stack, "", @progbits
