// The search strategy of one (identity, bucket): which schedules to try next. Two strategies over
// the template's knob table (schedules/schedule.h), both seeded so that a run is reproducible:
//   random       uniform draws from the search space (the baseline every model-guided search must
//                beat at equal budget);
//   evolutionary generation 0 is the template's defaults, the incumbents and best records of
//                neighbouring buckets, the template's forms for the bucket's shape (the GEMV
//                forms at M <= 4) and random draws; then each batch is drawn from mutations of the
//                best passed candidates so far, ranked by a cost model (gradient-boosted trees)
//                trained online on every measured record of the identity, all buckets, with
//                epsilon-greedy exploration (a fraction of pure random draws).
// Impossible candidates (validate() against the target and the sum) never leave the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autotune/tuning_db.h"
#include "schedules/schedule.h"

namespace mmtune::tune {

// The cost model, as in TVM's meta_schedule: gradient-boosted regression trees (XGBoost's C API)
// over a schedule's knobs (schedule_features) and log2 of the M, N, K it runs at, trained on the
// records of one identity and target across all its buckets, so that a new bucket profits from the
// others. Labels are relative to each bucket's best: log(rate / best passed rate of the bucket),
// 0 for the best; failures (incorrect, build_failed, run_failed, timeout) get a floor one below the
// lowest passed label; invalid records and schedules that do not parse are left out. Fewer than
// kMinPassed passed records: no trees, every prediction is the constant 0. Deterministic (one
// thread, fixed seed, no sampling) and cheap (some 20 ms of CPU for 300 records).
class CostModel {
 public:
  // XGBoost's parameters (boosting rounds, tree depth, learning rate, objective).
  struct Params {
    int rounds = 40;
    int max_depth = 5;
    double eta = 0.3;
    std::string objective = "reg:squarederror";
  };
  static constexpr int kMinPassed = 3;

  CostModel();
  explicit CostModel(Params params);
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;
  ~CostModel();

  // Replaces the model by one trained on `records` (one identity and target, any buckets, search
  // records). CostModelError when XGBoost fails; the model is then constant.
  void fit(const std::vector<const Record*>& records);
  // The predicted label of `s` run at M x N x K (higher is faster; comparable across calls of one
  // fit only). The constant 0 when untrained. CostModelError when XGBoost fails.
  double predict(const schedules::Schedule& s, int64_t m, int64_t n, int64_t k) const;
  std::vector<double> predict(const std::vector<schedules::Schedule>& ss, int64_t m, int64_t n,
                              int64_t k) const;
  // Training rows of the last fit (0 when it predicts a constant).
  std::size_t size() const { return rows_; }
  bool trained() const { return booster_ != nullptr; }

 private:
  class Booster;
  Params params_;
  std::unique_ptr<Booster> booster_;
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
};

// What CostModel throws when XGBoost fails: its last error's text.
class CostModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The features of a schedule for the model: its knobs scaled to [0, 1] (log scale for sizes).
std::vector<double> schedule_features(const schedules::Schedule& s);

class Strategy {
 public:
  Strategy(std::string name, const schedules::TargetInfo& t, schedules::Accumulator acc,
           uint64_t seed, double epsilon = 0.2);
  // Schedules tried already (any outcome) never come back.
  void mark_seen(const nlohmann::json& schedule);
  // Up to `count` new candidates for `bucket`, whose candidates run at `shape` (M, N, K), given
  // the search records of the identity and target so far, every bucket's (the parents are this
  // bucket's best, the cost model learns from all), and the seeds (incumbents, the neighbouring
  // buckets' best schedules). Fewer when the space is exhausted.
  std::vector<schedules::Schedule> next(int count, const std::vector<const Record*>& records,
                                        const std::string& bucket,
                                        const std::vector<int64_t>& shape,
                                        const std::vector<schedules::Schedule>& seeds);
  const std::string& name() const { return name_; }
  // The threads candidates are timed at: above 1, the best parents' splits into a parallel task
  // per thread (schedules::thread_splits) are tried as soon as those parents are known.
  void set_threads(int threads) { threads_ = threads; }
  // Replaces the cost model (tests: one whose XGBoost fails).
  void set_model(CostModel model) { model_ = std::move(model); }
  // Whether the cost model failed (CostModelError); from then on mutations are chosen unranked.
  bool model_failed() const { return model_failed_; }

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
  int threads_ = 1;
  std::vector<schedules::Schedule> generation0_;  // the defaults and seeds not yet handed out
  std::set<std::string> seen_;
  CostModel model_;
  std::size_t model_records_ = 0;  // records the model was fitted on (refitted when it changes)
  bool model_failed_ = false;
};

}  // namespace mmtune::tune
