// The search strategy of one (identity, bucket): which schedules to try next. Two strategies over
// the template's knob table (schedules/schedule.h), both seeded so that a run is reproducible:
//   random       uniform draws from the search space (the baseline every model-guided search must
//                beat at equal budget);
//   evolutionary generation 0 is the template's defaults, the best records of neighbouring
//                buckets and random draws; then each batch is drawn from mutations of the best
//                passed candidates so far, ranked by a cost model trained online on every
//                measured record, with epsilon-greedy exploration (a fraction of pure random
//                draws).
// Impossible candidates (validate() against the target and the sum) never leave the strategy.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "autotune/tuning_db.h"
#include "schedules/schedule.h"

namespace mmtune::tune {

// The cost model: predicts log(rate) of a schedule from its knobs, fitted on measured records
// (passed ones at their rate; failed ones as a floor below the slowest). k-nearest neighbours in
// the knob space (each knob scaled to [0, 1] over its range, log2 for sizes), distance-weighted.
class CostModel {
 public:
  void fit(const std::vector<const Record*>& records);
  // Predicted log(rate); the mean of the training set when it is empty.
  double predict(const schedules::Schedule& s) const;
  std::size_t size() const { return xs_.size(); }

 private:
  std::vector<std::vector<double>> xs_;
  std::vector<double> ys_;
  double mean_ = 0;
};

// The features of a schedule for the model.
std::vector<double> schedule_features(const schedules::Schedule& s);

class Strategy {
 public:
  Strategy(std::string name, const schedules::TargetInfo& t, schedules::Accumulator acc,
           uint64_t seed, double epsilon = 0.2);
  // Schedules tried already (any outcome) never come back.
  void mark_seen(const nlohmann::json& schedule);
  // Up to `count` new candidates given the records of this bucket so far and the seeds (the
  // neighbouring buckets' best schedules). Fewer when the space is exhausted.
  std::vector<schedules::Schedule> next(int count, const std::vector<const Record*>& bucket_records,
                                        const std::vector<schedules::Schedule>& seeds);
  const std::string& name() const { return name_; }

 private:
  bool fresh(const schedules::Schedule& s) const;
  schedules::Schedule random_draw();
  schedules::Schedule mutate(const schedules::Schedule& parent);

  std::string name_;
  schedules::TargetInfo target_;
  schedules::Accumulator acc_;
  std::mt19937_64 rng_;
  double epsilon_;
  bool started_ = false;
  std::vector<schedules::Schedule> generation0_;  // the defaults and seeds not yet handed out
  std::set<std::string> seen_;
  CostModel model_;
};

}  // namespace mmtune::tune
