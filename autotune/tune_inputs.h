// What the tuner runs a kernel on: kernel identities as `--op SPEC` text, calls (named inputs and
// attributes) whose identity is exactly a given one, at a given (M, N, K) and with a given kind of
// data, and the gate battery one candidate schedule passes before it is measured. The data
// generators here are also the variant and runtime suites' (tests/variants/variant_support.h), so
// the tuner's gate and the tests draw the same adversarial inputs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "reference/qgemm.h"
#include "reference/qlinear_matmul.h"
#include "reference/quant_matmul_dequant.h"
#include "reference/registry.h"
#include "reference/tensor.h"
#include "runtime/host/kernel_identity.h"
#include "schedules/schedule.h"

namespace mmtune::tune {

// ---- Kernel identity specs ----------------------------------------------------------------------
//
// `OP[:TYPES][:KEY=VALUE...]`, e.g. `Gemm:float32:contract=fma`, `QGemm:uint8,int8:output=uint8`.
//
// OP is an ONNX name or alias (reference/registry.h). TYPES fills the operator's type parameters
// in order; one type fills them all:
//   Gemm                A, B, C, Y      float32 float64 float16 bfloat16 int32 int64 uint32 uint64
//   QLinearMatMul       a, b, y         int8 uint8, or float8e4m3fn float8e4m3fnuz float8e5m2
//                                       float8e5m2fnuz (a float8 type sets X.type=uint8 and
//                                       X_format=<type>, as the generator takes float8)
//   QGemm               A, B            int8 uint8
//   QuantMatmulDequant  (none)
// KEY is any generator parameter of the operator's identity (runtime/host/kernel_identity.h:
// `contract`, `trans_a`, `scale_type`, `has_smooth`, ...) or one of these friendly keys:
//   Gemm                contract=strict|fma (the identity's own name)
//   QLinearMatMul       requant=float32|float64 (the identity's own name),
//                       scale=float32|float16|bfloat16 (scale_type)
//   QGemm               output=float32|uint8|int8 (Y.type: float32, or the quantized output's
//                       type, that of y_zero_point), y_scale=true|false (has_y_scale)
//   QuantMatmulDequant  x_quant=MODE, how x is quantized to int8 (dynamic, per_token):
//                         dynamic_pertoken  per-row scale from the row's max at run time (no
//                                           x_scale)
//                         static_pertoken   x_scale given, float32 (m,)
//                         static_pertensor  x_scale given, one value (float32; float16 with a
//                                           fused weight scale)
//                         pertoken|pertensor  the attribute x_quant_mode alone (per_token); the
//                                           default of `dynamic` follows
//                       weight=nk|kn (transpose_weight true|false), smooth=true|false
//                       (has_smooth), bias=true|false (has_bias)
// Gemm (float32), QLinearMatMul (8-bit integer) and QGemm, B not transposed, also take
// prepacked_b=true: the kernel that reads B packed once on the host (mmtune::runtime::prepack_b),
// which computes the same call; its schedules are tuned and timed with B packed outside the call.
// A parameter no part sets takes the default the shipped kernels use:
//   Gemm                float32, trans_a=false, trans_b=false, has_c=true, contract=strict
//   QLinearMatMul       uint8,int8,uint8, scale_type=float32, requant=float32
//   QGemm               uint8,int8, output float32, has_y_scale=true
//   QuantMatmulDequant  transpose_weight=false, fused_scale=false, per_token=!fused_scale,
//                       dynamic=(per_token and not fused_scale), has_smooth=false, has_bias=true,
//                       weight_scale.type=int64 if fused_scale else float32, x_scale.type=float16
//                       if fused_scale and not dynamic else float32
// (so `QuantMatmulDequant:fused_scale=true` is the static per-tensor kernel with an int64 weight
// scale and a float16 x scale). A key may appear once; two parts that set one parameter to
// different values are refused.
//
// A spec is valid when a call built from it (make_call) passes the reference's validation and has
// exactly the parsed identity: `Gemm:int32:contract=fma` is refused, since an integer sum has no
// contract (its calls run contract=strict). Errors: InvalidArgument "--op 'SPEC': ..." naming the
// bad part and what is allowed.
KernelIdentity parse_identity_spec(const std::string& spec);

// Whether the runtime has a kernel of `id` that reads B prepacked (cmake/MmtuneKernels.cmake,
// MMTUNE_PREPACKED: float32 Gemm, 8-bit QLinearMatMul and QGemm, B not transposed; the (K, N)
// weight of QuantMatmulDequant with a bias, the runtime's identity, on x86 CPUs), whether or not
// `id` itself says prepacked_b; `target` (a Halide target, "" for any) the kernel's.
bool has_prepacked_kernel(const KernelIdentity& id, const std::string& target = "");
// `id` without prepacked_b (the identity of the calls its kernel computes); `*prepacked` says
// whether it was prepacked_b=true.
KernelIdentity without_prepacked(KernelIdentity id, bool* prepacked = nullptr);

// The canonical spec of a valid identity: `OP:TYPES` (one type for Gemm, every type parameter
// otherwise, none for QuantMatmulDequant) then, in a fixed order, only the parts without which the
// spec would parse to another identity (friendly keys preferred). parse_identity_spec of it
// returns `id`. InvalidArgument when `id` is not the identity of any valid call.
std::string identity_spec(const KernelIdentity& id);

// The kernel identities of a tuned database (tuned/<target>.json: its "kernels", each with "op",
// "generator", "params" and "schedule"), in order of first appearance, each once, with the
// schedules the database gives it: `mmtune autotune --ops-from tuned/x86-64-linux-sse41.json`
// retunes what a database ships, its schedules tried first (the incumbents to beat).
// InvalidArgument naming the file and the kernel when the file cannot be read or parsed, or a
// kernel is not a valid identity.
struct DatabaseIdentity {
  std::string spec;                       // canonical (identity_spec)
  std::vector<nlohmann::json> schedules;  // as the database has them
};
std::vector<DatabaseIdentity> identities_of_database(const std::string& path);

// A tuned database file parsed: an object with an array "kernels". InvalidArgument "WHERE: ..."
// when it cannot be read, is not JSON or has no such array.
nlohmann::json read_tuned_database(const std::string& path, const std::string& where);

// ---- Data kinds and calls
// ------------------------------------------------------------------------

// The kinds of data a kernel is checked on; data_kinds() says which apply to an identity.
enum class DataKind {
  kRandom,     // the variant suites' ordinary data: floats uniform in [-2, 2]; Gemm integers over
               // the type's full range (products and sums wrap); quantized operands over their
               // full range with zero points in half of it and scales that map the sum back into
               // the output range; per-tensor scales and zero points
  kFullRange,  // quantized ops: operands and zero points over the full 8-bit range (16-bit pair
               // sums would saturate), per-row (QLinearMatMul a) and per-column (b) parameters;
               // QGemm: C near INT32_MAX, so that C + the sum wraps
  kHuge,       // float Gemm: values [-2, 2] x 2^e with products at and beyond the accumulator's
               // overflow threshold; QuantMatmulDequant: outputs beyond float16's +-65504
  kTiny,       // float Gemm: products in and below the accumulator's subnormal range;
               // QuantMatmulDequant: all-zero rows (dynamic scale 0, 0 * Inf)
  kSpecial,    // float Gemm: one element in eight a subnormal, +-0, +-Inf, an extreme or a NaN
               // with a non-canonical payload; float8 QLinearMatMul: NaN / Inf / -0 patterns;
               // QuantMatmulDequant: any float16 x pattern and subnormal scales
  kTies,       // QLinearMatMul, quantized-output QGemm: a multiplier of exactly 0.5, so every odd
               // sum requantizes on a .5 tie; QuantMatmulDequant: x quantized on .5 ties
  kExtremeScales,  // QLinearMatMul: per-column b scales over 2^+-60 (2^+-14 for float16, halved
                   // where the multiplier would overflow); QGemm: per-column b scales over 2^+-60
  kWrap,  // exact integer sums of 8-bit operands: constant extremes, so that at K >= wrap_k(id)
          // the int32 sum wraps (the generators' wide sums must wrap exactly like it)
};
const char* data_kind_name(DataKind k);  // "random", "full_range", "huge", ..., "wrap"

// The kinds that apply to `id`, kRandom first, then the most adversarial one.
std::vector<DataKind> data_kinds(const KernelIdentity& id);

// The K at and beyond which kWrap data wraps the int32 sum (0 where kWrap does not apply).
int64_t wrap_k(const KernelIdentity& id);

// One call: what run_reference and run_halide (autotune/halide_ops.h) take.
struct OpCall {
  std::string op;  // ONNX name
  NamedTensors inputs;
  Attributes attrs;
};

// A call of identity `id` on an (M, N, K) product: 2-D operands in the identity's layout
// (transposes honoured), Gemm's C (M, N) when present, QuantMatmulDequant's bias, smooth and x
// scale as the identity says; scales and zero points per tensor unless the identity or the data
// kind fixes them (see DataKind); attributes the kernel takes as parameters (alpha, beta) drawn
// from a short list. Checks that the call validates and has identity `id`: InvalidArgument (the
// reference's reason, or the parameters that differ) otherwise, and for m or n < 1, k < 0 or a
// kind data_kinds(id) does not list.
OpCall make_call(const KernelIdentity& id, int64_t m, int64_t n, int64_t k, DataKind kind,
                 std::mt19937_64& rng);

// The identity of a call: its arguments parsed and validated as the reference does
// (InvalidArgument when invalid), then the runtime's identity function.
KernelIdentity call_identity(const OpCall& call);

// ---- The gate battery
// ----------------------------------------------------------------------------

struct GateCase {
  std::string name;  // "ragged_6/special", "bucket_64x4096x4096/random", "wrap_int32/wrap"
  int64_t m, n, k;
  DataKind kind;
};

// The cases a candidate of `id` with output tile `tile` passes before it is measured for the
// bucket whose measured shape is (bucket_m, bucket_n, bucket_k): the tile-relative edge shapes of
// matmul_shapes (K = 0 left out: the host gives it to the reference) each with random data and
// again with the other kinds in turn; the bucket's shape with random data and with the most
// adversarial kind, reduced when it is large (N and K down to 64, then M down to 65, halved until
// it fits kGateMaxOutputs and kGateMaxWork); and for exact integer sums two small-M, small-N
// cases at K = wrap_k(id). Every applicable kind appears at least once, and no case has K = 0.
// 17-36 cases, at most about 13 M multiply-adds in all (21 M with QuantMatmulDequant's wrap
// cases): the reference computes a battery in 0.2-0.7 s on one core (float16 Gemm the slowest).
std::vector<GateCase> gate_cases(const KernelIdentity& id, schedules::Tile tile, int64_t bucket_m,
                                 int64_t bucket_n, int64_t bucket_k);
// The bucket shape's limits in the gate: output elements, multiply-adds.
constexpr int64_t kGateMaxOutputs = int64_t{1} << 20;
constexpr int64_t kGateMaxWork = int64_t{1} << 22;

// ---- Data generators (shared with the variant and runtime suites)
// --------------------------------

struct MatmulShape {
  std::string category;
  int64_t m, n, k;
};
// Shape categories relative to a tile of `rows` x `cols`: tiny (1..10), exact tile multiples,
// ragged (multiples +- 1), powers of two +- 1, deep K (>= 4096), shallow K (<= 4), GEMV (M = 1),
// K = 0 (no sum: the epilogue alone).
// `deep` = false leaves out the deep-K shape (for slow dtypes).
std::vector<MatmulShape> matmul_shapes(int rows, int cols, bool deep = true);

// Uniform random values: integers in [lo, hi]; floats uniform in [lo, hi] rounded to the dtype;
// float8 from all finite patterns.
Tensor random_tensor(DType t, Shape shape, std::mt19937_64& rng, double lo, double hi);

// Value ranges that exercise each type: full 8-bit ranges; for Gemm, wrapping integer sums and
// floats in [-2, 2].
double quant_min(DType t);  // int8 -128, uint8 0
double quant_max(DType t);  // int8 127, uint8 255
struct ValueRange {
  double lo, hi;
};
ValueRange gemm_value_range(DType t);

// Scales of dtype `st` (float32, float16 or bfloat16), log-uniform in [2^e0, 2^e1].
Tensor random_scales(DType st, Shape shape, std::mt19937_64& rng, double e0, double e1);

// Float data for the Gemm suites (float32, float64, float16, bfloat16), beyond [-2, 2]:
enum class FloatData {
  kPlain,    // uniform in [-2, 2]
  kHuge,     // [-2, 2] x 2^e with products at and beyond the accumulator's overflow threshold
  kTiny,     // [-2, 2] x 2^-e with products in and below the accumulator's subnormal range
  kSpecial,  // plain, with one element in eight replaced by a subnormal, +-0, +-Inf, the type's
             // extremes, or a NaN with a non-canonical payload of either sign
};
const char* float_data_name(FloatData d);
Tensor random_float_tensor(DType t, Shape shape, std::mt19937_64& rng, FloatData kind);

// One QLinearMatMul (int8/uint8) case: operand and parameter shapes and the kind of data.
struct QlmCase {
  std::string name;
  Shape a, b;              // operand shapes
  Shape a_param, b_param;  // scale / zero-point shapes
  // random | full_range | ties | wrap | extreme_scales; or equal_params (the per-row / per-column
  // parameters each one value), a_scale_differs, a_zero_point_differs, b_zero_point_differs (so,
  // but for the last element of that one)
  std::string data = "random";
};

// A case's inputs for operand types (ta, tb), output type ty and scale type st.
struct QlmInputs {
  Tensor a, b, as, bs, ys, az, bz, yz;
  QLinearMatMulArgs args(RequantMode mode) const {
    return QLinearMatMulArgs{&a, &as, &az, &b, &bs, &bz, &ys, &yz, 21, mode};
  }
};
QlmInputs make_qlinear_matmul_inputs(DType ta, DType tb, DType ty, DType st, const QlmCase& c,
                                     std::mt19937_64& rng);

// float8 QLinearMatMul inputs (mmtune's definition, docs/semantics.md): a (m, k) and b (k, n) from
// the finite patterns in [-8, 8]; with probability 1 / `special_one_in` per operand (never for 0)
// one element of it replaced by a NaN / Inf / -0 pattern (counted in `specials`); zero zero
// points; per-row a and per-column b scales in 2^[-3, 3], y_scale in 2^[-12, 4].
QlmInputs make_float8_qlinear_matmul_inputs(DType ta, DType tb, DType ty, DType st, int64_t m,
                                            int64_t n, int64_t k, int special_one_in,
                                            std::mt19937_64& rng, int64_t* specials = nullptr);

// QGemm inputs: A, B (transposed as asked) and zero points over the full range, a_scale and b_scale
// (per tensor or per column) in [0.002, 0.004], C of `c_shape` in [-5000, 5000] or, with `big_c`,
// near INT32_MAX (C + the sum wraps), y_scale in [0.01, 0.05], a y_zero_point of type `ty`.
struct QGemmCase {
  int64_t m, n, k;
  bool trans_a = false, trans_b = false, per_column = false;
  Shape c_shape;
  bool big_c = false;
};
struct QGemmInputs {
  Tensor a, b, as, az, bs, bz, c, ys, yz;
  // The call on these inputs: C, y_scale and y_zero_point passed where asked (the transposes and
  // alpha are the caller's to set).
  QGemmArgs args(bool with_c, bool with_y_scale, bool with_y_zero_point) const;
};
QGemmInputs make_qgemm_inputs(DType ta, DType tb, DType ty, const QGemmCase& c,
                              std::mt19937_64& rng);

// QuantMatmulDequant's scale modes, one combination of them, and what a case does to the data.
enum class QmdMode { kDynamic, kStaticPerToken, kPerTensor, kFused };
const char* qmd_mode_name(QmdMode m);  // "dynamic-pertoken", ..., "fused-int64-pertensor-float16"
struct QmdCombo {
  QmdMode mode;
  bool smooth, bias, transpose;
  std::string name() const;
};
enum class QmdData { kRandom, kZeroRows, kSaturate, kTies, kSpecials, kWrap };
struct QmdCase {
  std::string category;
  int64_t m, n, k;
  QmdData data = QmdData::kRandom;
};
// The inputs of one case (smooth and bias always drawn; args() passes them as the combo says).
struct QmdInputs {
  Tensor x, weight, weight_scale, bias, x_scale, smooth;
  QmdCombo c;
  QuantMatmulDequantArgs args() const;
};
QmdInputs make_quant_matmul_dequant_inputs(const QmdCombo& c, const QmdCase& s,
                                           std::mt19937_64& rng);

}  // namespace mmtune::tune
