// report.html of a tuning run: self-contained (inline SVG and CSS, no script, no network). Per
// identity and bucket: the winner against the template's default schedule and against every
// baseline record (extra "stage": "baseline", named by its schedule's "baseline": Halide's
// autoschedulers, libraries; their rate, or their outcome and why when they failed), the outcomes
// of every candidate, and the convergence curves (best rate against candidates and against time,
// one curve per search strategy found in the database, so a model-guided run and a random run over
// the same bucket show side by side).
#pragma once

#include <string>
#include <vector>

#include "autotune/tuning_db.h"

namespace mmtune::tune {

std::string render_report(const std::vector<Record>& records, const std::string& target);

}  // namespace mmtune::tune
