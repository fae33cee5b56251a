// Search strategies and the online cost model.
#include "autotune/tune_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

void CostModel::fit(const std::vector<const Record*>& records) {
  xs_.clear();
  ys_.clear();
  double floor = 0;
  bool any = false;
  for (const Record* r : records) {
    if (r->outcome == Outcome::kPassed && r->rate > 0) {
      const double y = std::log(r->rate);
      floor = any ? std::min(floor, y) : y;
      any = true;
    }
  }
  floor -= 1.0;  // failures rank below the slowest passed candidate (e^-1 of its rate)
  for (const Record* r : records) {
    schedules::Schedule s;
    try {
      s = r->schedule.get<schedules::Schedule>();
    } catch (const std::exception&) {
      continue;  // a schedule of another version's template: not a training point
    }
    if (r->outcome == Outcome::kPassed && r->rate > 0) {
      xs_.push_back(schedule_features(s));
      ys_.push_back(std::log(r->rate));
    } else if (any) {
      xs_.push_back(schedule_features(s));
      ys_.push_back(floor);
    }
  }
  mean_ = ys_.empty() ? 0 : std::accumulate(ys_.begin(), ys_.end(), 0.0) / double(ys_.size());
}

double CostModel::predict(const schedules::Schedule& s) const {
  if (xs_.empty()) return mean_;
  const std::vector<double> x = schedule_features(s);
  std::vector<std::pair<double, double>> d;  // distance, y
  for (std::size_t i = 0; i < xs_.size(); ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < x.size() && j < xs_[i].size(); ++j) {
      sum += (x[j] - xs_[i][j]) * (x[j] - xs_[i][j]);
    }
    d.push_back({std::sqrt(sum), ys_[i]});
  }
  const std::size_t k = std::min<std::size_t>(5, d.size());
  std::partial_sort(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(k), d.end());
  double wsum = 0, ysum = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double w = 1.0 / (d[i].first + 1e-3);
    wsum += w;
    ysum += w * d[i].second;
  }
  return ysum / wsum;
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
                                                const std::vector<const Record*>& bucket_records,
                                                const std::vector<schedules::Schedule>& seeds) {
  std::vector<schedules::Schedule> out;
  auto take = [&](const schedules::Schedule& s) {
    if (static_cast<int>(out.size()) >= count || !fresh(s)) return false;
    if (s.validate(target_, acc_)) return false;
    mark_seen(nlohmann::json(s));
    out.push_back(s);
    return true;
  };
  // Generation 0 of the model-guided search: the template's defaults and the seeds (incumbents,
  // the neighbours' best), handed out before anything else, however few are asked for at a time.
  if (!started_ && name_ == "evolutionary") {
    generation0_.push_back(schedules::default_schedule(target_, acc_));
    generation0_.insert(generation0_.end(), seeds.begin(), seeds.end());
  }
  started_ = true;
  while (!generation0_.empty() && static_cast<int>(out.size()) < count) {
    take(generation0_.front());
    generation0_.erase(generation0_.begin());
  }

  // Parents: the best passed candidates of this bucket.
  std::vector<const Record*> passed;
  for (const Record* r : bucket_records) {
    if (r->outcome == Outcome::kPassed && r->rate > 0) passed.push_back(r);
  }
  std::sort(passed.begin(), passed.end(),
            [](const Record* a, const Record* b) { return a->rate > b->rate; });
  if (passed.size() > 5) passed.resize(5);
  if (name_ == "evolutionary") model_.fit(bucket_records);

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
    std::size_t best = 0;
    double best_score = -1e300;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      const double score = model_.predict(pool[i]);
      if (score > best_score) {
        best_score = score;
        best = i;
      }
    }
    misses += take(pool[best]) ? 0 : 1;
  }
  return out;
}

}  // namespace mmtune::tune
