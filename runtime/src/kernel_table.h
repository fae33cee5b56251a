// The dispatch tables the build generates (cmake/MmtuneKernels.cmake) from tuning databases, one
// per target level: one entry per linked AOT kernel, and the rule that picks one of a table for a
// call (runtime/src/dispatch.h picks the level).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "HalideRuntime.h"

namespace mmtune::runtime {

// Each operator's AOT signature, as Halide declares it for the generator's Inputs and Outputs (in
// declaration order, after the user context). The generated table checks every kernel against the
// type named after its operator, so a generator whose signature changes fails to compile here
// instead of being called wrongly. Adding an operator: one line here and one adapter (see gemm.cc,
// qlinear_matmul.cc).
using GemmKernelFn = int (*)(const void* user_context, halide_buffer_t* A, halide_buffer_t* B,
                             halide_buffer_t* C, float alpha, float beta, halide_buffer_t* Y);
using QLinearMatMulKernelFn = int (*)(const void* user_context, halide_buffer_t* a,
                                      halide_buffer_t* b, halide_buffer_t* a_scale,
                                      halide_buffer_t* a_zero_point, halide_buffer_t* b_scale,
                                      halide_buffer_t* b_zero_point, halide_buffer_t* b_column_sums,
                                      float y_scale, int32_t y_zero_point, halide_buffer_t* y);
using QGemmKernelFn = int (*)(const void* user_context, halide_buffer_t* A, halide_buffer_t* B,
                              halide_buffer_t* C, float a_scale, int32_t a_zero_point,
                              halide_buffer_t* b_scale, halide_buffer_t* b_zero_point,
                              halide_buffer_t* b_column_sums, float y_scale, int32_t y_zero_point,
                              float alpha, halide_buffer_t* Y);
using QuantMatmulDequantKernelFn = int (*)(const void* user_context, halide_buffer_t* x,
                                           halide_buffer_t* weight, halide_buffer_t* weight_scale,
                                           halide_buffer_t* bias, halide_buffer_t* x_scale,
                                           halide_buffer_t* smooth, halide_buffer_t* y);

// Type-erased pointer to a kernel; the operator's adapter casts it back to <Op>KernelFn.
using KernelFn = void (*)();

// Calls a kernel was tuned for: inclusive ranges of M, N, K and of the pool's thread count (the
// count set_num_threads() gives the calls: a kernel tuned to split across 2 threads can lose to a
// serial one on 1); max < 0 means unbounded.
struct Bucket {
  int64_t m_min = 0, m_max = -1, n_min = 0, n_max = -1, k_min = 0, k_max = -1;
  int64_t threads_min = 0, threads_max = -1;

  bool contains(int64_t m, int64_t n, int64_t k, int64_t threads) const;
  // How far (m, n, k, threads) lies outside: the sum over dims of |log2(x / nearest bound)|; 0
  // inside.
  double distance(int64_t m, int64_t n, int64_t k, int64_t threads) const;
  std::string to_string() const;  // "any", "m 1..3", "m 4.. n ..512 threads 2.."
};

struct KernelEntry {
  const char* name;       // docs/naming.md: "gemm_f32_strict__x86_avx2_6x16k4n128t"
  const char* op;         // ONNX operator name: "Gemm"
  const char* generator;  // registered Halide generator: "mmtune_gemm"
  const char* identity;   // generator params that define what it computes, "k=v" sorted by key
  const char* schedule;   // the schedule template's generator params, "k=v" sorted by key
  Bucket bucket;
  KernelFn fn;
};

struct KernelTable {
  const char* target;    // Halide target string of every kernel, or "none"
  const char* database;  // the database it was generated from, relative to the source tree
  const KernelEntry* entries;
  std::size_t size;
};

// The tables of the kernels linked into this build, one per tuning database, best level first
// (generated source).
struct LinkedTables {
  const KernelTable* tables;
  std::size_t size;
};
const LinkedTables& linked_tables();

// "k=v k=v" -> map.
std::map<std::string, std::string> parse_params(const char* text);

// The entries of a table that compute one identity, in table order (parsed once: dispatch compares
// maps, never re-reads the table's text).
struct IdentityGroup {
  std::string op;
  std::map<std::string, std::string> identity;
  std::vector<const KernelEntry*> entries;
  // entries[i]'s schedule parameters, parsed once (a PackedB's layouts are read from them on
  // every packing, a plain call's that packs B for itself included).
  std::vector<std::map<std::string, std::string>> schedules;
};
std::vector<IdentityGroup> group_by_identity(const KernelTable& table);
const IdentityGroup* find_group(const std::vector<IdentityGroup>& groups, const std::string& op,
                                const std::map<std::string, std::string>& identity);

// Which kernel serves a call, and why.
struct Selection {
  const KernelEntry* kernel = nullptr;  // nullptr: no kernel of this identity
  std::string reason;
};

// The kernel of `group` whose bucket contains (m, n, k) on `threads` threads, the first in table
// order (databases list narrow buckets before wide ones); when only buckets that miss the call
// exist, the nearest of those whose thread range holds `threads`, else the nearest of all (every
// kernel computes every shape exactly; a bucket says where it is fast). The reason is written only
// when `explain` (a call's hot path asks for none).
Selection select_in_group(const IdentityGroup& group, int64_t m, int64_t n, int64_t k,
                          int64_t threads, bool explain = true);

// The same over a whole table: nullptr (and why) when no kernel has the identity.
Selection select_kernel(const KernelTable& table, const std::string& op,
                        const std::map<std::string, std::string>& identity, int64_t m, int64_t n,
                        int64_t k, int64_t threads);

// The no-kernel reason: "no <op> kernel in this build (<targets>) computes <identity>".
std::string no_kernel_reason(const std::string& op, const std::string& targets,
                             const std::map<std::string, std::string>& identity);

}  // namespace mmtune::runtime
