// Shape buckets: the tuner searches one kernel per (identity, bucket), and the runtime dispatches a
// call to the kernel whose bucket contains its (M, N, K), else the nearest one
// (runtime/src/kernel_table.h). Buckets are size classes of M (1, 2-8, 9-64, 65-256, 257+: GEMV,
// small batches, tiles, large, larger), N (up to 512, 513-4096, 4097+) and K (up to 512, 513-1024,
// 1025-4096, 4097+); only the classes a shape list touches become buckets.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotune/shape_list.h"

namespace mmtune::tune {

struct Bucket {
  std::string name;  // "m9-64.n513-4096.k1025-4096"
  // Bounds per dimension; max -1: unbounded.
  int64_t m_min = 1, m_max = -1, n_min = 1, n_max = -1, k_min = 1, k_max = -1;
  std::vector<NamedShape> shapes;  // the listed shapes it holds
  // The shape candidates are measured on: the listed shape with the median operation count.
  NamedShape representative() const;
  bool contains(int64_t m, int64_t n, int64_t k) const;
  // The tuned database's bucket object: {"m_min": .., "m_max": ..}, unbounded maxima left out.
  nlohmann::json bounds_json() const;
};

// The bucket of one shape (its name and bounds; no shapes).
Bucket bucket_of(int64_t m, int64_t n, int64_t k);

// A run tuning at several thread counts (--threads 1,2) tunes each bucket at each: the unit's
// bucket name carries the count, "m9-64.n1-512.k1-512.t2". threads_of_bucket_name gives it (0 for
// a name without one: a run at one thread count) and shape_bucket_name the name without it.
std::string bucket_name_at_threads(const std::string& name, int threads);
int threads_of_bucket_name(const std::string& name);
std::string shape_bucket_name(const std::string& name);

// The buckets the shapes fall in, each with its shapes, in order of first appearance.
std::vector<Bucket> make_buckets(const std::vector<NamedShape>& shapes);

// The built-in shape list of `mmtune autotune` without --shapes/--shape: a short list over the
// M classes (decode, small batch, prefill) at moderate N and K, sized for a run of a few minutes.
std::vector<NamedShape> default_shapes();

}  // namespace mmtune::tune
