// report.html of a tuning run: self-contained (inline SVG and CSS, no script, no network). Per
// identity and bucket: the winner against the template's default schedule, the outcomes of every
// candidate, and the convergence curves (best rate against candidates and against time, one curve
// per search strategy found in the database, so a model-guided run and a random run over the same
// bucket show side by side).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "autotune/tuning_db.h"

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

std::string render_report(const std::vector<Record>& records, const std::string& target);

}  // namespace mmtune::tune
