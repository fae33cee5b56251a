// libFuzzer target: the command line's text formats. The input is lines: `--input` specs
// (NAME=FILE.npy[:dtype]) until an empty line, then `--attr` specs (KEY=VALUE), which are parsed
// and then read by every operator's attribute parser (registry). Every input is accepted or refused
// with InvalidArgument; never a crash, hang or abort.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "autotune/cli_parse.h"
#include "reference/error.h"
#include "reference/registry.h"

namespace {

// One valid input of each name an operator takes (its required and optional ones): the attribute
// parsers run after the names are checked.
mmtune::NamedTensors inputs_of(const mmtune::OpSpec& op) {
  mmtune::NamedTensors in;
  for (const mmtune::InputSpec& i : op.inputs)
    in.emplace(i.name, mmtune::Tensor(mmtune::DType::kFloat32, {1}));
  return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> inputs, attrs;
  bool in_attrs = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      const std::string line = text.substr(start, i - start);
      if (line.empty()) {
        in_attrs = true;
      } else {
        (in_attrs ? attrs : inputs).push_back(line);
      }
      start = i + 1;
    }
  }
  for (const std::string& spec : inputs) {
    std::string name, path;
    std::optional<mmtune::DType> as;
    try {
      mmtune::cli::parse_input(spec, name, path, as);
      if (name.empty() || spec.find('=') == std::string::npos) __builtin_trap();
    } catch (const mmtune::InvalidArgument&) {
    }
  }
  mmtune::Attributes parsed;
  try {
    parsed = mmtune::cli::parse_attrs(attrs);
  } catch (const mmtune::InvalidArgument&) {
    return 0;
  }
  for (const mmtune::OpSpec& op : mmtune::operator_specs()) {
    const mmtune::NamedTensors in = inputs_of(op);
    try {
      if (op.name == "Gemm") mmtune::gemm_args(in, parsed);
      if (op.name == "QLinearMatMul") mmtune::qlinear_matmul_args(in, parsed);
      if (op.name == "QGemm") mmtune::qgemm_args(in, parsed);
      if (op.name == "QuantMatmulDequant") mmtune::quant_matmul_dequant_args(in, parsed);
    } catch (const mmtune::InvalidArgument&) {
    }
  }
  return 0;
}
