// Invalid input is rejected before anything is computed, with a sentence naming the input, its
// value and the rule: one case per class of rule and operator (a table, each row mutating a valid
// call).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

#include "reference/codecs.h"
#include "reference/registry.h"

namespace mmtune {
namespace {

Tensor filled(DType t, Shape s, double v) {
  Tensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numel(); ++i) {
    switch (t) {
      case DType::kInt8:
        r.data<int8_t>()[i] = static_cast<int8_t>(v);
        break;
      case DType::kUInt8:
        r.data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      case DType::kInt32:
        r.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::kInt64:
        r.data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      case DType::kFloat32:
        r.data<float>()[i] = static_cast<float>(v);
        break;
      case DType::kFloat64:
        r.data<double>()[i] = v;
        break;
      case DType::kFloat16:
        r.data<uint16_t>()[i] = float_to_float16(static_cast<float>(v));
        break;
      case DType::kBFloat16:
        r.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
        break;
      default:
        r.data<uint8_t>()[i] = float_to_float8(t, static_cast<float>(v), true);
        break;
    }
  }
  return r;
}

struct Call {
  std::string op;
  NamedTensors in;
  Attributes attrs;
};

Call qlinear_matmul() {
  return {"QLinearMatMul",
          {{"a", filled(DType::kUInt8, {2, 4}, 3)},
           {"a_scale", filled(DType::kFloat32, {}, 0.5)},
           {"a_zero_point", filled(DType::kUInt8, {}, 1)},
           {"b", filled(DType::kUInt8, {4, 3}, 5)},
           {"b_scale", filled(DType::kFloat32, {}, 0.25)},
           {"b_zero_point", filled(DType::kUInt8, {}, 2)},
           {"y_scale", filled(DType::kFloat32, {}, 0.5)},
           {"y_zero_point", filled(DType::kUInt8, {}, 7)}},
          {}};
}

Call qlinear_matmul_f8() {
  Call c = qlinear_matmul();
  for (const char* n : {"a", "a_zero_point", "b", "b_zero_point", "y_zero_point"}) {
    Tensor& t = c.in.at(n);
    t = filled(DType::kFloat8E4M3FN, t.shape, n[1] == '_' ? 0.0 : 1.5);
  }
  return c;
}

Call gemm() {
  return {"Gemm",
          {{"A", filled(DType::kFloat32, {2, 3}, 1)},
           {"B", filled(DType::kFloat32, {3, 4}, 2)},
           {"C", filled(DType::kFloat32, {4}, 1)}},
          {}};
}

Call qgemm() {
  return {"QGemm",
          {{"A", filled(DType::kUInt8, {2, 3}, 1)},
           {"a_scale", filled(DType::kFloat32, {}, 0.1)},
           {"a_zero_point", filled(DType::kUInt8, {}, 1)},
           {"B", filled(DType::kInt8, {3, 4}, 2)},
           {"b_scale", filled(DType::kFloat32, {4}, 0.2)},
           {"b_zero_point", filled(DType::kInt8, {4}, 0)},
           {"y_scale", filled(DType::kFloat32, {}, 0.3)},
           {"y_zero_point", filled(DType::kUInt8, {}, 128)}},
          {}};
}

Call qmd() {
  return {"QuantMatmulDequant",
          {{"x", filled(DType::kFloat16, {2, 16}, 0.5)},
           {"weight", filled(DType::kInt8, {32, 16}, 3)},
           {"weight_scale", filled(DType::kFloat32, {32}, 0.01)}},
          {}};
}

struct Case {
  std::string name;
  std::function<Call()> make;
  std::vector<std::string> message_parts;  // each must appear in the error message
};

Call with(Call c, const std::string& name, Tensor t) {
  c.in[name] = std::move(t);
  return c;
}
Call without(Call c, const std::string& name) {
  c.in.erase(name);
  return c;
}
Call attr(Call c, const std::string& k, const std::string& v) {
  c.attrs[k] = v;
  return c;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::vector<Case> cases() {
  using D = DType;
  return {
      // --- ranks and shapes
      {"qlm_rank0_a",
       [] { return with(qlinear_matmul(), "a", filled(D::kUInt8, {}, 1)); },
       {"QLinearMatMul", "a is a scalar", "rank >= 1"}},
      {"qlm_k_mismatch",
       [] {
         return with(qlinear_matmul(), "b", filled(D::kUInt8, {5, 3}, 1));
       },
       {"a has shape [2,4]", "b has shape [5,3]", "K=4"}},
      {"qlm_batch_not_broadcast",
       [] {
         Call c = with(qlinear_matmul(), "a", filled(D::kUInt8, {2, 2, 4}, 1));
         return with(c, "b", filled(D::kUInt8, {3, 4, 3}, 1));
       },
       {"batch dims", "[2]", "[3]", "do not broadcast"}},
      {"gemm_rank3",
       [] {
         return with(gemm(), "A", filled(D::kFloat32, {1, 2, 3}, 1));
       },
       {"Gemm", "A has shape [1,2,3]", "rank 2"}},
      {"gemm_k_mismatch",
       [] { return attr(gemm(), "transA", "1"); },
       {"Gemm", "transA=1", "inner dimensions differ"}},
      {"gemm_c_not_broadcast",
       [] { return with(gemm(), "C", filled(D::kFloat32, {3}, 1)); },
       {"C has shape [3]", "(M, N) = [2,4]"}},
      {"qgemm_k_mismatch",
       [] {
         return with(qgemm(), "B", filled(D::kInt8, {4, 4}, 1));
       },
       {"QGemm", "inner dimensions differ"}},
      {"qgemm_c_shape",
       [] {
         return with(qgemm(), "C", filled(D::kInt32, {2, 3}, 1));
       },
       {"QGemm", "C has shape [2,3]"}},
      {"qmd_k_mismatch",
       [] {
         return with(qmd(), "weight", filled(D::kInt8, {32, 8}, 1));
       },
       {"QuantMatmulDequant", "k differs"}},
      {"qmd_weight_scale_len",
       [] { return with(qmd(), "weight_scale", filled(D::kFloat32, {16}, 1)); },
       {"weight_scale has shape [16]", "(32,)"}},
      // --- dtypes
      {"qlm_zero_point_dtype",
       [] { return with(qlinear_matmul(), "a_zero_point", filled(D::kInt8, {}, 1)); },
       {"a_zero_point has dtype int8", "a has dtype uint8", "must be the same"}},
      {"qlm_bad_input_dtype",
       [] {
         return with(qlinear_matmul(), "a", filled(D::kInt32, {2, 4}, 1));
       },
       {"a has dtype int32", "int8, uint8"}},
      {"qlm_v10_float16_scale",
       [] {
         return attr(with(qlinear_matmul(), "a_scale", filled(D::kFloat16, {}, 0.5)), "opset",
                     "10");
       },
       {"QLinearMatMul-10", "a_scale has dtype float16", "float32"}},
      {"qlm_v10_float8",
       [] { return attr(qlinear_matmul_f8(), "opset", "10"); },
       {"QLinearMatMul-10", "float8e4m3fn"}},
      {"qlm_scale_types_differ",
       [] { return with(qlinear_matmul(), "y_scale", filled(D::kFloat16, {}, 0.5)); },
       {"y_scale has dtype float16", "a_scale has dtype float32"}},
      {"qlm_mixed_float8_int8",
       [] {
         return with(with(qlinear_matmul_f8(), "y_zero_point", filled(D::kUInt8, {}, 0)), "y_scale",
                     filled(D::kFloat32, {}, 1));
       },
       {"all 8-bit integers or all float8"}},
      {"gemm_unsupported_type",
       [] {
         return with(with(without(gemm(), "C"), "A", filled(D::kInt8, {2, 3}, 1)), "B",
                     filled(D::kInt8, {3, 4}, 1));
       },
       {"A has dtype int8", "float16, float32, float64, uint32, uint64, int32, int64 or bfloat16"}},
      {"gemm_c_dtype",
       [] { return with(gemm(), "C", filled(D::kFloat64, {4}, 1)); },
       {"C has dtype float64", "A has dtype float32"}},
      {"qgemm_float_y_zero_point",
       [] { return with(qgemm(), "y_zero_point", filled(D::kFloat32, {}, 1)); },
       {"y_zero_point has dtype float32", "uint8 or int8"}},
      {"qmd_x_dtype",
       [] {
         return with(qmd(), "x", filled(D::kFloat32, {2, 16}, 1));
       },
       {"x has dtype float32", "float16"}},
      {"qmd_fused_scale_needs_f16_pertensor",
       [] {
         Tensor ws(D::kInt64, {32});
         Call c = with(qmd(), "weight_scale", ws);
         return attr(with(c, "x_scale", filled(D::kFloat32, {}, 0.5)), "x_quant_mode", "pertensor");
       },
       {"x_scale has dtype float32", "float16"}},
      // --- scale / zero-point shapes
      {"qlm_a_scale_1d_per_row",
       [] { return with(qlinear_matmul(), "a_scale", filled(D::kFloat32, {2}, 0.5)); },
       {"a_scale has shape [2]", "a has shape [2,4]", "[2,1]", "per row"}},
      {"qlm_b_zero_point_rows",
       [] {
         return with(qlinear_matmul(), "b_zero_point", filled(D::kUInt8, {4, 1}, 1));
       },
       {"b_zero_point has shape [4,1]", "per column"}},
      {"qlm_y_scale_vector",
       [] { return with(qlinear_matmul(), "y_scale", filled(D::kFloat32, {3}, 0.5)); },
       {"y_scale has shape [3]", "scalar or have shape [1]"}},
      {"qgemm_a_scale_vector",
       [] { return with(qgemm(), "a_scale", filled(D::kFloat32, {2}, 0.1)); },
       {"a_scale has shape [2]"}},
      {"qgemm_b_zero_point_len",
       [] { return with(qgemm(), "b_zero_point", filled(D::kInt8, {1}, 0)); },
       {"b_zero_point has shape [1]", "b_scale has shape [4]"}},
      {"qmd_pertoken_x_scale_len",
       [] { return with(qmd(), "x_scale", filled(D::kFloat32, {3}, 0.5)); },
       {"x_scale has shape [3]", "pertoken", "(2,)"}},
      // --- scale values
      {"qlm_zero_scale",
       [] { return with(qlinear_matmul(), "b_scale", filled(D::kFloat32, {}, 0)); },
       {"b_scale = 0", "finite and > 0"}},
      {"qlm_negative_scale",
       [] { return with(qlinear_matmul(), "a_scale", filled(D::kFloat32, {}, -0.5)); },
       {"a_scale = -0.5", "finite and > 0"}},
      {"qlm_nan_scale",
       [] { return with(qlinear_matmul(), "y_scale", filled(D::kFloat32, {}, kNaN)); },
       {"y_scale = nan", "finite"}},
      {"qlm_inf_per_column_scale",
       [] {
         Tensor s = filled(D::kFloat32, {3}, 0.5);
         s.data<float>()[2] = kInf;
         return with(qlinear_matmul(), "b_scale", s);
       },
       {"b_scale[flat index 2] = inf"}},
      {"qlm_multiplier_overflow_f16",
       [] {
         Call c = qlinear_matmul();
         c = with(c, "a_scale", filled(D::kFloat16, {}, 60000));
         c = with(c, "b_scale", filled(D::kFloat16, {}, 1));
         return with(c, "y_scale", filled(D::kFloat16, {}, 0.001));
       },
       {"overflows float16", "must be finite"}},
      {"qgemm_nan_y_scale",
       [] { return with(qgemm(), "y_scale", filled(D::kFloat32, {}, kNaN)); },
       {"y_scale = nan"}},
      {"qmd_zero_weight_scale",
       [] { return with(qmd(), "weight_scale", filled(D::kFloat32, {32}, 0)); },
       {"weight_scale[flat index 0] = 0"}},
      {"qmd_fused_scale_nan_bits",
       [] {
         Tensor ws(D::kInt64, {32});
         for (int i = 0; i < 32; ++i) ws.data<int64_t>()[i] = 0x7FC00000;
         Call c = with(qmd(), "weight_scale", ws);
         return attr(with(c, "x_scale", filled(D::kFloat16, {}, 0.5)), "x_quant_mode", "pertensor");
       },
       {"weight_scale[0] = 2143289344", "low 32 bits"}},
      // --- float8 zero points
      {"qlm_float8_nonzero_zero_point",
       [] { return with(qlinear_matmul_f8(), "b_zero_point", filled(D::kFloat8E4M3FN, {}, 1.0)); },
       {"b_zero_point holds the float8e4m3fn pattern 0x38", "must be +0"}},
      {"qlm_float8_negative_zero_zero_point",
       [] {
         Tensor z(D::kFloat8E4M3FN, {});
         z.data<uint8_t>()[0] = 0x80;
         return with(qlinear_matmul_f8(), "a_zero_point", z);
       },
       {"a_zero_point holds the float8e4m3fn pattern 0x80", "must be +0"}},
      // --- optional-input rules
      {"qgemm_y_zero_point_without_y_scale",
       [] { return without(qgemm(), "y_scale"); },
       {"y_zero_point is given without y_scale"}},
      {"qmd_x_offset_given",
       [] { return with(qmd(), "x_offset", filled(D::kFloat32, {}, 0)); },
       {"x_offset is given"}},
      {"qmd_dynamic_pertensor",
       [] { return attr(qmd(), "x_quant_mode", "pertensor"); },
       {"dynamic quantization", "per token only"}},
      // --- names and attributes
      {"missing_input",
       [] { return without(qlinear_matmul(), "y_scale"); },
       {"input y_scale is required but missing"}},
      {"unknown_input",
       [] { return with(gemm(), "D", filled(D::kFloat32, {}, 0)); },
       {"no input named 'D'", "A, B, C?"}},
      {"unknown_attribute",
       [] { return attr(gemm(), "gamma", "1"); },
       {"no attribute named 'gamma'"}},
      {"bad_int_attribute",
       [] { return attr(gemm(), "transA", "yes"); },
       {"transA=yes is not an integer"}},
      {"bad_float_attribute",
       [] { return attr(gemm(), "alpha", "1.5x"); },
       {"alpha=1.5x is not a number"}},
      {"bad_enum_attribute",
       [] { return attr(qlinear_matmul(), "requant", "float16"); },
       {"requant=float16 is not one of float32, float64"}},
      {"bad_opset",
       [] { return attr(qlinear_matmul(), "opset", "13"); },
       {"opset = 13", "versions 10 and 21"}},
      {"unknown_operator",
       [] {
         Call c = gemm();
         c.op = "MatMulInteger";
         return c;
       },
       {"unknown operator 'MatMulInteger'", "QLinearMatMul, Gemm, QGemm, QuantMatmulDequant"}},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Validation : public ::testing::TestWithParam<Case> {};

TEST_P(Validation, RejectsWithASentenceNamingInputValueAndRule) {
  const Case& c = GetParam();
  const Call call = c.make();
  try {
    run_reference(call.op, call.in, call.attrs);
    FAIL() << c.name << ": accepted, expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(msg.find(part), std::string::npos)
          << c.name << ": '" << part << "' not in: " << msg;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllRules, Validation, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The valid base calls themselves pass, so each rejection above is caused by its one mutation.
TEST(Validation, BaseCallsAreValid) {
  for (const Call& c : {qlinear_matmul(), qlinear_matmul_f8(), gemm(), qgemm(), qmd()}) {
    EXPECT_NO_THROW(run_reference(c.op, c.in, c.attrs)) << c.op;
  }
}

// Tensors built by hand through the C++ API whose bytes do not match their shape are rejected too.
TEST(Validation, InconsistentTensorBytes) {
  Call c = gemm();
  c.in.at("A").bytes.resize(4);
  EXPECT_THROW(run_reference(c.op, c.in, c.attrs), InvalidArgument);
}

// Storage: 64-byte aligned whatever its size and however it was made (kernels read 64-byte rows
// of it, a prepacked B among them); zero-filled by the constructor, sized alike by uninitialized.
TEST(TensorStorage, AlignedToCacheLinesAndSized) {
  auto aligned = [](const Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.bytes.data()) % 64 == 0;
  };
  for (int64_t n : {1, 15, 64, 1000, 1 << 20}) {
    SCOPED_TRACE(n);
    const Tensor z(DType::kFloat32, {n});
    EXPECT_TRUE(aligned(z));
    EXPECT_EQ(z.bytes.size(), static_cast<std::size_t>(n) * 4);
    for (uint8_t b : z.bytes) ASSERT_EQ(b, 0);
    const Tensor copy = z;
    EXPECT_TRUE(aligned(copy));
    const Tensor u = Tensor::uninitialized(DType::kInt16, {2, n});
    EXPECT_TRUE(aligned(u));
    EXPECT_EQ(u.dtype, DType::kInt16);
    EXPECT_EQ(u.shape, (Shape{2, n}));
    EXPECT_EQ(u.bytes.size(), static_cast<std::size_t>(n) * 4);
  }
  EXPECT_THROW(Tensor::uninitialized(DType::kUInt8, {-1}), InvalidArgument);
}

// transposed (the runtime's per-call transposes of A and B, the reference's transA / transB):
// element (j, i) of the result is element (i, j) of x, bytes unchanged, for every element size and
// shapes on both sides of its blocks (16 rows, 8 columns; 4 x 4 register transposes for 4 bytes;
// for bytes, 64 x 64 blocks of 16 x 16 register transposes in squares of 256, then the edges).
TEST(TensorStorage, TransposedMovesEveryElement) {
  int64_t compared = 0;
  for (DType t : {DType::kUInt8, DType::kFloat16, DType::kFloat32, DType::kFloat64}) {
    const std::size_t es = dtype_size(t);
    for (int64_t rows : {1, 3, 8, 15, 16, 17, 33, 64, 100, 128, 320}) {
      for (int64_t cols : {1, 4, 7, 8, 9, 16, 31, 64, 129, 256, 300}) {
        Tensor x = Tensor::uninitialized(t, {rows, cols});
        for (std::size_t b = 0; b < x.bytes.size(); ++b)
          x.bytes[b] = static_cast<uint8_t>((b * 131 + b / 7) & 0xFF);
        const Tensor y = transposed(x);
        ASSERT_EQ(y.dtype, t);
        ASSERT_EQ(y.shape, (Shape{cols, rows}));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            ASSERT_EQ(std::memcmp(y.bytes.data() + (j * rows + i) * es,
                                  x.bytes.data() + (i * cols + j) * es, es),
                      0)
                << dtype_name(t) << " " << rows << "x" << cols << " at " << i << "," << j;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100000);
}

}  // namespace
}  // namespace mmtune
