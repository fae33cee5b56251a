// report.html of a tuning run: self-contained (inline SVG and CSS, no script, no network). The
// machine's measured peak FLOP/s and memory bandwidth (autotune/tune_machine.h); per identity and
// bucket: the winner against the template's default schedule and against every baseline record
// (extra "stage": "baseline", named by its schedule's "baseline": Halide's autoschedulers,
// libraries; their rate, or their outcome and why when they failed), the outcomes of every
// candidate; a roofline (attainable FLOP/s = min(peak, intensity x bandwidth), log-log) with every
// winner and baseline at its arithmetic intensity (2MNK / bytes of operands and output) and rate;
// and the convergence curves (best rate against candidates and against time, one curve per search
// strategy found in the database, so a model-guided run and a random run over the same bucket show
// side by side).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/tuning_db.h"
#include "runtime/host/kernel_identity.h"

namespace mmtune::tune {

// How one strategy's search of one unit converged (search records only, in the order measured).
struct Convergence {
  double best = 0;           // its best passed rate
  int candidates = 0;        // its records
  int candidates_to_95 = 0;  // records until the first at >= 95 % of `best` (0: none passed)
  double seconds_to_95 = 0;  // seconds from the unit's start to that record
};
// Per strategy (extra "strategy"), over the search records of one identity x bucket.
std::map<std::string, Convergence> convergence(const std::vector<const Record*>& unit_records);

// `machine`: what measure_machine returned for this run (with "time", "cpu", "run_threads"), or
// null (no machine section figures, no roofline).
std::string render_report(const std::vector<Record>& records, const std::string& target,
                          const nlohmann::json& machine = nullptr);

// Bytes of the operands and the output of one call of `id` at (M, N, K) (scales, zero points and
// other per-row or per-column inputs included): the denominator of a kernel's arithmetic
// intensity. 0 when `id` is not a valid identity.
double call_bytes(const KernelIdentity& id, int64_t m, int64_t n, int64_t k);

}  // namespace mmtune::tune
