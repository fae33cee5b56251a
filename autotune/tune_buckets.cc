// Shape buckets of the tuner.
#include "autotune/tune_buckets.h"

#include <algorithm>
#include <sstream>

namespace mmtune::tune {
namespace {

struct Range {
  int64_t lo, hi;  // hi -1: unbounded
};

// M splits at 256 among the large: a kernel of M 65-256 serves a layer's prefill of a few hundred
// tokens, whose strips of B are read by few rows (K blocks keep a strip's panel in L2, the
// accumulators' round trips cost little next to the reads of B); from 257 rows on, the rows
// amortize B and the tiles without K blocks run faster (docs/performance.md: at 512x4096x4096 6x64
// tiles without K blocks ran 383 GFLOP/s at 2 threads where the K-blocked pick of 128x4096x4096 ran
// 358, and at 128x4096x4096 297 where it ran 343).
constexpr Range kMClasses[] = {{1, 1}, {2, 8}, {9, 64}, {65, 256}, {257, -1}};
constexpr Range kNClasses[] = {{1, 512}, {513, 4096}, {4097, -1}};
// K splits at 1024 as well: up to 1024 a strip's B panel (K x 256 float32 columns, at most 1 MiB)
// stays in a 2 MiB L2 without K blocks; beyond, the kernels need K blocks. One bucket over
// 513-4096 made one kernel serve both (docs/performance.md: K-blocked 6x64 tiles ran 1024^3 at
// 153-159 GFLOP/s where the same tiles without K blocks ran 169-179, and 128x4096x4096 at 144
// where those ran 67).
constexpr Range kKClasses[] = {{1, 512}, {513, 1024}, {1025, 4096}, {4097, -1}};

template <std::size_t N>
Range class_of(const Range (&classes)[N], int64_t v) {
  for (const Range& r : classes) {
    if (v >= r.lo && (r.hi < 0 || v <= r.hi)) return r;
  }
  return classes[0];  // v < 1: not a listed shape; the smallest class
}

std::string range_text(const Range& r) {
  if (r.hi == r.lo) return std::to_string(r.lo);
  if (r.hi < 0) return std::to_string(r.lo) + "+";
  return std::to_string(r.lo) + "-" + std::to_string(r.hi);
}

}  // namespace

NamedShape Bucket::representative() const {
  if (shapes.empty()) {
    // No listed shape: the lower corner of each class, at least 64 along N and K.
    return NamedShape{name, m_min, std::max<int64_t>(n_min, 64), std::max<int64_t>(k_min, 64)};
  }
  std::vector<NamedShape> sorted = shapes;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const NamedShape& a, const NamedShape& b) { return a.flops() < b.flops(); });
  return sorted[(sorted.size() - 1) / 2];
}

bool Bucket::contains(int64_t m, int64_t n, int64_t k) const {
  auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && (hi < 0 || v <= hi); };
  return in(m, m_min, m_max) && in(n, n_min, n_max) && in(k, k_min, k_max);
}

nlohmann::json Bucket::bounds_json() const {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* lo_key, const char* hi_key, int64_t lo, int64_t hi) {
    if (lo > 1) j[lo_key] = lo;
    if (hi >= 0) j[hi_key] = hi;
  };
  put("m_min", "m_max", m_min, m_max);
  put("n_min", "n_max", n_min, n_max);
  put("k_min", "k_max", k_min, k_max);
  return j;
}

Bucket bucket_of(int64_t m, int64_t n, int64_t k) {
  const Range rm = class_of(kMClasses, m), rn = class_of(kNClasses, n), rk = class_of(kKClasses, k);
  Bucket b;
  b.m_min = rm.lo;
  b.m_max = rm.hi;
  b.n_min = rn.lo;
  b.n_max = rn.hi;
  b.k_min = rk.lo;
  b.k_max = rk.hi;
  std::ostringstream os;
  os << "m" << range_text(rm) << ".n" << range_text(rn) << ".k" << range_text(rk);
  b.name = os.str();
  return b;
}

std::string bucket_name_at_threads(const std::string& name, int threads) {
  return name + ".t" + std::to_string(threads);
}

int threads_of_bucket_name(const std::string& name) {
  const std::size_t dot = name.rfind(".t");
  if (dot == std::string::npos || dot + 2 >= name.size()) return 0;
  int threads = 0;
  for (std::size_t i = dot + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || threads > 100000) return 0;
    threads = threads * 10 + (name[i] - '0');
  }
  return threads;
}

std::string shape_bucket_name(const std::string& name) {
  return threads_of_bucket_name(name) > 0 ? name.substr(0, name.rfind(".t")) : name;
}

std::vector<Bucket> make_buckets(const std::vector<NamedShape>& shapes) {
  std::vector<Bucket> buckets;
  for (const NamedShape& s : shapes) {
    Bucket b = bucket_of(s.m, s.n, s.k);
    auto it = std::find_if(buckets.begin(), buckets.end(),
                           [&](const Bucket& x) { return x.name == b.name; });
    if (it == buckets.end()) {
      buckets.push_back(b);
      it = buckets.end() - 1;
    }
    it->shapes.push_back(s);
  }
  return buckets;
}

std::vector<NamedShape> default_shapes() {
  return {{"decode_m1_n1024_k1024", 1, 1024, 1024},
          {"batch_m8_n1024_k1024", 8, 1024, 1024},
          {"prefill_m128_n1024_k1024", 128, 1024, 1024}};
}

}  // namespace mmtune::tune
