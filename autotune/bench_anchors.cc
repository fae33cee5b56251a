// oneDNN's int8 matmul primitive and XNNPACK's quantized fully-connected operators as anchors of
// `mmtune bench`.
#include "autotune/bench_anchors.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "autotune/blas.h"
#include "reference/codecs.h"
#include "reference/error.h"
#include "reference/qlinear_matmul.h"
#include "reference/registry.h"

namespace mmtune::cli {
namespace {

using tune::OpCall;

std::string param(const KernelIdentity& id, const std::string& key) {
  auto it = id.params.find(key);
  return it == id.params.end() ? "" : it->second;
}

bool int8_type(const std::string& t) { return t == "int8" || t == "uint8"; }

// A one-element scale as float32.
float scale_value(const Tensor& t) {
  switch (t.dtype) {
    case DType::kFloat16:
      return float16_to_float(t.data<uint16_t>()[0]);
    case DType::kBFloat16:
      return bfloat16_to_float(t.data<uint16_t>()[0]);
    default:
      return t.data<float>()[0];
  }
}

bool is_signed(const Tensor& t) { return t.dtype == DType::kInt8; }

// Element i of an 8-bit tensor's bytes, as its type's value.
int32_t value(const uint8_t* bytes, bool signed_type, std::size_t i) {
  return signed_type ? int32_t{static_cast<int8_t>(bytes[i])} : int32_t{bytes[i]};
}

// Zero point z of a `from_signed` tensor in the library's type (the top bit flipped).
int32_t in_type(int32_t z, bool from_signed, bool to_signed) {
  if (from_signed == to_signed) return z;
  return to_signed ? z - 128 : z + 128;
}

std::vector<uint8_t> flipped(const uint8_t* bytes, std::size_t count) {
  std::vector<uint8_t> v(bytes, bytes + count);
  for (uint8_t& x : v) x ^= 0x80;
  return v;
}

const char* type_name(bool signed_type) { return signed_type ? "int8" : "uint8"; }

// The bench's call read once: shape, per-tensor scales and zero points, the types.
struct Call {
  int64_t m = 0, n = 0, k = 0;
  bool a_signed = false, b_signed = false, y_signed = false;
  int32_t a_zero = 0, b_zero = 0, y_zero = 0;
  float a_scale = 1, b_scale = 1, y_scale = 1, multiplier = 1;
};

Call read_call(const std::string& name, const OpCall& c) {
  const auto& in = c.inputs;
  const Tensor &a = in.at("a"), &b = in.at("b");
  for (const char* p :
       {"a_scale", "a_zero_point", "b_scale", "b_zero_point", "y_scale", "y_zero_point"}) {
    if (in.at(p).numel() != 1)
      invalid("bench", "--impl ", name, ": per-tensor scales and zero points only (", p, ")");
  }
  if (a.rank() != 2 || b.rank() != 2) invalid("bench", "--impl ", name, ": 2-D a and b only");
  Call r;
  r.m = a.shape[0];
  r.k = a.shape[1];
  r.n = b.shape[1];
  r.a_signed = is_signed(a);
  r.b_signed = is_signed(b);
  r.y_signed = is_signed(in.at("y_zero_point"));
  r.a_zero = value(in.at("a_zero_point").bytes.data(), r.a_signed, 0);
  r.b_zero = value(in.at("b_zero_point").bytes.data(), r.b_signed, 0);
  r.y_zero = value(in.at("y_zero_point").bytes.data(), r.y_signed, 0);
  r.a_scale = scale_value(in.at("a_scale"));
  r.b_scale = scale_value(in.at("b_scale"));
  r.y_scale = scale_value(in.at("y_scale"));
  r.multiplier = qlinear_multiplier(in.at("a_scale").dtype, r.a_scale, r.b_scale, r.y_scale);
  return r;
}

// Every copy's a and b in the library's types: the copies' own bytes, or flipped copies of them
// (kept as long as the library reads them).
struct Operands {
  std::vector<std::vector<uint8_t>> a, b;
  std::vector<const void*> a_ptr, b_ptr;
};

std::shared_ptr<Operands> operands(const std::vector<OpCall>& copies, bool flip_a, bool flip_b) {
  auto o = std::make_shared<Operands>();
  for (const OpCall& c : copies) {
    const Tensor &a = c.inputs.at("a"), &b = c.inputs.at("b");
    if (flip_a) o->a.push_back(flipped(a.bytes.data(), a.bytes.size()));
    if (flip_b) o->b.push_back(flipped(b.bytes.data(), b.bytes.size()));
    o->a_ptr.push_back(flip_a ? o->a.back().data() : a.bytes.data());
    o->b_ptr.push_back(flip_b ? o->b.back().data() : b.bytes.data());
  }
  return o;
}

// The library's output of copy 0 against the reference's (run again with weights zero point
// `b_zero`, in b's type, where that is not the bench's): "W of T outputs differ ...".
std::string compare(const OpCall& c0, const Call& call, int32_t b_zero, const Tensor& want,
                    const void* y, bool y_flipped, int64_t* wrong) {
  Tensor other;
  const Tensor* ref = &want;
  if (b_zero != call.b_zero) {
    NamedTensors inputs = c0.inputs;
    inputs.at("b_zero_point").bytes[0] = static_cast<uint8_t>(b_zero);
    other = run_reference(c0.op, inputs, c0.attrs);
    ref = &other;
  }
  const auto count = static_cast<std::size_t>(call.m * call.n);
  MMTUNE_CHECK(ref->bytes.size() == count, "bench: the reference's output has "
                                               << ref->bytes.size() << " bytes, not " << count);
  const auto* got = static_cast<const uint8_t*>(y);
  int64_t differ = 0;
  int32_t most = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const uint8_t g = y_flipped ? got[i] ^ 0x80 : got[i];
    if (g == ref->bytes[i]) continue;
    ++differ;
    most = std::max(
        most, std::abs(value(&g, call.y_signed, 0) - value(ref->bytes.data(), call.y_signed, i)));
  }
  *wrong = differ;
  std::ostringstream os;
  os << differ << " of " << count << " outputs differ from the reference's";
  if (b_zero != call.b_zero) os << " run with b_zero_point " << b_zero;
  if (differ > 0) os << " (by at most " << most << ")";
  return os.str();
}

// What flipping the operands for the library's types costs, as the note says it.
std::string flips(const Call& c, bool flip_a, bool flip_b, bool flip_y) {
  std::ostringstream os;
  if (flip_b) {
    os << "b flipped to " << type_name(!c.b_signed)
       << " (x ^ 0x80, zero point too) before packing, once; ";
  }
  if (flip_a) {
    os << "a flipped to " << type_name(!c.a_signed)
       << " once per input copy outside the timed call (a caller pays that M*K pass each call); ";
  }
  if (flip_y) {
    os << "y computed as " << type_name(!c.y_signed)
       << " and flipped back for the comparison only; ";
  }
  return os.str();
}

// The anchor of `lib` (its pairs set up, the thread count too): run once on copy 0 and compared
// with the reference's output; its note is `what` (how the library is called) then the comparison,
// and where its weights zero point `b_zero` (in b's type) is not the bench's, that it is not the
// same operation, `why`.
template <class Lib>
Int8Anchor anchor(const std::shared_ptr<Lib>& lib, const std::shared_ptr<Operands>& ops,
                  const OpCall& c0, const Call& c, const Tensor& want, int32_t b_zero,
                  bool y_flipped, const std::string& what, const std::string& why) {
  Int8Anchor r;
  lib->run(0);
  r.note = what + compare(c0, c, b_zero, want, lib->y(), y_flipped, &r.wrong);
  if (b_zero != c.b_zero) {
    r.not_same = "b_zero_point " + std::to_string(b_zero) + ", not the bench's " +
                 std::to_string(c.b_zero) + " (" + why + ")";
    r.note += "; not the same operation: " + r.not_same;
  }
  r.call = [lib, ops](std::size_t ci) { lib->run(ci); };
  r.set_threads = [lib](int t) { lib->set_threads(t); };
  return r;
}

Int8Anchor onednn_matmul(const std::vector<OpCall>& copies, const Call& c, const Tensor& want) {
  // oneDNN's weights are s8; a and y keep their types.
  const bool flip_b = !c.b_signed;
  const std::shared_ptr<Operands> ops = operands(copies, false, flip_b);
  blas::OnednnInt8Matmul::Params p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.a_signed = c.a_signed;
  p.y_signed = c.y_signed;
  p.a_zero = c.a_zero;
  p.b_zero = in_type(c.b_zero, c.b_signed, true);
  p.y_zero = c.y_zero;
  p.scale = c.multiplier;
  auto lib = std::make_shared<blas::OnednnInt8Matmul>(p);
  for (std::size_t i = 0; i < copies.size(); ++i)
    lib->add(ops->a_ptr[i], static_cast<const int8_t*>(ops->b_ptr[i]));
  const int32_t b_zero = in_type(lib->b_zero(), true, c.b_signed);
  std::ostringstream what;
  what << "oneDNN's matmul primitive " << type_name(c.a_signed) << " x s8 -> "
       << type_name(c.y_signed) << " (" << lib->impl_info()
       << "): weights described with format_tag::any and reordered once per input copy into its "
          "layout; output scale a_scale*b_scale/y_scale = "
       << c.multiplier << " and the zero points of a, b and y as attributes, fixed at creation; "
       << flips(c, false, flip_b, false)
       << "requantized by oneDNN (float32 scale, round to nearest even); timed: execute alone "
          "(primitive, reorders and memory objects made once per thread count; one untimed call "
          "before each sample wakes OpenMP's workers); ";
  Int8Anchor r = anchor(
      lib, ops, copies[0], c, want, b_zero, false, what.str(),
      "oneDNN refused " + std::to_string(c.b_zero) + " as the weights zero point on this CPU");
  r.kernel = blas::onednn_info() + "; matmul " + lib->impl_info();
  // OpenMP's workers sleep once they have spun for a while: one call untimed wakes them.
  r.around = [lib](bool before) {
    if (before) lib->run(0);
  };
  return r;
}

Int8Anchor xnnpack(const std::vector<OpCall>& copies, const Call& c, const Tensor& want, bool qs8) {
  const bool flip_a = c.a_signed != qs8, flip_b = c.b_signed != qs8, flip_y = c.y_signed != qs8;
  const std::shared_ptr<Operands> ops = operands(copies, flip_a, flip_b);
  blas::XnnpackFullyConnected::Params p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.qs8 = qs8;
  p.a_zero = in_type(c.a_zero, c.a_signed, qs8);
  // qs8's weights are symmetric: zero point 0 in int8.
  p.b_zero = qs8 ? 0 : in_type(c.b_zero, c.b_signed, false);
  p.y_zero = in_type(c.y_zero, c.y_signed, qs8);
  p.a_scale = c.a_scale;
  p.b_scale = c.b_scale;
  p.y_scale = c.y_scale;
  auto lib = std::make_shared<blas::XnnpackFullyConnected>(p);
  for (std::size_t i = 0; i < copies.size(); ++i) lib->add(ops->a_ptr[i], ops->b_ptr[i]);
  const int32_t b_zero = in_type(p.b_zero, qs8, c.b_signed);
  lib->set_threads(1);
  const char* fn = qs8 ? "xnn_create_fully_connected_nc_qs8" : "xnn_create_fully_connected_nc_qu8";
  std::ostringstream what;
  what << "XNNPACK's " << (qs8 ? "qs8" : "qu8") << " fully-connected operator (" << fn
       << "): b transposed to (N,K) and packed when the operator is made, one per input copy; "
       << flips(c, flip_a, flip_b, flip_y)
       << "scales a_scale, b_scale, y_scale given to XNNPACK, which requantizes in its own way; "
          "timed: xnn_run_operator alone (set up once per input copy and thread count on a "
          "pthreadpool of the bench's threads, its workers woken before and sent to sleep after "
          "each sample, untimed); ";
  Int8Anchor r = anchor(lib, ops, copies[0], c, want, b_zero, flip_y, what.str(),
                        "qs8's weights are symmetric");
  r.kernel = blas::xnnpack_info() + "; " + fn;
  r.around = [lib](bool before) { lib->wake(before); };
  return r;
}

}  // namespace

std::vector<std::string> int8_anchors(const KernelIdentity& id) {
  if (id.op != "QLinearMatMul") return {};
  for (const char* x : {"a", "b", "y"}) {
    const std::string p(x);
    if (!int8_type(param(id, p + ".type")) || !param(id, p + "_format").empty()) return {};
  }
  return {"onednn_matmul", "xnnpack_qu8", "xnnpack_qs8"};
}

Int8Anchor prepare_int8_anchor(const std::string& name, const std::vector<OpCall>& copies,
                               const Tensor& want) {
  const Call c = read_call(name, copies.at(0));
  if (name == "onednn_matmul") return onednn_matmul(copies, c, want);
  MMTUNE_CHECK(name == "xnnpack_qu8" || name == "xnnpack_qs8", "bench: no 8-bit anchor " << name);
  return xnnpack(copies, c, want, name == "xnnpack_qs8");
}

}  // namespace mmtune::cli
