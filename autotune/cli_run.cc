// `mmtune run` evaluates one operator on .npy files; `mmtune ops` lists the operators.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autotune/cli.h"
#include "autotune/cli_parse.h"
#include "autotune/halide_ops.h"
#include "autotune/npy.h"
#include "mmtune/mmtune.h"
#include "reference/registry.h"
#include "schedules/schedule.h"

namespace mmtune::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string op;
  std::string impl = "reference";
  std::string params;           // --impl halide: a schedule JSON file
  std::string target = "host";  // --impl halide: the Halide target to compile for
  std::vector<std::string> inputs;
  std::string input_dir;
  std::vector<std::string> attrs;
  std::string output;
  bool print = false;
};

NamedTensors load_inputs(const RunOptions& o) {
  NamedTensors inputs;
  auto add = [&](const std::string& name, const std::string& path, std::optional<DType> as) {
    if (inputs.count(name)) invalid("mmtune run", "input ", name, " is given twice");
    inputs.emplace(name, read_npy(path, as));
  };
  if (!o.input_dir.empty()) {
    // DIR/NAME.npy is input NAME; DIR/NAME.DTYPE.npy is input NAME read as DTYPE.
    if (std::error_code ec; !fs::is_directory(o.input_dir, ec)) {
      invalid("mmtune run", "--input-dir ", o.input_dir, " is not a folder");
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(o.input_dir)) {
      if (e.path().extension() == ".npy") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      std::string stem = p.stem().string();
      std::optional<DType> as;
      const auto dot = stem.rfind('.');
      if (dot != std::string::npos) {
        as = dtype_from_name(stem.substr(dot + 1));
        if (!as) {
          invalid("mmtune run", p.string(), ": '", stem.substr(dot + 1),
                  "' is not a dtype; name files NAME.npy or NAME.DTYPE.npy");
        }
        stem = stem.substr(0, dot);
      }
      add(stem, p.string(), as);
    }
  }
  for (const std::string& spec : o.inputs) {
    std::string name, path;
    std::optional<DType> as;
    parse_input(spec, name, path, as);
    add(name, path, as);
  }
  return inputs;
}

// Values as numpy prints them, nested by dimension.
void print_values(std::ostream& os, const Tensor& t) {
  const int64_t n = t.numel();
  auto value = [&](int64_t i) {
    std::ostringstream v;
    v.precision(9);
    if (is_integer(t.dtype)) {
      if (t.dtype == DType::kUInt64) {
        v << t.data<uint64_t>()[i];
      } else {
        v << int_at(t, i);
      }
    } else {
      v << float_at(t, i);
    }
    return v.str();
  };
  if (t.rank() == 0) {
    os << value(0) << "\n";
    return;
  }
  std::vector<int64_t> inner(t.shape.size(), 1);
  for (std::size_t d = t.shape.size() - 1; d-- > 0;) inner[d] = inner[d + 1] * t.shape[d + 1];
  for (int64_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (i % (inner[d] * t.shape[d]) == 0) os << "[";
    }
    os << value(i);
    int closed = 0;
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      if ((i + 1) % (inner[d] * t.shape[d]) == 0) {
        os << "]";
        ++closed;
      }
    }
    if (i + 1 < n) os << (closed ? ",\n" : ", ");
  }
  if (n == 0) os << std::string(t.shape.size(), '[') << std::string(t.shape.size(), ']');
  os << "\n";
}

// --impl halide: the schedule from --params, else the defaults of the host's template for the
// kernel's sum (shrunk where they do not fit this host's registers, as the variant suites do).
HalideVariant halide_variant(const RunOptions& o) {
  HalideVariant v;
  v.target = o.target;
  if (!o.params.empty()) {
    std::ifstream in(o.params);
    if (!in) invalid("mmtune run", "--params ", o.params, " cannot be read");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      invalid("mmtune run", "--params ", o.params, " is not JSON: ", e.what());
    }
    v.schedule = j.get<schedules::Schedule>();
  }
  return v;
}

int run(const RunOptions& o) {
  const OpSpec& op = find_operator(o.op);
  if (o.impl != "reference" && o.impl != "halide" && o.impl != "runtime") {
    invalid("mmtune run", "--impl ", o.impl,
            " is not an implementation; implementations: reference, halide, runtime");
  }
  if (o.target != "host" && o.impl != "halide") {
    invalid("mmtune run", "--target ", o.target, " applies to --impl halide only, not --impl ",
            o.impl);
  }
  if (!o.params.empty() && o.impl != "halide") {
    invalid("mmtune run", "--params ", o.params, " applies to --impl halide only, not --impl ",
            o.impl);
  }
  // Refuse before computing anything when the result could not be written.
  const fs::path out_dir = fs::path(o.output).parent_path();
  std::error_code ec;
  if (!out_dir.empty() && !fs::is_directory(out_dir, ec)) {
    invalid("mmtune run", "--output ", o.output, ": folder ", out_dir.string(), " does not exist");
  }
  if (fs::is_directory(o.output, ec)) invalid("mmtune run", "--output ", o.output, " is a folder");
  const NamedTensors inputs = load_inputs(o);
  const Attributes attrs = parse_attrs(o.attrs);
  Tensor y;
  std::string how;
  if (o.impl == "halide") {
    const HalideVariant v = halide_variant(o);
    y = run_halide(op.name, inputs, attrs, v);
    how = "JIT for " + resolve_target(o.target) + ", schedule " +
          (v.schedule ? nlohmann::json(*v.schedule).dump() : "defaults");
  } else if (o.impl == "runtime") {
    DispatchInfo info;
    y = runtime::run(op.name, inputs, attrs, &info);
    how = info.kernel + ": " + info.reason;
  } else {
    y = run_reference(op.name, inputs, attrs);
  }
  write_npy(o.output, y);
  std::cout << op.name << " (" << o.impl << "): wrote " << o.output << ": " << describe(y);
  if (!is_integer(y.dtype) && y.dtype != DType::kFloat32 && y.dtype != DType::kFloat64 &&
      y.dtype != DType::kFloat16) {
    std::cout << " (stored as " << npy_descr(y.dtype) << " bit patterns)";
  }
  std::cout << "\n";
  if (!how.empty()) std::cout << "  " << o.impl << ": " << how << "\n";
  if (o.print) print_values(std::cout, y);
  return kExitOk;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Evaluate one operator on NumPy .npy inputs");
  cmd->add_option("--op", o->op, "Operator: QLinearMatMul, Gemm, QGemm, QuantMatmulDequant")
      ->required();
  cmd->add_option("--impl", o->impl,
                  "Implementation: reference, halide (JIT of the generator), runtime (the linked "
                  "AOT kernels)")
      ->capture_default_str();
  cmd->add_option(
         "--target", o->target,
         "--impl halide: the Halide target to compile for (default host; one this CPU runs, "
         "e.g. x86-64-linux-sse41)")
      ->capture_default_str();
  cmd->add_option("--params", o->params,
                  "--impl halide: a schedule, JSON {\"template\": \"cpu_matmul\", knob: value, "
                  "...} (docs/naming.md)");
  cmd->add_option(
      "--input", o->inputs,
      "NAME=FILE.npy[:dtype] (dtype reinterprets stored bits, e.g. a=a.npy:float8e4m3fn)");
  cmd->add_option("--input-dir", o->input_dir, "Folder of NAME.npy / NAME.DTYPE.npy inputs");
  cmd->add_option("--attr", o->attrs, "Attribute KEY=VALUE (see `mmtune ops`)");
  cmd->add_option("--output", o->output, "Output .npy file (written atomically)")->required();
  cmd->add_flag("--print", o->print, "Print the output values");
  return [o] { return run(*o); };
}

std::function<int()> add_ops_command(CLI::App& app) {
  app.add_subcommand("ops", "List the operators with their inputs and attributes");
  return [] {
    for (const OpSpec& s : operator_specs()) {
      std::cout << s.name << " (alias " << s.alias << ")\n  inputs:";
      for (const InputSpec& i : s.inputs) std::cout << " " << i.name << (i.optional ? "?" : "");
      std::cout << "\n";
      for (const AttrSpec& a : s.attrs) {
        std::cout << "  --attr " << a.name << "=" << a.default_value << "  " << a.doc << "\n";
      }
    }
    return kExitOk;
  };
}

}  // namespace mmtune::cli
