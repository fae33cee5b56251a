/* A qemu TCG plugin that counts the guest instructions a program executes between two marks: the
 * deterministic proxy cost `mmtune autotune` tunes a target with when no device of it is at hand.
 * The kernel runner (targets/runner/kernel_runner.c) makes the marks as system calls of a number
 * no kernel defines (MMTUNE_MARK_SYSCALL, answered -ENOSYS): argument 1 starts a count, 2 ends it,
 * and each ended count is appended to the file `out=` names, one decimal line. qemu counts a
 * translation block's instructions when the block starts, which the marks end; the count is
 * repeatable for the same program, inputs and environment (one guest thread: the runner is started
 * with HL_NUM_THREADS=1).
 *
 * Built for the host (cc -shared -fPIC) and loaded with `qemu-<arch> -plugin FILE,out=COUNTS`.
 * The declarations are qemu's plugin API (docs/devel/tcg-plugins), version 1, as qemu 7.2 has it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb*));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op,
                                              void* ptr, uint64_t imm);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id,
                                          void (*cb)(qemu_plugin_id_t, unsigned int, int64_t,
                                                     uint64_t, uint64_t, uint64_t, uint64_t,
                                                     uint64_t, uint64_t, uint64_t, uint64_t));

#define EXPORT __attribute__((visibility("default")))
#define MMTUNE_MARK_SYSCALL 0x6d6d

EXPORT int qemu_plugin_version = 1;

static uint64_t executed; /* guest instructions so far */
static uint64_t started;  /* `executed` at the last start mark */
static char out_path[4096];

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &executed,
                                           qemu_plugin_tb_n_insns(tb));
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                       uint64_t a8) {
  (void)id, (void)vcpu, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
  if (num != MMTUNE_MARK_SYSCALL) return;
  if (a1 == 1) {
    started = executed;
  } else if (a1 == 2) {
    FILE* f = fopen(out_path, "a");
    if (!f) return;
    fprintf(f, "%llu\n", (unsigned long long)(executed - started));
    fclose(f);
  }
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t* info, int argc,
                               char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path)
      strcpy(out_path, argv[i] + 4);
  }
  if (!out_path[0]) {
    fprintf(stderr, "insn_count: give the counts' file as out=FILE\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
  return 0;
}
