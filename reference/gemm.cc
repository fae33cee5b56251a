// ONNX Gemm-13 reference: sequential K sums in the accumulation type, then the alpha/beta epilogue.
#include "reference/gemm.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "reference/broadcast.h"
#include "reference/codecs.h"
#include "reference/rounding.h"
#include "reference/validate.h"

namespace mmtune {
namespace {

constexpr const char* kOp = "Gemm";

// Element (i, k) of op(A) and (k, j) of op(B), as flat indices into the stored tensors.
struct Operands {
  int64_t m, k, n;
  bool ta, tb;
  int64_t a(int64_t i, int64_t kk) const { return ta ? kk * m + i : i * k + kk; }
  int64_t b(int64_t kk, int64_t j) const { return tb ? j * k + kk : kk * n + j; }
};

// op(A) as M rows of K and op(B) as N columns of K, each element decoded once (float_at: exact, so
// the values are those the sums would decode element by element), for float_dot's sequential reads.
template <class Acc>
struct DecodedOperands {
  std::vector<Acc> a_rows, b_cols;
  DecodedOperands(const Tensor& a, const Tensor& b, const Operands& o)
      : a_rows(static_cast<std::size_t>(o.m * o.k)), b_cols(static_cast<std::size_t>(o.n * o.k)) {
    for (int64_t i = 0; i < o.m; ++i)
      for (int64_t k = 0; k < o.k; ++k)
        a_rows[i * o.k + k] =
            static_cast<Acc>(float_at(a, o.a(i, k)));  // narrow floats widen exactly
    for (int64_t j = 0; j < o.n; ++j)
      for (int64_t k = 0; k < o.k; ++k)
        b_cols[j * o.k + k] = static_cast<Acc>(float_at(b, o.b(k, j)));
  }
};

// Float K sum of row i / column j under the contract, in accumulation type Acc (float or double),
// from an exact +0, k ascending.
template <class Acc>
Acc float_dot(const DecodedOperands<Acc>& d, const Operands& o, int64_t i, int64_t j,
              FloatContract contract) {
  const Acc* x = d.a_rows.data() + i * o.k;
  const Acc* w = d.b_cols.data() + j * o.k;
  Acc acc = 0;
  for (int64_t k = 0; k < o.k; ++k) {
    if (contract == FloatContract::kFma) {
      acc = std::fma(x[k], w[k], acc);
    } else {
      const Acc p = x[k] * w[k];  // one rounding (the build forbids contraction)
      acc = acc + p;              // one rounding
    }
  }
  return acc;
}

// Stores a float32 epilogue result into a float16 / bfloat16 / float32 output (one rounding). NaN
// results are canonical (§8): their sign and payload would depend on the hardware's operand order.
void store_narrow(Tensor& y, int64_t i, float v) {
  switch (y.dtype) {
    case DType::kFloat16:
      y.data<uint16_t>()[i] = float_to_float16(v);
      break;
    case DType::kBFloat16:
      y.data<uint16_t>()[i] = float_to_bfloat16(v);
      break;
    case DType::kFloat32:
      y.data<float>()[i] = std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : v;
      break;
    default:
      MMTUNE_CHECK(false, dtype_name(y.dtype));
  }
}

// Rounds a float32 accumulator to T (float16/bfloat16) and back, exactly as storing it would.
float round_to(DType t, float v) {
  switch (t) {
    case DType::kFloat16:
      return float16_to_float(float_to_float16(v));
    case DType::kBFloat16:
      return bfloat16_to_float(float_to_bfloat16(v));
    default:
      return v;
  }
}

// Integer types: wrap-around sum, then the exact or float64 epilogue of SEMANTICS.md §8.4.
template <class T>
void integer_gemm(const GemmArgs& args, const Operands& o, const std::vector<int64_t>& sc,
                  Tensor& y) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const T* a = args.a->data<T>();
  const T* b = args.b->data<T>();
  const T* c = args.c ? args.c->data<T>() : nullptr;
  const bool use_c = c != nullptr && args.beta != 0.0f;
  const bool exact = args.alpha == 1.0f && (!use_c || args.beta == 1.0f);
  T* out = y.data<T>();
  for (int64_t i = 0; i < o.m; ++i) {
    for (int64_t j = 0; j < o.n; ++j) {
      U acc = 0;  // unsigned: wraps mod 2^32 / 2^64 by definition
      for (int64_t k = 0; k < o.k; ++k) {
        acc += static_cast<U>(static_cast<U>(a[o.a(i, k)]) * static_cast<U>(b[o.b(k, j)]));
      }
      const T cij = use_c ? c[i * sc[0] + j * sc[1]] : T(0);
      if (exact) {
        out[i * o.n + j] = static_cast<T>(acc + static_cast<U>(cij));
        continue;
      }
      // Reference evaluator: o = fl64(fl64(acc) * alpha); o = fl64(o + fl64(fl64(c) * beta));
      // then a C cast, made defined here: truncate toward zero, saturate to T, NaN -> 0.
      double t = static_cast<double>(static_cast<T>(acc)) * static_cast<double>(args.alpha);
      if (use_c) t = t + static_cast<double>(cij) * static_cast<double>(args.beta);
      t = std::trunc(t);
      T v;
      if (std::isnan(t)) {
        v = 0;
      } else if (t <= static_cast<double>(std::numeric_limits<T>::min())) {
        v = std::numeric_limits<T>::min();
      } else if (t >= std::ldexp(1.0, std::numeric_limits<T>::digits)) {  // 2^31, 2^32, 2^63, 2^64
        v = std::numeric_limits<T>::max();
      } else {
        v = static_cast<T>(t);
      }
      out[i * o.n + j] = v;
    }
  }
}

}  // namespace

const EnumNames<FloatContract>& float_contract_names() {
  static const EnumNames<FloatContract> names = {{"strict", FloatContract::kStrict},
                                                 {"fma", FloatContract::kFma}};
  return names;
}

const char* to_string(FloatContract c) { return enum_name(float_contract_names(), c); }

std::optional<FloatContract> float_contract_from_string(std::string_view s) {
  return enum_from_name(float_contract_names(), s);
}

bool contract_applies(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kBFloat16;
}

FloatContract effective_contract(DType t, FloatContract c) {
  return contract_applies(t) ? c : FloatContract::kStrict;
}

DType gemm_accumulation_type(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ? DType::kFloat32 : t;
}

GemmPlan validate_gemm(const GemmArgs& args) {
  const Tensor& a = require_present(kOp, "A", args.a);
  const Tensor& b = require_present(kOp, "B", args.b);
  require_dtype(kOp, "A", a,
                {DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kUInt32, DType::kUInt64,
                 DType::kInt32, DType::kInt64, DType::kBFloat16});
  require_same_dtype(kOp, "B", b, "A", a);
  const GemmDims d = gemm_dims(kOp, a, b, args.trans_a, args.trans_b);
  GemmPlan p{d.m, d.k, d.n};
  if (args.c != nullptr) {
    const Tensor& c = require_present(kOp, "C", args.c);
    require_same_dtype(kOp, "C", c, "A", a);
    require_broadcast_to_output(kOp, c, p.m, p.n);
  }
  require_output_fits(kOp, "Y", a.dtype, {p.m, p.n});
  return p;
}

Tensor gemm(const GemmArgs& args) {
  const GemmPlan p = validate_gemm(args);
  const Tensor &a = *args.a, &b = *args.b;
  Tensor y(a.dtype, {p.m, p.n});
  const Operands o{p.m, p.k, p.n, args.trans_a, args.trans_b};
  // Strides of C viewed as (M, N).
  const std::vector<int64_t> sc =
      args.c ? broadcast_strides(args.c->shape, {p.m, p.n}) : std::vector<int64_t>{0, 0};
  // beta == 0 ignores C entirely (so its NaN/Inf do not propagate), as the reference evaluator
  // does.
  const bool use_c = args.c != nullptr && args.beta != 0.0f;

  switch (a.dtype) {
    case DType::kInt32:
      integer_gemm<int32_t>(args, o, sc, y);
      return y;
    case DType::kUInt32:
      integer_gemm<uint32_t>(args, o, sc, y);
      return y;
    case DType::kInt64:
      integer_gemm<int64_t>(args, o, sc, y);
      return y;
    case DType::kUInt64:
      integer_gemm<uint64_t>(args, o, sc, y);
      return y;
    default:
      break;
  }
  std::optional<DecodedOperands<double>> d64;
  std::optional<DecodedOperands<float>> d32;
  if (a.dtype == DType::kFloat64)
    d64.emplace(a, b, o);
  else
    d32.emplace(a, b, o);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const int64_t out = i * p.n + j;
      if (a.dtype == DType::kFloat64) {
        // float64: sum and epilogue in float64; alpha, beta are float32 values widened exactly.
        const double d = float_dot(*d64, o, i, j, args.contract);
        double v = d * static_cast<double>(args.alpha);
        if (use_c)
          v = v + float_at(*args.c, i * sc[0] + j * sc[1]) * static_cast<double>(args.beta);
        y.data<double>()[out] = std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v;
      } else {
        // float16 / bfloat16 / float32: float32 sum (products of narrow floats are exact in
        // float32, so both contracts agree for them); d rounded to T; epilogue in float32; one
        // final rounding to T.
        const float d = round_to(a.dtype, float_dot(*d32, o, i, j, args.contract));
        float v = d * args.alpha;
        if (use_c) {
          const float cb = static_cast<float>(float_at(*args.c, i * sc[0] + j * sc[1])) * args.beta;
          v = v + cb;
        }
        store_narrow(y, out, v);
      }
    }
  }
  return y;
}

}  // namespace mmtune
