// `mmtune bench`: the call users make (the runtime's typed entry points over the kernels linked
// into this build) timed in this process against what computes the same thing: the same schedule
// through the JIT, OpenBLAS / oneDNN where they compute the identity, and for the 8-bit
// QLinearMatMul oneDNN's int8 matmul primitive and XNNPACK's quantized fully-connected operators
// (autotune/bench_anchors.h). Every implementation is run once and checked before it is timed;
// all of one shape are timed interleaved with the tuner's protocol (autotune/tune_timing.h: inputs
// rotated through more than the last-level cache, samples until the median is stable).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "Halide.h"
#include "autotune/bench_anchors.h"
#include "autotune/blas.h"
#include "autotune/cli.h"
#include "autotune/halide_ops.h"
#include "autotune/kernel_key.h"
#include "autotune/shape_list.h"
#include "autotune/tune_baselines.h"
#include "autotune/tune_inputs.h"
#include "autotune/tune_timing.h"
#include "mmtune/mmtune.h"
#include "reference/error.h"
#include "reference/registry.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_identity.h"
#include "runtime/src/dispatch.h"
#include "runtime/src/kernel_call.h"
#include "schedules/schedule.h"

namespace mmtune::cli {
namespace {

using tune::OpCall;

// The implementations `--impl` names, in the order they are listed.
const std::vector<std::string> kImpls = {"runtime",     "prepacked",  "prepared", "kernel",
                                         "halide",      "openblas",   "onednn",   "onednn_matmul",
                                         "xnnpack_qu8", "xnnpack_qs8"};
// Those of them that are other libraries, each computing only some identities.
const std::vector<std::string> kLibraries = {"openblas", "onednn", "onednn_matmul", "xnnpack_qu8",
                                             "xnnpack_qs8"};

bool is_library(const std::string& name) {
  return std::find(kLibraries.begin(), kLibraries.end(), name) != kLibraries.end();
}

// The libraries that compute `id`: the tuner's BLAS baselines and the 8-bit anchors.
std::vector<std::string> libraries_of(const KernelIdentity& id) {
  std::vector<std::string> r = tune::blas_baselines(id);
  for (const std::string& a : int8_anchors(id)) r.push_back(a);
  return r;
}

// One implementation set up on one shape's input copies.
struct Impl {
  std::string name;
  std::string kernel;    // what ran: the kernel's name, "reference", or the library's build
  std::string note;      // what was checked, and how it differs from the operator where it does
  std::string not_same;  // empty when it computes the bench's operation; else what it computes
  int64_t wrong = 0;     // outputs that differ from the reference's (a library's, counted)
  std::function<void(std::size_t)> call;
  std::function<void(int)> set_threads;  // state of its own for a thread count (or none)
  std::function<void(bool)> around;      // untimed, before (true) and after each of its samples
};

// The runtime's typed entry point for `c` (arguments parsed once, outside the timed calls).
std::function<Tensor(DispatchInfo*)> typed_runtime_call(const OpCall& c) {
  const std::string op = find_operator(c.op).name;
  if (op == "Gemm") {
    auto args = std::make_shared<GemmArgs>(gemm_args(c.inputs, c.attrs));
    return [args](DispatchInfo* info) { return runtime::gemm(*args, info); };
  }
  if (op == "QLinearMatMul") {
    auto args = std::make_shared<QLinearMatMulArgs>(qlinear_matmul_args(c.inputs, c.attrs));
    return [args](DispatchInfo* info) { return runtime::qlinear_matmul(*args, info); };
  }
  if (op == "QGemm") {
    auto args = std::make_shared<QGemmArgs>(qgemm_args(c.inputs, c.attrs));
    return [args](DispatchInfo* info) { return runtime::qgemm(*args, info); };
  }
  MMTUNE_CHECK(op == "QuantMatmulDequant", op);
  auto args =
      std::make_shared<QuantMatmulDequantArgs>(quant_matmul_dequant_args(c.inputs, c.attrs));
  return [args](DispatchInfo* info) { return runtime::quant_matmul_dequant(*args, info); };
}

// The runtime's call with B prepacked (prepack_b, once per input copy, outside the timed calls):
// Gemm, QGemm, QuantMatmulDequant and QLinearMatMul with a 2-D b; nullptr for others.
std::function<Tensor(DispatchInfo*)> prepacked_runtime_call(const OpCall& c) {
  const std::string op = find_operator(c.op).name;
  if (op == "Gemm") {
    auto args = std::make_shared<GemmArgs>(gemm_args(c.inputs, c.attrs));
    auto pb = std::make_shared<runtime::PackedB>(runtime::prepack_b(*args));
    return [args, pb](DispatchInfo* info) { return runtime::gemm(*args, *pb, info); };
  }
  if (op == "QLinearMatMul") {
    auto args = std::make_shared<QLinearMatMulArgs>(qlinear_matmul_args(c.inputs, c.attrs));
    if (args->b->rank() != 2) return nullptr;
    auto pb = std::make_shared<runtime::PackedB>(runtime::prepack_b(*args));
    return [args, pb](DispatchInfo* info) { return runtime::qlinear_matmul(*args, *pb, info); };
  }
  if (op == "QGemm") {
    auto args = std::make_shared<QGemmArgs>(qgemm_args(c.inputs, c.attrs));
    auto pb = std::make_shared<runtime::PackedB>(runtime::prepack_b(*args));
    return [args, pb](DispatchInfo* info) { return runtime::qgemm(*args, *pb, info); };
  }
  if (op == "QuantMatmulDequant") {
    auto args =
        std::make_shared<QuantMatmulDequantArgs>(quant_matmul_dequant_args(c.inputs, c.attrs));
    auto pb = std::make_shared<runtime::PackedB>(runtime::prepack_b(*args));
    return
        [args, pb](DispatchInfo* info) { return runtime::quant_matmul_dequant(*args, *pb, info); };
  }
  return nullptr;
}

// Throws InternalError when `got` is not the reference's result bit for bit.
void check_exact(const std::string& impl, const Tensor& want, const Tensor& got) {
  if (got.dtype == want.dtype && got.shape == want.shape && got.bytes == want.bytes) return;
  std::size_t at = 0;
  while (at < want.bytes.size() && at < got.bytes.size() && want.bytes[at] == got.bytes[at]) ++at;
  MMTUNE_CHECK(false, "mmtune bench: the " << impl << " result differs from the reference's (first "
                                           << "at byte " << at << " of " << want.bytes.size()
                                           << "): not timed");
}

// A prepared call of A, B, optional C (Gemm, QGemm): `prepare` with B prepacked, run once into
// `out` and checked against `want`; the run.
template <class Args, class Prepare>
std::function<void()> prepared_with_c(Args call_args, Prepare prepare, const Tensor& want,
                                      const std::shared_ptr<Tensor>& out, DispatchInfo* info) {
  auto args = std::make_shared<Args>(std::move(call_args));
  const runtime::PackedB pb = runtime::prepack_b(*args);
  using Prepared = decltype(prepare(*args, &pb));
  auto prepared = std::make_shared<Prepared>(prepare(*args, &pb));
  *info = prepared->info();
  auto run = [args, prepared, out] {
    prepared->run(args->a->bytes.data(), args->b->bytes.data(),
                  args->c ? args->c->bytes.data() : nullptr, out->bytes.data());
  };
  run();
  check_exact("prepared", want, *out);
  return run;
}

// A prepared call of two operands (QLinearMatMul's a and b, QuantMatmulDequant's x and weight):
// `prepare` with the second prepacked, run once into `out` and checked against `want`; the run.
template <class Args, class Prepare>
std::function<void()> prepared_without_c(const std::shared_ptr<Args>& args, const Tensor* first,
                                         const Tensor* second, Prepare prepare, const Tensor& want,
                                         const std::shared_ptr<Tensor>& out, DispatchInfo* info) {
  const runtime::PackedB pb = runtime::prepack_b(*args);
  using Prepared = decltype(prepare(*args, &pb));
  auto prepared = std::make_shared<Prepared>(prepare(*args, &pb));
  *info = prepared->info();
  auto run = [args, prepared, first, second, out] {
    prepared->run(first->bytes.data(), second->bytes.data(), out->bytes.data());
  };
  run();
  check_exact("prepared", want, *out);
  return run;
}

// The prepared call (prepare_gemm / prepare_qlinear_matmul / prepare_qgemm /
// prepare_quant_matmul_dequant with B prepacked, once
// per input copy) running into an output made once: what a framework's inference step pays. Checked
// against `want` bit for bit; nullptr for other operators or a batched QLinearMatMul.
std::function<void()> prepared_runtime_call(const OpCall& c, const Tensor& want,
                                            DispatchInfo* info) {
  const std::string op = find_operator(c.op).name;
  auto out = std::make_shared<Tensor>(want.dtype, want.shape);
  if (op == "Gemm") {
    return prepared_with_c(
        gemm_args(c.inputs, c.attrs),
        [](const GemmArgs& a, const runtime::PackedB* pb) { return runtime::prepare_gemm(a, pb); },
        want, out, info);
  }
  if (op == "QLinearMatMul") {
    auto args = std::make_shared<QLinearMatMulArgs>(qlinear_matmul_args(c.inputs, c.attrs));
    if (args->a->rank() != 2 || args->b->rank() != 2) return nullptr;
    return prepared_without_c(
        args, args->a, args->b,
        [](const QLinearMatMulArgs& a, const runtime::PackedB* pb) {
          return runtime::prepare_qlinear_matmul(a, pb);
        },
        want, out, info);
  }
  if (op == "QuantMatmulDequant") {
    auto args =
        std::make_shared<QuantMatmulDequantArgs>(quant_matmul_dequant_args(c.inputs, c.attrs));
    return prepared_without_c(
        args, args->x, args->weight,
        [](const QuantMatmulDequantArgs& a, const runtime::PackedB* pb) {
          return runtime::prepare_quant_matmul_dequant(a, pb);
        },
        want, out, info);
  }
  if (op == "QGemm") {
    return prepared_with_c(
        qgemm_args(c.inputs, c.attrs),
        [](const QGemmArgs& a, const runtime::PackedB* pb) {
          return runtime::prepare_qgemm(a, pb);
        },
        want, out, info);
  }
  return nullptr;
}

// The AOT kernel the runtime dispatches a float32.. Gemm call to, called directly on Halide buffers
// made once and a preallocated output (canonical calls: no transposes). The kernel alone, so the
// runtime's time minus this one is the call's cost outside the kernel. Checked bit for bit first;
// the timed calls pass no error context (the same buffers just ran without error).
Impl bare_gemm_kernel(const std::vector<OpCall>& copies, const NamedShape& s, const Tensor& want) {
  struct Prepared {
    GemmArgs args;
    Tensor zero_c, y;
    Halide::Runtime::Buffer<void> a, b, c, y_view;
  };
  auto prepared = std::make_shared<std::vector<std::unique_ptr<Prepared>>>();
  const runtime::KernelEntry* kernel = nullptr;
  for (const OpCall& call : copies) {
    auto p = std::make_unique<Prepared>();
    p->args = gemm_args(call.inputs, call.attrs);
    if (p->args.trans_a || p->args.trans_b)
      invalid("bench", "--impl kernel: Gemm with transA/transB (the runtime transposes first)");
    const DType t = p->args.a->dtype;
    if (!p->args.c) {
      p->zero_c = gemm_absent_c(t, s.n);
      p->args.c = &p->zero_c;
      p->args.beta = 0.0f;
    }
    if (!kernel) {  // every copy has the same identity and shape
      const runtime::Selection sel =
          runtime::select_linked("Gemm", gemm_identity(p->args).params, s.m, s.n, s.k);
      if (!sel.kernel) invalid("bench", "--impl kernel: ", sel.reason);
      kernel = sel.kernel;
    }
    p->y = Tensor(t, {s.m, s.n});
    p->a = view(*p->args.a, p->args.a->shape);
    p->b = view(*p->args.b, p->args.b->shape);
    p->c = view(*p->args.c, {s.m, s.n});
    p->y_view = view(p->y, p->y.shape);
    prepared->push_back(std::move(p));
  }
  const auto fn = reinterpret_cast<runtime::GemmKernelFn>(kernel->fn);
  {
    Prepared& p = *prepared->front();
    runtime::KernelCall call(*kernel);
    call.check(fn(call.user_context(), p.a.raw_buffer(), p.b.raw_buffer(), p.c.raw_buffer(),
                  p.args.alpha, p.args.beta, p.y_view.raw_buffer()));
    check_exact("kernel", want, p.y);
  }
  Impl impl;
  impl.name = "kernel";
  impl.kernel = std::string(kernel->name) + " (called directly)";
  impl.note = "bit-exact with the reference; the runtime's kernel on buffers made once";
  impl.call = [prepared, fn](std::size_t ci) {
    Prepared& p = *(*prepared)[ci];
    fn(nullptr, p.a.raw_buffer(), p.b.raw_buffer(), p.c.raw_buffer(), p.args.alpha, p.args.beta,
       p.y_view.raw_buffer());
  };
  return impl;
}

// The implementations of `names` set up on `copies` (checked against the reference on copy 0).
// With `halide_if_kernel`, the JIT is left out (not refused) where the runtime has no kernel to
// take the schedule from.
std::vector<Impl> make_impls(const std::vector<std::string>& names, const KernelIdentity& id,
                             const std::string& spec, const std::vector<OpCall>& copies,
                             const NamedShape& s, bool halide_if_kernel, const Tensor& want) {
  const OpCall& c0 = copies[0];
  std::vector<Impl> impls;
  // Which kernel the runtime runs for the call (once; `kernel` and `halide` need it too).
  DispatchInfo dispatched;
  auto dispatch = [&] {
    if (dispatched.kernel.empty()) typed_runtime_call(c0)(&dispatched);
  };
  for (const std::string& name : names) {
    Impl impl;
    impl.name = name;
    if (name == "runtime") {
      std::vector<std::function<Tensor(DispatchInfo*)>> calls;
      for (const OpCall& c : copies) calls.push_back(typed_runtime_call(c));
      check_exact(name, want, calls[0](&dispatched));
      impl.kernel = dispatched.kernel;
      impl.note = "bit-exact with the reference; " + dispatched.reason;
      impl.call = [calls](std::size_t ci) { calls[ci](nullptr); };
    } else if (name == "prepacked") {
      std::vector<std::function<Tensor(DispatchInfo*)>> calls;
      for (const OpCall& c : copies) calls.push_back(prepacked_runtime_call(c));
      if (!calls[0]) {
        if (halide_if_kernel) continue;
        invalid("bench",
                "--impl prepacked: Gemm, QGemm, QuantMatmulDequant and QLinearMatMul with a 2-D b "
                "only (",
                spec, ")");
      }
      DispatchInfo info;
      check_exact(name, want, calls[0](&info));
      impl.kernel = info.kernel;
      impl.note = "bit-exact with the reference; B prepacked once (prepack_b); " + info.reason;
      impl.call = [calls](std::size_t ci) { calls[ci](nullptr); };
    } else if (name == "prepared") {
      std::vector<std::function<void()>> runs;
      DispatchInfo info;
      for (const OpCall& c : copies) runs.push_back(prepared_runtime_call(c, want, &info));
      if (!runs[0]) {
        if (halide_if_kernel) continue;
        invalid("bench",
                "--impl prepared: Gemm, QGemm, QuantMatmulDequant and QLinearMatMul with 2-D "
                "operands only (",
                spec, ")");
      }
      impl.kernel = info.kernel;
      impl.note =
          "bit-exact with the reference; prepared once (prepare_gemm / "
          "prepare_qlinear_matmul / prepare_qgemm / prepare_quant_matmul_dequant, B prepacked), "
          "run into an output made once; " +
          info.reason;
      impl.call = [runs](std::size_t ci) { runs[ci](); };
    } else if (name == "kernel") {
      dispatch();
      const bool gemm = find_operator(c0.op).name == "Gemm";
      if (halide_if_kernel && (!gemm || dispatched.kernel == "reference")) continue;
      if (!gemm) invalid("bench", "--impl kernel: Gemm only so far (", spec, ")");
      impl = bare_gemm_kernel(copies, s, want);
    } else if (name == "halide") {
      dispatch();
      const std::vector<runtime::KernelInfo> infos = runtime::linked_kernel_infos();
      auto it = std::find_if(infos.begin(), infos.end(), [&](const runtime::KernelInfo& k) {
        return k.name == dispatched.kernel;
      });
      if (it == infos.end()) {
        if (halide_if_kernel) continue;
        invalid("bench", "--impl halide: the runtime has no kernel for ", spec, " at ", s.m, "x",
                s.n, "x", s.k, " (", dispatched.reason, "), so there is no schedule to JIT");
      }
      HalideVariant v;
      v.schedule = schedules::Schedule::from_generator_params(it->schedule);
      v.target = it->target;
      check_exact(name, want, run_halide(c0.op, c0.inputs, c0.attrs, v));
      impl.kernel = it->name + " (JIT)";
      impl.note = "bit-exact with the reference; the runtime's schedule compiled in process";
      impl.call = [&copies, v](std::size_t ci) {
        run_halide(copies[ci].op, copies[ci].inputs, copies[ci].attrs, v);
      };
    } else if (name == "openblas" || name == "onednn") {
      tune::BlasCall b = tune::prepare_blas_call(name, id, copies, s.m, s.n, s.k);
      impl.kernel = name == "openblas" ? blas::openblas_info() : blas::onednn_info();
      impl.note = b.note;
      impl.wrong = b.wrong;
      if (id.op == "QLinearMatMul") impl.not_same = "the int32 sums alone, no requantization";
      impl.call = std::move(b.call);
      if (name == "openblas") {
        // Its workers would spin through the next implementation's sample (blas.h).
        impl.around = [](bool before) {
          if (!before) blas::openblas_end_workers();
        };
      }
    } else {
      Int8Anchor a = prepare_int8_anchor(name, copies, want);
      impl.kernel = a.kernel;
      impl.note = a.note;
      impl.not_same = a.not_same;
      impl.wrong = a.wrong;
      impl.call = std::move(a.call);
      impl.set_threads = std::move(a.set_threads);
      impl.around = std::move(a.around);
    }
    impls.push_back(std::move(impl));
  }
  return impls;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "bench", "Time the runtime's call against the libraries that compute the same thing");
  struct Opts {
    std::vector<std::string> ops, shape, impls{"all"};
    std::string shapes;
    std::vector<int> threads{1};
    double max_time = 2.0;
    uint64_t seed = 1;
    bool json = false;
    bool warm = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--op", o->ops, "kernel identity SPEC (repeatable)")->required();
  sub->add_option("--shape", o->shape, "M,N,K (repeatable)");
  sub->add_option("--shapes", o->shapes, "shape list file: `name M N K` a line");
  sub->add_option("--threads", o->threads, "thread counts, e.g. 1,2 (default 1)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  sub->add_option("--impl", o->impls,
                  "runtime, prepacked, prepared, kernel, halide, openblas, onednn, "
                  "onednn_matmul, xnnpack_qu8, xnnpack_qs8, or all (default; a comma list or "
                  "repeated)")
      ->delimiter(',');
  sub->add_option("--max-time", o->max_time,
                  "seconds of samples per implementation and shape at most (default 2)")
      ->check(CLI::Range(0.01, 3600.0));
  sub->add_option("--seed", o->seed, "seed of the input data");
  sub->add_flag("--warm", o->warm,
                "one copy of the inputs, called again and again: they stay in the caches (by "
                "default the calls rotate over copies of the inputs that fill twice the "
                "last-level cache, so that each call reads them from memory)");
  sub->add_flag("--json", o->json,
                "a JSON array of objects (impl, op, shape, threads, rate in operations per second, "
                "seconds per call, kernel, note, wrong, same_operation)");
  sub->footer(R"(
Times the call users make: the runtime's typed entry point (mmtune::runtime::gemm, ...), which
validates, dispatches to the ahead-of-time kernel linked into this build for the identity and
shape (or the reference where none may run) and allocates the output, in this process against
  prepacked the same call with B prepacked once (mmtune::runtime::prepack_b; Gemm, QGemm,
            QuantMatmulDequant's weight, QLinearMatMul with a 2-D b): the prepacked twin of the
            kernel, no packing per call
  prepared  the call prepared once (prepare_gemm / prepare_qlinear_matmul / prepare_qgemm /
            prepare_quant_matmul_dequant, B prepacked) and run into an output made once: no
            validation, dispatch or allocation per call
  kernel    that AOT kernel alone, called directly on buffers made once into a preallocated output
            (float32.. Gemm without transposes): the runtime's time minus its time is the call's
            cost outside the kernel (the us/call column)
  halide    the same schedule compiled by Halide's JIT (the host path of `mmtune run --impl halide`)
  openblas  cblas_sgemm (float32 Gemm without transposes); its workers are ended after each
            sample (they spin on between calls and would take a core from the next sample)
  onednn    dnnl_sgemm (float32 Gemm), dnnl_gemm_u8s8s32 (u8.s8->u8 QLinearMatMul: the int32
            sums alone, without the requantization, so not the same operation; checked exactly
            and its wrong sums counted: without VNNI it saturates pair sums)
The 8-bit anchors (QLinearMatMul of int8/uint8 a, b, y; per-tensor scales and zero points; the
libraries' prepacked int8 paths; any 8-bit type reaches the other by flipping each byte's top bit,
zero points too, which leaves x - zero point unchanged):
  onednn_matmul  oneDNN's matmul primitive, a u8/s8 x weights s8 -> y u8/s8 (a uint8 b flipped
            to s8 once): weights format_tag::any, reordered once into its layout; output scale
            a_scale*b_scale/y_scale and the zero points of a, b, y as attributes; requantized by
            oneDNN in float32. Timed: execute alone (primitive, reorders, memory made once per
            thread count; one untimed execute before each sample wakes OpenMP's workers). Where
            oneDNN refuses a nonzero weights zero point it runs 0 and is marked not the same
            operation
  xnnpack_qu8  XNNPACK's xnn_create_fully_connected_nc_qu8: all zero points, so the same
            operation for every 8-bit type (b flipped to uint8 before packing, once; an int8 a
            flipped once per input copy and an int8 y flipped back, both outside the timed call)
  xnnpack_qs8  xnn_create_fully_connected_nc_qs8, the same way in int8; its weights are
            symmetric (zero point 0 in int8), so where the bench's b zero point is another it is
            not the same operation: compared with the reference run with that zero point instead
  For both XNNPACK operators b is transposed to (N,K) and packed when the operator is made (one per
  input copy); timed: xnn_run_operator alone (set up once per copy and thread count on a
  pthreadpool of --threads threads), the pool's workers woken before and sent to sleep after each
  sample, untimed (they spin-wait between calls and would take a core from the next sample).
  Each anchor's output on the first copy is compared with the reference's and the outputs that
  differ are counted (`wrong`; the libraries requantize with their own rounding: a count, not an
  error).
`all` is every one of them that computes the identity. The runtime's, the kernel's and the JIT's
results are checked bit for bit against the reference before timing (a difference is an internal
error). A row that is not the same operation says so (`same_operation` false in --json).
Rates are operations per second (2 M N K per call, medians); the ratio column is the runtime's
rate over each implementation's.

Examples:
  mmtune bench --op Gemm:float32:contract=fma --shapes benchmarks/shapes/squares.txt --threads 1,2
  mmtune bench --op QLinearMatMul:uint8,int8,uint8 --shape 1,4096,4096 --impl runtime,onednn --json
  mmtune bench --op QLinearMatMul:uint8,int8,uint8 --shape 128,4096,4096 --threads 1,2
               --impl prepared,onednn_matmul,xnnpack_qu8,xnnpack_qs8
)");
  return [o] {
    std::vector<NamedShape> shapes;
    if (!o->shapes.empty()) shapes = read_shape_list(o->shapes);
    for (const std::string& s : o->shape) shapes.push_back(parse_mnk(s, "bench"));
    if (shapes.empty()) invalid("bench", "no shapes: give --shape M,N,K or --shapes FILE");
    for (const std::string& i : o->impls) {
      if (i != "all" && std::find(kImpls.begin(), kImpls.end(), i) == kImpls.end()) {
        invalid("bench", "--impl '", i,
                "' is not runtime, prepacked, prepared, kernel, halide, openblas, onednn, "
                "onednn_matmul, xnnpack_qu8, xnnpack_qs8 or all");
      }
    }
    const bool all = std::find(o->impls.begin(), o->impls.end(), "all") != o->impls.end();
    std::vector<std::pair<std::string, KernelIdentity>> ids;
    for (const std::string& spec : o->ops) ids.emplace_back(spec, tune::parse_identity_spec(spec));
    // Every name valid for every identity before anything is timed.
    for (const auto& [spec, id] : ids) {
      const std::vector<std::string> libs = libraries_of(id);
      for (const std::string& i : o->impls) {
        if (is_library(i) && std::find(libs.begin(), libs.end(), i) == libs.end()) {
          invalid("bench", "--impl ", i, ": ", i, " does not compute ", spec,
                  " (openblas: float32 Gemm without transposes; onednn: that and u8.s8->u8 "
                  "QLinearMatMul; onednn_matmul, xnnpack_qu8, xnnpack_qs8: QLinearMatMul of "
                  "int8/uint8 types)");
        }
      }
    }
    tune::MeasureOptions measure;
    measure.max_time_s = o->max_time;
    nlohmann::json rows = nlohmann::json::array();
    if (!o->json) {
      std::cout << std::left << std::setw(34) << "op" << std::setw(18) << "shape" << std::setw(8)
                << "threads" << std::setw(15) << "impl" << std::right << std::setw(12) << "G/s"
                << std::setw(12) << "runtime/x" << std::setw(12) << "us/call"
                << "  kernel\n";
    }
    for (const auto& [spec, id] : ids) {
      std::vector<std::string> names;
      const std::vector<std::string> libs = libraries_of(id);
      for (const std::string& i : kImpls) {
        const bool asked = std::find(o->impls.begin(), o->impls.end(), i) != o->impls.end() || all;
        // Libraries that do not compute the identity were refused above unless `all` asked.
        const bool computes =
            !is_library(i) || std::find(libs.begin(), libs.end(), i) != libs.end();
        if (asked && computes) names.push_back(i);
      }
      for (const NamedShape& s : shapes) {
        std::vector<OpCall> copies = tune::timing_calls(id, s.m, s.n, s.k, o->seed);
        if (o->warm) copies.resize(1);
        const OpCall& c0 = copies[0];
        const Tensor want = run_reference(c0.op, c0.inputs, c0.attrs);
        for (int t : o->threads) {
          set_num_threads(t);
          blas::set_threads(t);
          // Made (and checked against the reference) at each thread count: the runtime's kernel
          // for a call may depend on it (a bucket's thread range), and so may a prepared call's.
          // `all` takes the JIT only where the runtime has a kernel to take the schedule from.
          const std::vector<Impl> impls = make_impls(names, id, spec, copies, s, all, want);
          const bool jit = std::any_of(impls.begin(), impls.end(),
                                       [](const Impl& i) { return i.name == "halide"; });
          // The JIT's runtime exists once a kernel has been compiled (the halide check did).
          if (jit) Halide::Internal::JITSharedRuntime::set_num_threads(t);
          for (const Impl& impl : impls) {
            if (impl.set_threads) impl.set_threads(t);
          }
          measure.threads = t;
          const std::vector<std::vector<double>> samples = tune::time_interleaved(
              impls.size(), copies.size(),
              [&](std::size_t i, std::size_t ci) { impls[i].call(ci); }, measure,
              [&](std::size_t i, bool before) {
                if (impls[i].around) impls[i].around(before);
              });
          std::vector<double> rates;
          for (const auto& v : samples) {
            const double med = tune::median_of(v);
            rates.push_back(med > 0 ? s.flops() / med : 0);
          }
          for (std::size_t i = 0; i < impls.size(); ++i) {
            const Impl& impl = impls[i];
            if (o->json) {
              rows.push_back({{"impl", impl.name},
                              {"op", spec},
                              {"shape", {s.m, s.n, s.k}},
                              {"threads", t},
                              {"rate", rates[i]},
                              {"seconds", rates[i] > 0 ? s.flops() / rates[i] : 0.0},
                              {"kernel", impl.kernel},
                              {"note", impl.note},
                              {"wrong", impl.wrong},
                              {"same_operation", impl.not_same.empty()}});
              continue;
            }
            std::ostringstream ratio;
            if (impls[0].name == "runtime" && rates[i] > 0)
              ratio << std::fixed << std::setprecision(2) << rates[0] / rates[i] << "x";
            std::cout << std::left << std::setw(34) << spec << std::setw(18) << shape_text(s)
                      << std::setw(8) << t << std::setw(15) << impl.name << std::right
                      << std::setw(12) << std::fixed << std::setprecision(2) << rates[i] / 1e9
                      << std::setw(12) << ratio.str() << std::setw(12) << std::setprecision(3)
                      << (rates[i] > 0 ? s.flops() / rates[i] * 1e6 : 0.0) << "  " << impl.kernel
                      << (impl.wrong > 0 ? " (" + std::to_string(impl.wrong) +
                                               " outputs differ from the reference's)"
                                         : "")
                      << (impl.not_same.empty()
                              ? ""
                              : " [not the same operation: " + impl.not_same + "]")
                      << "\n";
          }
        }
      }
    }
    if (o->json) std::cout << rows.dump(1) << "\n";
    return kExitOk;
  };
}

}  // namespace mmtune::cli
