// OpenBLAS and oneDNN timed as baselines of the identities they compute.
#include "autotune/tune_baselines.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>

#include "autotune/blas.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_timing.h"
#include "reference/error.h"

namespace mmtune::tune {
namespace {

std::string param(const KernelIdentity& id, const std::string& key) {
  auto it = id.params.find(key);
  return it == id.params.end() ? "" : it->second;
}

bool float32_gemm(const KernelIdentity& id) {
  return id.op == "Gemm" && param(id, "A.type") == "float32" && param(id, "B.type") == "float32" &&
         param(id, "Y.type") == "float32" && param(id, "trans_a") == "false" &&
         param(id, "trans_b") == "false";
}

bool u8s8u8_qlinear_matmul(const KernelIdentity& id) {
  return id.op == "QLinearMatMul" && param(id, "a.type") == "uint8" &&
         param(id, "b.type") == "int8" && param(id, "y.type") == "uint8" &&
         param(id, "a_format").empty();
}

// Rows of the int32 sums (a - a_zero)(b - b_zero), accumulated as the reference accumulates them
// (exact products, wrapping int32 sums), compared with `got` (m x n). Rows evenly spaced, all of
// them up to 2^28 multiply-adds. Fills gate "rows", "outputs", "mismatches" and, for the first
// mismatch, "first_mismatch".
void check_int32_sums(const uint8_t* a, uint8_t a_zero, const int8_t* b, int8_t b_zero,
                      const int32_t* got, int64_t m, int64_t n, int64_t k, nlohmann::json& gate) {
  const int64_t rows = std::clamp<int64_t>((int64_t{1} << 28) / std::max<int64_t>(n * k, 1), 1, m);
  std::vector<uint32_t> acc(static_cast<std::size_t>(n));
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r * m / rows;
    std::fill(acc.begin(), acc.end(), 0u);
    for (int64_t kk = 0; kk < k; ++kk) {
      const int32_t av = int32_t{a[i * k + kk]} - a_zero;
      if (av == 0) continue;
      const int8_t* row = b + kk * n;
      for (int64_t j = 0; j < n; ++j)
        acc[j] += static_cast<uint32_t>(av * (int32_t{row[j]} - b_zero));
    }
    for (int64_t j = 0; j < n; ++j) {
      int32_t want = 0;
      std::memcpy(&want, &acc[j], sizeof want);
      if (got[i * n + j] == want) continue;
      if (mismatches++ == 0) {
        gate["first_mismatch"] = {
            {"row", i}, {"column", j}, {"expected", want}, {"actual", got[i * n + j]}};
      }
    }
  }
  gate["rows"] = rows;
  gate["outputs"] = rows * n;
  gate["mismatches"] = mismatches;
}

}  // namespace

std::vector<std::string> blas_baselines(const KernelIdentity& id) {
  if (float32_gemm(id)) return {"openblas", "onednn"};
  if (u8s8u8_qlinear_matmul(id)) return {"onednn"};
  return {};
}

Record baseline_stub(const Job& job) {
  Record r;
  r.identity = job.identity;
  r.bucket = job.bucket;
  r.target = job.target;
  r.schedule = job.schedules.at(0);
  r.shape = job.shape;
  r.extra["stage"] = "baseline";
  return r;
}

BlasCall prepare_blas_call(const std::string& name, const KernelIdentity& id,
                           const std::vector<OpCall>& copies, int64_t m, int64_t n, int64_t k) {
  const std::vector<std::string> names = blas_baselines(id);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string has;
    for (const std::string& x : names) has += (has.empty() ? "" : ", ") + x;
    invalid("baseline", "'", name, "' is not a baseline of ", identity_spec(id), " (",
            has.empty() ? std::string("it has none") : "it has: " + has, ")");
  }
  BlasCall b;
  std::ostringstream note;
  if (id.op == "Gemm") {
    const float alpha = std::stof(copies[0].attrs.at("alpha"));
    const float beta = copies[0].inputs.count("C") ? std::stof(copies[0].attrs.at("beta")) : 0.0f;
    auto out = std::make_shared<Tensor>(DType::kFloat32, Shape{m, n});
    auto* sgemm = name == "openblas" ? &blas::openblas_sgemm : &blas::onednn_sgemm;
    b.call = [&copies, out, alpha, beta, sgemm, m, n, k](std::size_t ci) {
      const OpCall& c = copies[ci];
      float* y = out->data<float>();
      // alpha A B + beta C: C into the output, then the library's in-place update.
      if (beta != 0.0f) std::memcpy(y, c.inputs.at("C").bytes.data(), out->bytes.size());
      sgemm(m, n, k, c.inputs.at("A").data<float>(), c.inputs.at("B").data<float>(), y, alpha,
            beta);
    };
    note << (name == "openblas" ? blas::openblas_info() : blas::onednn_info())
         << "; alpha A B + beta C (C copied into the output first); sums in its own blocked, "
            "fused order, not the reference's, so not bit-exact: not checked";
    b.gate = {{"checked", false}};
  } else {
    const OpCall& c0 = copies[0];
    const Tensor& az = c0.inputs.at("a_zero_point");
    const Tensor& bz = c0.inputs.at("b_zero_point");
    if (az.numel() != 1 || bz.numel() != 1) {
      invalid("baseline", "oneDNN's u8s8s32 GEMM takes one zero point per operand");
    }
    const uint8_t a_zero = az.data<uint8_t>()[0];
    const int8_t b_zero = bz.data<int8_t>()[0];
    auto out = std::make_shared<Tensor>(DType::kInt32, Shape{m, n});
    b.call = [&copies, out, a_zero, b_zero, m, n, k](std::size_t ci) {
      const OpCall& c = copies[ci];
      blas::onednn_gemm_u8s8s32(m, n, k, c.inputs.at("a").data<uint8_t>(), a_zero,
                                c.inputs.at("b").data<int8_t>(), b_zero, out->data<int32_t>());
    };
    b.call(0);
    b.gate = {{"checked", "int32 sums against the reference's"}};
    check_int32_sums(c0.inputs.at("a").data<uint8_t>(), a_zero, c0.inputs.at("b").data<int8_t>(),
                     b_zero, out->data<int32_t>(), m, n, k, b.gate);
    b.wrong = b.gate["mismatches"].get<int64_t>();
    note << blas::onednn_info()
         << "; the int32 sums (a - a_zero)(b - b_zero) only, without the requantization to uint8; "
         << b.wrong << " of " << b.gate["outputs"].get<int64_t>()
         << " sums checked differ from the reference's";
    if (b.wrong > 0) {
      note << " (without VNNI oneDNN sums u8*s8 pairs in saturating int16, vpmaddubsw)";
      b.detail = "oneDNN's u8s8s32 GEMM got " + std::to_string(b.wrong) + " of " +
                 std::to_string(b.gate["outputs"].get<int64_t>()) +
                 " int32 sums wrong against the reference's";
    }
  }
  b.note = note.str();
  return b;
}

Record evaluate_baseline(const Job& job) {
  Record r = baseline_stub(job);
  const std::string name = r.schedule.value("baseline", "");
  const int64_t m = job.shape.at(0), n = job.shape.at(1), k = job.shape.at(2);
  try {
    const KernelIdentity id = parse_identity_spec(job.identity);
    const std::vector<OpCall> copies = timing_calls(id, m, n, k, job.seed);
    blas::set_threads(job.measure.threads);
    const BlasCall b = prepare_blas_call(name, id, copies, m, n, k);
    r.gate = b.gate;
    r.extra["note"] = b.note;
    if (b.wrong > 0) {
      r.outcome = Outcome::kIncorrect;
      r.detail = b.detail;
    }
    std::vector<double> samples;
    {
      FileLock turn(job.measure_lock);
      samples = time_interleaved(
          1, copies.size(), [&](std::size_t, std::size_t ci) { b.call(ci); }, job.measure)[0];
    }
    r.samples_s = samples;
    const double med = median_of(samples);
    r.rate = med > 0 ? 2.0 * double(m) * double(n) * double(k) / med : 0;
    if (r.outcome != Outcome::kIncorrect) r.outcome = Outcome::kPassed;
  } catch (const std::exception& e) {
    r.outcome = Outcome::kRunFailed;
    r.detail = std::string("baseline ") + name + ": " + e.what();
  }
  return r;
}

}  // namespace mmtune::tune
