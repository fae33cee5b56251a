// Search strategies and the online cost model (XGBoost through its C API).
#include "autotune/tune_search.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <locale>
#include <map>
#include <sstream>

#include "reference/error.h"

namespace mmtune::tune {

std::vector<double> schedule_features(const schedules::Schedule& s) {
  std::vector<double> f;
  for (const schedules::KnobValue& k : schedules::knob_values(s)) {
    if (k.is_bool) {
      f.push_back(k.value != 0 ? 1.0 : 0.0);
    } else if (k.max > 64) {
      // Sizes (blocks): log scale, 0 (none) below every size.
      f.push_back(k.value <= 0 ? 0.0 : std::log2(1.0 + k.value) / std::log2(1.0 + k.max));
    } else {
      f.push_back(k.max > k.min ? double(k.value - k.min) / double(k.max - k.min) : 0.0);
    }
  }
  return f;
}

namespace {

// Throws CostModelError naming the call and XGBoost's last error unless `rc` is 0.
void check(int rc, const char* call) {
  if (rc != 0) throw CostModelError(std::string("XGBoost ") + call + ": " + XGBGetLastError());
}

// A dense float matrix handed to XGBoost (row-major, NaN missing), freed with it.
class DMatrix {
 public:
  DMatrix(const std::vector<float>& data, std::size_t rows, std::size_t cols) {
    check(XGDMatrixCreateFromMat_omp(data.data(), rows, cols, std::nanf(""), &handle_, 1),
          "XGDMatrixCreateFromMat_omp");
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  ~DMatrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// The model's features: log2 of M, N, K, then the schedule's knobs.
std::vector<double> model_features(const schedules::Schedule& s, int64_t m, int64_t n, int64_t k) {
  std::vector<double> f = {std::log2(double(m)), std::log2(double(n)), std::log2(double(k))};
  const std::vector<double> knobs = schedule_features(s);
  f.insert(f.end(), knobs.begin(), knobs.end());
  return f;
}

// Rows of `width` floats; shorter feature vectors (another template's) padded as missing.
void append_row(std::vector<float>& data, const std::vector<double>& f, std::size_t width) {
  for (std::size_t j = 0; j < width; ++j) {
    data.push_back(j < f.size() ? static_cast<float>(f[j]) : std::nanf(""));
  }
}

bool failed(Outcome o) {
  return o == Outcome::kIncorrect || o == Outcome::kBuildFailed || o == Outcome::kRunFailed ||
         o == Outcome::kTimeout;
}

std::string text(double v) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << std::setprecision(17) << v;
  return os.str();
}

}  // namespace

// A booster (trained on `train`, which XGBoost keeps alive as long as it needs it), freed with it.
class CostModel::Booster {
 public:
  explicit Booster(const DMatrix& train) {
    DMatrixHandle dmats[] = {train.get()};
    check(XGBoosterCreate(dmats, 1, &handle_), "XGBoosterCreate");
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() {
    if (handle_ != nullptr) XGBoosterFree(handle_);
  }
  BoosterHandle get() const { return handle_; }
  void set(const std::string& name, const std::string& value) {
    check(XGBoosterSetParam(handle_, name.c_str(), value.c_str()), "XGBoosterSetParam");
  }

 private:
  BoosterHandle handle_ = nullptr;
};

CostModel::CostModel() = default;
CostModel::CostModel(Params params) : params_(std::move(params)) {}
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;
CostModel::~CostModel() = default;

void CostModel::fit(const std::vector<const Record*>& records) {
  booster_.reset();
  rows_ = 0;
  cols_ = 0;
  struct Row {
    std::vector<double> x;
    const Record* r;
    bool passed;
  };
  std::vector<Row> rows;
  std::map<std::string, double> best;  // each bucket's best passed rate
  int passed = 0;
  for (const Record* r : records) {
    const bool ok = r->outcome == Outcome::kPassed && r->rate > 0;
    if (!ok && !failed(r->outcome)) continue;  // invalid: never compiled, outside the space
    if (r->shape.size() != 3 || r->shape[0] < 1 || r->shape[1] < 1 || r->shape[2] < 1) continue;
    schedules::Schedule s;
    try {
      s = r->schedule.get<schedules::Schedule>();
    } catch (const std::exception&) {
      continue;  // a schedule of another version's template: not a training point
    }
    rows.push_back({model_features(s, r->shape[0], r->shape[1], r->shape[2]), r, ok});
    cols_ = std::max(cols_, rows.back().x.size());
    if (ok) {
      ++passed;
      double& b = best[r->bucket];
      b = std::max(b, r->rate);
    }
  }
  if (passed < kMinPassed) {
    cols_ = 0;
    return;  // too little to learn from: a constant
  }
  // Labels: log(rate / the bucket's best), 0 for each bucket's best; failures one below the
  // lowest (e^-1 of the slowest candidate's relative rate).
  std::vector<float> labels;
  double lowest = 0;
  for (const Row& row : rows) {
    if (row.passed) lowest = std::min(lowest, std::log(row.r->rate / best[row.r->bucket]));
  }
  std::vector<float> data;
  double sum = 0;
  for (const Row& row : rows) {
    const double y = row.passed ? std::log(row.r->rate / best[row.r->bucket]) : lowest - 1.0;
    labels.push_back(static_cast<float>(y));
    sum += y;
    append_row(data, row.x, cols_);
  }
  DMatrix train(data, rows.size(), cols_);
  check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()),
        "XGDMatrixSetFloatInfo");
  auto booster = std::make_unique<Booster>(train);
  booster->set("objective", params_.objective);
  booster->set("max_depth", std::to_string(params_.max_depth));
  booster->set("eta", text(params_.eta));
  booster->set("base_score", text(sum / double(rows.size())));
  booster->set("tree_method", "exact");
  booster->set("nthread", "1");
  booster->set("seed", "0");
  booster->set("verbosity", "0");
  for (int i = 0; i < params_.rounds; ++i) {
    check(XGBoosterUpdateOneIter(booster->get(), i, train.get()), "XGBoosterUpdateOneIter");
  }
  booster_ = std::move(booster);
  rows_ = rows.size();
}

std::vector<double> CostModel::predict(const std::vector<schedules::Schedule>& ss, int64_t m,
                                       int64_t n, int64_t k) const {
  if (!booster_ || ss.empty()) return std::vector<double>(ss.size(), 0.0);
  std::vector<float> data;
  for (const schedules::Schedule& s : ss) append_row(data, model_features(s, m, n, k), cols_);
  DMatrix x(data, ss.size(), cols_);
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster_->get(), x.get(), 0, 0, 0, &len, &out), "XGBoosterPredict");
  if (len != ss.size() || out == nullptr) {
    throw CostModelError("XGBoost XGBoosterPredict: " + std::to_string(len) + " predictions for " +
                         std::to_string(ss.size()) + " schedules");
  }
  return std::vector<double>(out, out + len);
}

double CostModel::predict(const schedules::Schedule& s, int64_t m, int64_t n, int64_t k) const {
  return predict(std::vector<schedules::Schedule>{s}, m, n, k)[0];
}

Strategy::Strategy(std::string name, const schedules::TargetInfo& t, schedules::Accumulator acc,
                   uint64_t seed, double epsilon)
    : name_(std::move(name)), target_(t), acc_(acc), rng_(seed), epsilon_(epsilon) {
  // The tuner refuses other names before anything runs (tuner.cc).
  MMTUNE_CHECK(name_ == "random" || name_ == "evolutionary", "strategy " << name_);
}

void Strategy::mark_seen(const nlohmann::json& schedule) { seen_.insert(schedule.dump()); }

bool Strategy::fresh(const schedules::Schedule& s) const {
  nlohmann::json j = s;
  return !seen_.count(j.dump());
}

schedules::Schedule Strategy::random_draw() {
  return schedules::sample(schedules::default_template(target_), target_, acc_, rng_);
}

schedules::Schedule Strategy::mutate(const schedules::Schedule& parent) {
  return schedules::mutate(parent, target_, acc_, rng_);
}

std::vector<schedules::Schedule> Strategy::next(int count,
                                                const std::vector<const Record*>& records,
                                                const std::string& bucket,
                                                const std::vector<int64_t>& shape,
                                                const std::vector<schedules::Schedule>& seeds) {
  MMTUNE_CHECK(shape.size() == 3, "shape of " << shape.size() << " dimensions");
  std::vector<schedules::Schedule> out;
  auto take = [&](const schedules::Schedule& s) {
    if (static_cast<int>(out.size()) >= count || !fresh(s)) return false;
    if (s.validate(target_, acc_)) return false;
    mark_seen(nlohmann::json(s));
    out.push_back(s);
    return true;
  };
  // Generation 0 of the model-guided search: the template's defaults, the seeds (incumbents, the
  // neighbours' best) and the template's forms for the shape (the GEMV forms at small M), handed
  // out before anything else, however few are asked for at a time.
  if (!started_ && name_ == "evolutionary") {
    generation0_.push_back(schedules::default_schedule(target_, acc_));
    generation0_.insert(generation0_.end(), seeds.begin(), seeds.end());
    for (const schedules::Schedule& s : schedules::shape_seeds(target_, acc_, shape[0]))
      generation0_.push_back(s);
  }
  started_ = true;
  while (!generation0_.empty() && static_cast<int>(out.size()) < count) {
    take(generation0_.front());
    generation0_.erase(generation0_.begin());
  }

  // Parents: the best passed candidates of this bucket.
  std::vector<const Record*> passed;
  for (const Record* r : records) {
    if (r->bucket == bucket && r->outcome == Outcome::kPassed && r->rate > 0) passed.push_back(r);
  }
  std::sort(passed.begin(), passed.end(),
            [](const Record* a, const Record* b) { return a->rate > b->rate; });
  if (passed.size() > 5) passed.resize(5);
  // At more than one thread: those parents split into a parallel task per thread at this shape
  // (each split tried once, like any candidate).
  if (threads_ > 1) {
    for (const Record* r : passed) {
      schedules::Schedule p;
      try {
        p = r->schedule.get<schedules::Schedule>();
      } catch (const std::exception&) {
        continue;
      }
      for (const schedules::Schedule& c :
           schedules::thread_splits(p, target_, acc_, shape[0], shape[1], threads_))
        take(c);
    }
  }
  // The model learns from every bucket's records; refitted when there are new ones (the database
  // only grows). After a failure it is not asked again: mutations are then chosen unranked.
  auto model_failure = [&](const CostModelError& e) {
    model_failed_ = true;
    const std::string what = e.what();
    std::cerr << "mmtune autotune: warning: cost model failed (" << what.substr(0, what.find('\n'))
              << "); mutations are chosen unranked\n";
  };
  if (name_ == "evolutionary" && !model_failed_ && records.size() != model_records_) {
    model_records_ = records.size();
    try {
      model_.fit(records);
    } catch (const CostModelError& e) {
      model_failure(e);
    }
  }

  int misses = 0;
  while (static_cast<int>(out.size()) < count && misses < 200) {
    const bool explore = name_ == "random" || passed.empty() ||
                         std::uniform_real_distribution<double>(0, 1)(rng_) < epsilon_;
    if (explore) {
      misses += take(random_draw()) ? 0 : 1;
      continue;
    }
    // Exploit: a pool of mutations of the parents, the model's favourite taken.
    std::vector<schedules::Schedule> pool;
    for (int i = 0; i < 24; ++i) {
      const Record* parent =
          passed[std::uniform_int_distribution<std::size_t>(0, passed.size() - 1)(rng_)];
      schedules::Schedule p;
      try {
        p = parent->schedule.get<schedules::Schedule>();
      } catch (const std::exception&) {
        continue;
      }
      schedules::Schedule child = mutate(p);
      if (fresh(child) && !child.validate(target_, acc_)) pool.push_back(child);
    }
    if (pool.empty()) {
      misses += take(random_draw()) ? 0 : 1;
      continue;
    }
    // The model's favourite (the first of the pool, a random mutation, when it has no opinion).
    std::vector<double> scores(pool.size(), 0.0);
    if (!model_failed_) {
      try {
        scores = model_.predict(pool, shape[0], shape[1], shape[2]);
      } catch (const CostModelError& e) {
        model_failure(e);
        scores.assign(pool.size(), 0.0);
      }
    }
    const auto best = std::max_element(scores.begin(), scores.end()) - scores.begin();
    misses += take(pool[static_cast<std::size_t>(best)]) ? 0 : 1;
  }
  return out;
}

}  // namespace mmtune::tune
