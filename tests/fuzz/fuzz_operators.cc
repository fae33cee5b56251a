// libFuzzer target: each operator's validation and evaluation on fuzzer-chosen inputs. The bytes
// pick the operator, each input's presence, dtype, rank (0..4) and dims (0..6), the attributes
// (from valid and invalid spellings) and the data. The reference must either refuse the call with
// InvalidArgument or compute it; mmtune::runtime must then refuse it with the same sentence, or
// give the same bits. Never a crash, hang, abort or an output beyond the (lowered) output limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mmtune/mmtune.h"
#include "reference/validate.h"

namespace {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  // The rest of the input, cycled, as tensor data.
  template <class Storage>
  void fill(Storage& out) {
    const size_t rest = size_ > pos_ ? size_ - pos_ : 0;
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = rest ? data_[pos_ + i % rest] : static_cast<uint8_t>(i * 37);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

const std::vector<std::string> kAttributeValues = {
    "0",        "1",         "2",      "-1",  "1.5",     "0.75",    "nan", "inf",
    "-0",       "1e40",      "strict", "fma", "float32", "float64", "10",  "21",
    "pertoken", "pertensor", "",       "x",   "3",       "0x10"};

bool same_bits(const mmtune::Tensor& a, const mmtune::Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool limited = [] {
    mmtune::set_max_output_bytes(int64_t{1} << 22);
    return true;
  }();
  (void)limited;
  Bytes in(data, size);
  const auto& specs = mmtune::operator_specs();
  const mmtune::OpSpec& op = specs[in.next() % specs.size()];
  mmtune::NamedTensors inputs;
  for (const mmtune::InputSpec& spec : op.inputs) {
    const uint8_t presence = in.next();
    if (spec.optional && presence % 2 == 0) continue;
    const auto dtype = static_cast<mmtune::DType>(in.next() % 16);
    mmtune::Shape shape(in.next() % 5);
    for (int64_t& d : shape) d = in.next() % 7;
    mmtune::Tensor t(dtype, shape);
    in.fill(t.bytes);
    inputs.emplace(spec.name, std::move(t));
  }
  mmtune::Attributes attrs;
  for (const mmtune::AttrSpec& a : op.attrs) {
    const uint8_t pick = in.next();
    if (pick % 3 == 0) continue;  // the default
    attrs[a.name] = kAttributeValues[pick % kAttributeValues.size()];
  }
  std::string refused;
  mmtune::Tensor expected;
  try {
    expected = mmtune::run_reference(op.name, inputs, attrs);
  } catch (const mmtune::InvalidArgument& e) {
    refused = e.what();
  }
  try {
    const mmtune::Tensor actual = mmtune::runtime::run(op.name, inputs, attrs);
    if (!refused.empty() || !same_bits(expected, actual)) __builtin_trap();
  } catch (const mmtune::InvalidArgument& e) {
    if (refused != e.what()) __builtin_trap();
  }
  return 0;
}
