// The kernels' thread pool: the parallel loops of the linked kernels (halide_do_par_for, installed
// by the runtime) and of the JIT's kernels (the tuner times candidates on the pool that ships) run
// on it instead of Halide's default pool.
//
// Why: a kernel call lasts tens of microseconds. Halide's pool has its idle workers yield and then
// sleep on a condition variable as soon as a loop ends, so a call pays system calls and the
// scheduler's latency before the second thread takes a task, and its caller waits the same way
// for the worker's last task (u8·s8→u8 QLinearMatMul at 256^3 with 2 threads on Zen 4: 86% of the
// samples in the kernel's tasks and 8% in the scheduler and sched_yield; on this pool 91% and 7.5%
// spinning). This pool's workers spin for a while after a loop
// (MMTUNE_SPIN_US, 200 microseconds by default; 0 sleeps at once), as OpenMP's do under their
// default wait policy, and only then sleep; the caller spins for the tasks it waits on.
//
// One loop runs on the pool at a time. A loop started while another runs (a second caller
// thread), or from inside a task (nested), runs serially on its caller's thread: the same tasks,
// the same results. Each task of a loop runs exactly once; the first non-zero result is returned
// and the tasks not yet started are skipped, as Halide's pool does.
#pragma once

#include <cstdint>

namespace mmtune::host {

// The halide_do_par_for handler (halide_set_custom_do_par_for): runs f(user_context, i, closure)
// for i in [min, min + extent).
int pool_do_par_for(void* user_context, int (*f)(void*, int, uint8_t*), int min, int extent,
                    uint8_t* closure);

// Threads that run a loop, the caller's included; 0 sets the default ($HL_NUM_THREADS, else the
// number of cores). Starts or stops workers; must not be called while a loop runs. Returns the
// previous count.
int pool_set_threads(int n);
int pool_threads();

// Loops run through pool_do_par_for since the process started (on the pool or serially).
uint64_t pool_loops();

}  // namespace mmtune::host
