// BLAS baselines: the libraries mmtune is measured against (autotune/blas.h), timed in the tuner's
// process on the bucket's shape with the candidates' protocol and data (autotune/tune_timing.h),
// under the timer's lock, wherever they compute what a kernel identity computes. Each is one
// record of the database (extra "stage": "baseline", schedule {"baseline": NAME}, extra "note":
// the library's version and what was checked); never a candidate, never a winner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/tune_inputs.h"
#include "autotune/tune_worker.h"
#include "autotune/tuning_db.h"

namespace mmtune::tune {

// The baselines of `id`:
//   float32 Gemm without transposes (either contract, with or without C): "openblas" (cblas_sgemm)
//     and "onednn" (dnnl_sgemm), computing alpha A B + beta C with C copied into the output first.
//     They sum in their own (blocked, fused) order, not the reference's: not bit-exact, so not
//     checked (a note says so);
//   QLinearMatMul uint8, int8 -> uint8: "onednn" (dnnl_gemm_u8s8s32), the integer sums
//     (a - a_zero)(b - b_zero) without the requantization, checked against the int32 sums the
//     reference accumulates: where they differ (oneDNN sums u8*s8 pairs in saturating int16 on CPUs
//     without VNNI) the record is `incorrect` with the count in gate "mismatches";
//   none otherwise.
std::vector<std::string> blas_baselines(const KernelIdentity& id);

// Baseline `name` of `id` set up on `copies` (timing_calls of `id` at m x n x k): `call(ci)` runs
// the library on copy ci into an output of its own. Where the library's result is checked (the
// u8s8s32 sums), copy 0 has been run and checked: `gate` holds the figures, `wrong` the outputs
// that differ and `detail` says so. `note` names the library's build and what it computes.
// InvalidArgument when `name` is not one of blas_baselines(id).
struct BlasCall {  // NOLINT(bugprone-exception-escape): built once per baseline, outside noexcept
                   // code
  std::function<void(std::size_t)> call;
  std::string note;
  nlohmann::json gate;
  int64_t wrong = 0;
  std::string detail;
};
BlasCall prepare_blas_call(const std::string& name, const KernelIdentity& id,
                           const std::vector<OpCall>& copies, int64_t m, int64_t n, int64_t k);

// The record of baseline job.schedules[0] ({"baseline": NAME}) before it is measured: identity,
// bucket, target, schedule, shape and stage, so its key() says whether the database has it.
Record baseline_stub(const Job& job);

// Times the baseline on job.shape with job.measure (job.measure.threads threads in the libraries'
// pools) on the data candidates are timed on (job.seed), holding job.measure_lock while timing.
// A library error is a run_failed record naming it.
Record evaluate_baseline(const Job& job);

}  // namespace mmtune::tune
