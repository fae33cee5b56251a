// Prepared calls (mmtune.h: Gemm, QLinearMatMul, QGemm, QuantMatmulDequant): validation, the
// kernel's choice, the buffers' description and the quantization parameters' widening done once;
// run() fills in the host pointers of copies of the described buffers and calls the kernel. Nothing
// on run()'s path allocates, formats or parses (but the reference fallback; a transposed operand
// without a PackedB is copied transposed on each run, into the thread's scratch: allocated by the
// thread's first such run, or when it grows).
//
// The plain calls with a PackedB go through the same preparation: each PackedB remembers the
// calls made with it (PackedB::Impl::memo), so that a call whose signature (shapes, types,
// attributes, quantization parameters' values, the allowed level, the pool's thread count) matches
// an earlier one only allocates its output and runs the prepared kernel call.
#include <cstdint>
#include <cstring>

#include "mmtune/mmtune.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/host/quant_matmul_dequant_host.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/calls.h"
#include "runtime/src/dispatch.h"
#include "runtime/src/kernel_call.h"

namespace mmtune::runtime {
namespace {

// A kernel argument described once: run() copies it and sets the host pointer. The copy's dims
// point here; Halide reads an input's dims and writes only an output's flags (of the copy).
struct Arg {
  halide_buffer_t buf{};
  halide_dimension_t dims[4]{};

  void describe(const Halide::Runtime::Buffer<void>& b) {
    const halide_buffer_t& raw = *b.raw_buffer();
    MMTUNE_CHECK(raw.dimensions <= 4, "a " << raw.dimensions << "-D kernel argument");
    buf = raw;
    for (int d = 0; d < raw.dimensions; ++d) dims[d] = raw.dim[d];
    buf.host = nullptr;
    buf.dim = nullptr;
  }
  halide_buffer_t at(const void* host) const {
    halide_buffer_t b = buf;
    b.host = static_cast<uint8_t*>(const_cast<void*>(host));
    b.dim = const_cast<halide_dimension_t*>(dims);
    return b;
  }
};

void require_pointer(const char* op, const char* name, const void* p) {
  if (!p) invalid(op, "prepared run: ", name, " is null");
}

// A Gemm-shaped run's pointers (Gemm, QGemm): A, B, Y, and C where it was prepared with one; with
// a PackedB, B the tensor it was packed from.
void require_run(const char* op, const PackedB::Impl* packed, const void* a, const void* b,
                 bool has_c, const void* c, const void* y) {
  require_pointer(op, "A", a);
  require_pointer(op, "B", b);
  require_pointer(op, "Y", y);
  if (has_c) require_pointer(op, "C", c);
  if (packed && b != packed->source)
    invalid(op, "prepared run: B is not the tensor packed_b was prepacked from");
}

// The kernel's operands of a Gemm-shaped run: A transposed into `a_t` under transA; B the panels
// when prepacked, else transposed into `b_t` under transB.
void canonical_operands(const Chosen& chosen, bool trans_a, bool trans_b, DType ta, DType tb,
                        const Shape& a_shape, const Shape& b_shape, const void*& a, const void*& b,
                        host::ScratchTensor& a_t, host::ScratchTensor& b_t) {
  if (trans_a) a = a_t.transpose_of(a, ta, a_shape.at(0), a_shape.at(1)).bytes.data();
  if (chosen.panels) {
    b = chosen.panels->panels.bytes.data();
  } else if (trans_b) {
    b = b_t.transpose_of(b, tb, b_shape.at(0), b_shape.at(1)).bytes.data();
  }
}

// The memo of a PackedB (PackedB::Impl::memo): the entry of type P (the operator's prepared Impl)
// that `matches` the call, or nullptr.
template <class P, class Matches>
std::shared_ptr<const P> memo_find(const PackedB::Impl& packed, const Matches& matches) {
  std::lock_guard<std::mutex> lock(packed.memo_mutex);
  for (const std::shared_ptr<const void>& entry : packed.memo) {
    auto p = std::static_pointer_cast<const P>(entry);
    if (matches(*p)) return p;
  }
  return nullptr;
}

void memo_add(const PackedB::Impl& packed, std::shared_ptr<const void> entry) {
  std::lock_guard<std::mutex> lock(packed.memo_mutex);
  if (packed.memo.size() < PackedB::Impl::kMemoEntries) {
    packed.memo.push_back(std::move(entry));
  } else {
    packed.memo[packed.memo_replaced++ % PackedB::Impl::kMemoEntries] = std::move(entry);
  }
}

// Whether a call's B is the tensor `packed` was made from, unchanged in shape and type (else the
// plain path's packed_for_call says what differs).
bool is_source(const Tensor* b, const PackedB::Impl& packed) {
  return b && b->bytes.data() == packed.source && b->dtype == packed.dtype &&
         b->shape == packed.shape;
}

// The same float32 bit pattern (+0 and -0 differ; a NaN equals its own pattern).
bool same_bits(float x, float y) {
  uint32_t bx = 0, by = 0;
  std::memcpy(&bx, &x, sizeof bx);
  std::memcpy(&by, &y, sizeof by);
  return bx == by;
}

bool is_matrix(const Tensor* t, DType type, int64_t rows, int64_t cols) {
  return t && t->dtype == type && t->shape.size() == 2 && t->shape[0] == rows &&
         t->shape[1] == cols;
}

// `t` is present and equal to `kept` in type, shape and bytes.
bool same_tensor(const Tensor* t, const Tensor& kept) {
  return t && t->dtype == kept.dtype && t->shape == kept.shape && t->bytes == kept.bytes;
}
// Both absent, or both present and equal.
bool same_optional(const Tensor* t, const Tensor* kept) {
  return t ? kept && same_tensor(t, *kept) : !kept;
}

// An optional parameter kept by a preparation: copied into `into`, which the kept args point to.
const Tensor* keep(const Tensor* from, Tensor& into) {
  if (!from) return nullptr;
  into = *from;
  return &into;
}

// A new prepared Impl of type P stamped with what its reuse depends on: the PackedB prepared with,
// the allowed level and the pool's thread count.
template <class P>
std::shared_ptr<P> new_prepared(const PackedB::Impl* packed) {
  auto p = std::make_shared<P>();
  p->packed_impl = packed;
  p->level = allowed_level_or_invalid();
  p->threads = host::pool_threads();
  return p;
}

// A plain call with a PackedB through the PackedB's memo. `matches` tells a remembered Impl of
// this call's signature; `prepare` checks the call as the plain call does (packed_for_call, then
// the reference's validation: the same errors in the same order) and prepares it; `run` runs an
// Impl into the output it returns. nullopt where the plain path computes the call: the PackedB is
// another operator's or B another tensor (the plain path says so), or no kernel runs it.
template <class P, class Matches, class Prepare, class Run>
std::optional<Tensor> through_memo(const PackedB& packed_b, const char* op, const Tensor* b,
                                   const Matches& matches, const Prepare& prepare, const Run& run,
                                   DispatchInfo* info) {
  const PackedB::Impl* packed = packed_b.impl();
  if (!packed || packed->op != op || !is_source(b, *packed)) return std::nullopt;
  const std::size_t level = allowed_level_or_invalid();
  const int threads = host::pool_threads();
  std::shared_ptr<const P> p = memo_find<P>(
      *packed, [&](const P& e) { return e.level == level && e.threads == threads && matches(e); });
  if (!p) {
    std::shared_ptr<P> made = prepare(*packed);
    p = made;
    memo_add(*packed, std::move(made));
  }
  if (!p->chosen.kernel) return std::nullopt;
  Tensor y = run(*p);
  if (info) *info = p->info;
  return y;
}

}  // namespace

struct PreparedGemm::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;  // keeps the panels alive (empty in a PackedB's memo, which the PackedB owns)
  const PackedB::Impl* packed_impl = nullptr;  // the PackedB prepared with
  std::size_t level = kInvalidLevel;           // allowed_level_or_invalid() when prepared
  int threads = 0;                             // host::pool_threads() when prepared
  DType t = DType::kFloat32;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, has_c = false;
  float alpha = 1.0f, beta = 0.0f;
  FloatContract contract = FloatContract::kStrict;
  Shape c_shape;
  bool reads_c = false;  // C given and beta != 0 (else the kernel gets zero_c: gemm_reads_c)
  Tensor zero_c;         // the absent or ignored C: beta = 0 over a zero row of N
  Arg a, b, c, y;
};

namespace {

std::shared_ptr<PreparedGemm::Impl> make_gemm(const GemmArgs& args, const GemmPlan& plan,
                                              const PackedB::Impl* packed) {
  auto p = new_prepared<PreparedGemm::Impl>(packed);
  p->t = args.a->dtype;
  p->m = plan.m;
  p->n = plan.n;
  p->k = plan.k;
  p->trans_a = args.trans_a;
  p->trans_b = args.trans_b;
  p->has_c = args.c != nullptr;
  p->alpha = args.alpha;
  p->beta = p->has_c ? args.beta : 0.0f;
  p->contract = args.contract;
  p->c_shape = p->has_c ? args.c->shape : Shape{};
  p->reads_c = gemm_reads_c(args.c, args.beta);
  if (!p->reads_c) p->zero_c = gemm_absent_c(p->t, plan.n);
  if (plan.m == 0 || plan.n == 0) {
    p->info = {"reference", "Y is empty"};
  } else if (plan.k == 0) {
    p->info = {"reference", "K is 0 (an empty sum): the reference computes it"};
  } else {
    p->chosen = choose_gemm(args, plan, packed, &p->info);
  }
  if (p->chosen.kernel) {
    // The kernels' canonical form: A (M, K), B (K, N) or its panels, C broadcast to (M, N).
    p->a.describe(view_matrix(nullptr, p->t, 0, plan.m, plan.k));
    if (p->chosen.panels) {
      const Tensor& panels = p->chosen.panels->panels;
      p->b.describe(view(panels, panels.shape));
    } else {
      p->b.describe(view_matrix(nullptr, p->t, 0, plan.k, plan.n));
    }
    p->c.describe(view(p->reads_c ? *args.c : p->zero_c, {plan.m, plan.n}));
    p->y.describe(view_matrix(nullptr, p->t, 0, plan.m, plan.n));
    if (p->trans_a || (p->trans_b && !p->chosen.panels))
      p->info.reason +=
          "; a transposed operand is materialized on each run (prepack_b avoids it "
          "for B)";
  }
  return p;
}

// A prepared Gemm's run after its pointers' checks.
void run_gemm(const PreparedGemm::Impl& p, const void* a, const void* b, const void* c, void* y) {
  const Shape a_shape = p.trans_a ? Shape{p.k, p.m} : Shape{p.m, p.k};
  const Shape b_shape = p.trans_b ? Shape{p.n, p.k} : Shape{p.k, p.n};
  if (!p.chosen.kernel) {
    // The reference, on copies (exact; the slow path the plain call takes too).
    const Tensor at = tensor_at(a, p.t, a_shape), bt = tensor_at(b, p.t, b_shape);
    const Tensor ct = p.reads_c ? tensor_at(c, p.t, p.c_shape) : Tensor();
    GemmArgs args;
    args.a = &at;
    args.b = &bt;
    args.c = p.reads_c ? &ct : nullptr;  // beta = 0: the same bits without C
    args.alpha = p.alpha;
    args.beta = p.beta;
    args.trans_a = p.trans_a;
    args.trans_b = p.trans_b;
    args.contract = p.contract;
    const Tensor out = mmtune::gemm(args);
    if (!out.bytes.empty()) std::memcpy(y, out.bytes.data(), out.bytes.size());
    return;
  }
  host::ScratchTensor a_t, b_t;
  canonical_operands(p.chosen, p.trans_a, p.trans_b, p.t, p.t, a_shape, b_shape, a, b, a_t, b_t);
  halide_buffer_t ab = p.a.at(a), bb = p.b.at(b),
                  cb = p.c.at(p.reads_c ? c : p.zero_c.bytes.data()), yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<GemmKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &ab, &bb, &cb, p.alpha, p.beta, &yb));
}

}  // namespace

PreparedGemm prepare_gemm(const GemmArgs& args, const PackedB* packed_b) {
  const GemmPlan plan = validate_gemm(args);
  const PackedB::Impl* packed =
      packed_b ? &packed_for_call(*packed_b, "Gemm", args.b, args.b ? gemm_packing_key(args) : "")
               : nullptr;
  auto p = make_gemm(args, plan, packed);
  if (packed_b) p->packed = *packed_b;
  return PreparedGemm(std::move(p));
}

std::optional<Tensor> gemm_through_memo(const GemmArgs& args, const PackedB& packed_b,
                                        DispatchInfo* info) {
  using P = PreparedGemm::Impl;
  auto matches = [&](const P& e) {
    return is_matrix(args.a, e.t, e.trans_a ? e.k : e.m, e.trans_a ? e.m : e.k) &&
           args.trans_a == e.trans_a && args.trans_b == e.trans_b && args.contract == e.contract &&
           (args.c != nullptr) == e.has_c &&
           (!e.has_c || (args.c->dtype == e.t && args.c->shape == e.c_shape)) &&
           same_bits(args.alpha, e.alpha) && same_bits(e.has_c ? args.beta : 0.0f, e.beta);
  };
  auto prepare = [&](const PackedB::Impl& packed) {
    packed_for_call(packed_b, "Gemm", args.b, gemm_packing_key(args));
    return make_gemm(args, validate_gemm(args), &packed);
  };
  auto run = [&](const P& p) {
    Tensor y = Tensor::uninitialized(p.t, {p.m, p.n});  // written in full
    run_gemm(p, args.a->bytes.data(), args.b->bytes.data(), args.c ? args.c->bytes.data() : nullptr,
             y.bytes.data());
    return y;
  };
  return through_memo<P>(packed_b, "Gemm", args.b, matches, prepare, run, info);
}

const DispatchInfo& PreparedGemm::info() const {
  static const DispatchInfo empty{"", "an empty PreparedGemm (make it with prepare_gemm)"};
  return impl_ ? impl_->info : empty;
}

void PreparedGemm::run(const void* a, const void* b, const void* c, void* y) const {
  if (!impl_) invalid("Gemm", "an empty PreparedGemm; make it with prepare_gemm");
  const Impl& p = *impl_;
  require_run("Gemm", p.packed_impl, a, b, p.has_c, c, y);
  run_gemm(p, a, b, c, y);
}

struct PreparedQLinearMatMul::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;  // (as PreparedGemm's)
  const PackedB::Impl* packed_impl = nullptr;
  std::size_t level = kInvalidLevel;
  int threads = 0;
  QLinearMatMulArgs args;  // the scale / zero-point tensors below; a, b replaced per fallback run
  Tensor a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point;
  QLinearMatMulEntryParams params;  // widened once
  Tensor no_sums;                   // the column sums an unprepacked kernel does not read
  DType a_type = DType::kUInt8, b_type = DType::kUInt8, y_type = DType::kUInt8;
  int64_t m = 0, n = 0, k = 0;
  Arg a, b, as, az, bs, bz, sums, y;
};

namespace {

// `args` valid (plan = validate_qlinear_matmul(args)) with 2-D a and b.
std::shared_ptr<PreparedQLinearMatMul::Impl> make_qlinear_matmul(const QLinearMatMulArgs& args,
                                                                 const QLinearMatMulPlan& plan,
                                                                 const PackedB::Impl* packed) {
  auto p = new_prepared<PreparedQLinearMatMul::Impl>(packed);
  // The parameters are kept (copies): the fallback and the widening read them.
  p->args = args;
  p->args.a_scale = keep(args.a_scale, p->a_scale);
  p->args.a_zero_point = keep(args.a_zero_point, p->a_zero_point);
  p->args.b_scale = keep(args.b_scale, p->b_scale);
  p->args.b_zero_point = keep(args.b_zero_point, p->b_zero_point);
  p->args.y_scale = keep(args.y_scale, p->y_scale);
  p->args.y_zero_point = keep(args.y_zero_point, p->y_zero_point);
  p->a_type = args.a->dtype;
  p->b_type = args.b->dtype;
  p->y_type = plan.out_dtype;
  p->m = plan.shape.m;
  p->n = plan.shape.n;
  p->k = plan.shape.k;
  p->no_sums = Tensor(DType::kUInt32, {1});
  if (auto why = qlinear_matmul_no_kernel(plan)) {
    p->info = {"reference", *why};
  } else {
    p->chosen = choose_qlinear_matmul(args, plan, packed, &p->info);
  }
  if (p->chosen.kernel) {
    widen_entry_params(p->args, plan, {}, p->params);
    p->a.describe(view_matrix(nullptr, p->a_type, 0, p->m, p->k));
    if (p->chosen.panels) {
      const Tensor& panels = p->chosen.panels->panels;
      p->b.describe(view(panels, panels.shape));
    } else {
      p->b.describe(view_matrix(nullptr, p->b_type, 0, p->k, p->n));
    }
    const auto views = param_views(p->params, p->m, p->n);
    p->as.describe(views[0]);
    p->az.describe(views[1]);
    p->bs.describe(views[2]);
    p->bz.describe(views[3]);
    const Tensor& sums =
        p->chosen.panels && !packed->column_sums.bytes.empty() ? packed->column_sums : p->no_sums;
    p->sums.describe(view(sums, sums.shape));
    p->y.describe(view_matrix(nullptr, p->y_type, 0, p->m, p->n));
  }
  return p;
}

void run_qlinear_matmul(const PreparedQLinearMatMul::Impl& p, const void* a, const void* b,
                        void* y) {
  if (!p.chosen.kernel) {
    const Tensor at = tensor_at(a, p.a_type, {p.m, p.k}), bt = tensor_at(b, p.b_type, {p.k, p.n});
    QLinearMatMulArgs args = p.args;
    args.a = &at;
    args.b = &bt;
    const Tensor out = mmtune::qlinear_matmul(args);
    if (!out.bytes.empty()) std::memcpy(y, out.bytes.data(), out.bytes.size());
    return;
  }
  const void* b_data = p.chosen.panels ? p.chosen.panels->panels.bytes.data() : b;
  const Tensor& sums = p.chosen.panels && !p.packed_impl->column_sums.bytes.empty()
                           ? p.packed_impl->column_sums
                           : p.no_sums;
  halide_buffer_t ab = p.a.at(a), bb = p.b.at(b_data), asb = p.as.at(p.params.a_scale.bytes.data()),
                  azb = p.az.at(p.params.a_zero_point.bytes.data()),
                  bsb = p.bs.at(p.params.b_scale.bytes.data()),
                  bzb = p.bz.at(p.params.b_zero_point.bytes.data()),
                  sb = p.sums.at(sums.bytes.data()), yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<QLinearMatMulKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &ab, &bb, &asb, &azb, &bsb, &bzb, &sb, p.params.y_scale,
                p.params.y_zero_point, &yb));
}

void require_2d(const QLinearMatMulArgs& args) {
  if (args.a->rank() != 2 || args.b->rank() != 2) {
    invalid("QLinearMatMul", "a is ", describe(*args.a), " and b ", describe(*args.b),
            "; prepared calls take 2-D a and b (qlinear_matmul() takes batches and vectors)");
  }
}

}  // namespace

PreparedQLinearMatMul prepare_qlinear_matmul(const QLinearMatMulArgs& args,
                                             const PackedB* packed_b) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  require_2d(args);
  const PackedB::Impl* packed = packed_b ? &packed_for_call(*packed_b, "QLinearMatMul", args.b,
                                                            qlinear_matmul_packing_key(args))
                                         : nullptr;
  auto p = make_qlinear_matmul(args, plan, packed);
  if (packed_b) p->packed = *packed_b;
  return PreparedQLinearMatMul(std::move(p));
}

std::optional<Tensor> qlinear_matmul_through_memo(const QLinearMatMulArgs& args,
                                                  const PackedB& packed_b, DispatchInfo* info) {
  using P = PreparedQLinearMatMul::Impl;
  // 2-D a only (batches and vectors take the plain path); b is 2-D, as every PackedB's.
  if (!args.a || args.a->rank() != 2) return std::nullopt;
  auto matches = [&](const P& e) {
    return is_matrix(args.a, e.a_type, e.m, e.k) && args.opset == e.args.opset &&
           args.requant == e.args.requant && same_tensor(args.a_scale, e.a_scale) &&
           same_tensor(args.a_zero_point, e.a_zero_point) && same_tensor(args.b_scale, e.b_scale) &&
           same_tensor(args.b_zero_point, e.b_zero_point) && same_tensor(args.y_scale, e.y_scale) &&
           same_tensor(args.y_zero_point, e.y_zero_point);
  };
  auto prepare = [&](const PackedB::Impl& packed) {
    packed_for_call(packed_b, "QLinearMatMul", args.b, qlinear_matmul_packing_key(args));
    return make_qlinear_matmul(args, validate_qlinear_matmul(args), &packed);
  };
  auto run = [&](const P& p) {
    Tensor y = Tensor::uninitialized(p.y_type, {p.m, p.n});  // written in full
    run_qlinear_matmul(p, args.a->bytes.data(), args.b->bytes.data(), y.bytes.data());
    return y;
  };
  return through_memo<P>(packed_b, "QLinearMatMul", args.b, matches, prepare, run, info);
}

const DispatchInfo& PreparedQLinearMatMul::info() const {
  static const DispatchInfo empty{"",
                                  "an empty PreparedQLinearMatMul (make it with "
                                  "prepare_qlinear_matmul)"};
  return impl_ ? impl_->info : empty;
}

void PreparedQLinearMatMul::run(const void* a, const void* b, void* y) const {
  if (!impl_)
    invalid("QLinearMatMul",
            "an empty PreparedQLinearMatMul; make it with "
            "prepare_qlinear_matmul");
  const Impl& p = *impl_;
  require_pointer("QLinearMatMul", "a", a);
  require_pointer("QLinearMatMul", "b", b);
  require_pointer("QLinearMatMul", "y", y);
  if (p.packed_impl && b != p.packed_impl->source)
    invalid("QLinearMatMul", "prepared run: b is not the tensor packed_b was prepacked from");
  run_qlinear_matmul(p, a, b, y);
}

struct PreparedQGemm::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;  // (as PreparedGemm's)
  const PackedB::Impl* packed_impl = nullptr;
  std::size_t level = kInvalidLevel;
  int threads = 0;
  QGemmArgs args;  // the parameter tensors below; a, b, c replaced per fallback run
  Tensor a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point;
  Tensor bs, bz;   // b's parameters widened to (N), once
  Tensor no_sums;  // the column sums an unprepacked kernel does not read
  Tensor zero_c;   // the absent C: a zero int32 broadcast
  DType a_type = DType::kUInt8, b_type = DType::kUInt8, y_type = DType::kFloat32;
  int64_t m = 0, n = 0, k = 0;
  Shape c_shape;
  float a_scale_value = 0, y_scale_value = 1;
  int32_t a_zero_value = 0, y_zero_value = 0;
  Arg a, b, c, bsa, bza, sums, y;
};

namespace {

std::shared_ptr<PreparedQGemm::Impl> make_qgemm(const QGemmArgs& args, const QGemmPlan& plan,
                                                const PackedB::Impl* packed) {
  auto p = new_prepared<PreparedQGemm::Impl>(packed);
  // The parameters are kept (copies): the fallback reads them; the kernel's are widened once.
  p->args = args;
  p->args.a_scale = keep(args.a_scale, p->a_scale);
  p->args.a_zero_point = keep(args.a_zero_point, p->a_zero_point);
  p->args.b_scale = keep(args.b_scale, p->b_scale);
  p->args.b_zero_point = keep(args.b_zero_point, p->b_zero_point);
  p->args.y_scale = keep(args.y_scale, p->y_scale);
  p->args.y_zero_point = keep(args.y_zero_point, p->y_zero_point);
  p->a_type = args.a->dtype;
  p->b_type = args.b->dtype;
  p->y_type = plan.out_dtype;
  p->m = plan.m;
  p->n = plan.n;
  p->k = plan.k;
  p->c_shape = args.c ? args.c->shape : Shape{};
  p->no_sums = Tensor(DType::kUInt32, {1});
  p->zero_c = Tensor(DType::kInt32, {});
  if (auto why = qgemm_no_kernel(plan)) {
    p->info = {"reference", *why};
  } else {
    p->chosen = choose_qgemm(args, plan, packed, &p->info);
  }
  if (p->chosen.kernel) {
    p->bs = Tensor(DType::kFloat32, {plan.n});
    p->bz = Tensor(DType::kInt32, {plan.n});
    widen_qgemm_b_params(args, plan, p->bs, p->bz);
    p->a_scale_value = args.a_scale->data<float>()[0];
    p->a_zero_value = static_cast<int32_t>(int_at(*args.a_zero_point, 0));
    p->y_scale_value = args.y_scale ? args.y_scale->data<float>()[0] : 1.0f;
    p->y_zero_value = args.y_zero_point ? static_cast<int32_t>(int_at(*args.y_zero_point, 0)) : 0;
    p->a.describe(view_matrix(nullptr, p->a_type, 0, p->m, p->k));
    if (p->chosen.panels) {
      const Tensor& panels = p->chosen.panels->panels;
      p->b.describe(view(panels, panels.shape));
    } else {
      p->b.describe(view_matrix(nullptr, p->b_type, 0, p->k, p->n));
    }
    p->c.describe(view(args.c ? *args.c : p->zero_c, {p->m, p->n}));
    p->bsa.describe(view(p->bs, p->bs.shape));
    p->bza.describe(view(p->bz, p->bz.shape));
    const Tensor& sums = p->chosen.panels ? packed->column_sums : p->no_sums;
    p->sums.describe(view(sums, sums.shape));
    p->y.describe(view_matrix(nullptr, p->y_type, 0, p->m, p->n));
    if (args.trans_a || (args.trans_b && !p->chosen.panels))
      p->info.reason +=
          "; a transposed operand is materialized on each run (prepack_b avoids it for B)";
  }
  return p;
}

void run_qgemm(const PreparedQGemm::Impl& p, const void* a, const void* b, const void* c, void* y) {
  const bool has_c = p.args.c != nullptr;
  const Shape a_shape = p.args.trans_a ? Shape{p.k, p.m} : Shape{p.m, p.k};
  const Shape b_shape = p.args.trans_b ? Shape{p.n, p.k} : Shape{p.k, p.n};
  if (!p.chosen.kernel) {
    const Tensor at = tensor_at(a, p.a_type, a_shape), bt = tensor_at(b, p.b_type, b_shape);
    const Tensor ct = has_c ? tensor_at(c, DType::kInt32, p.c_shape) : Tensor();
    QGemmArgs args = p.args;
    args.a = &at;
    args.b = &bt;
    args.c = has_c ? &ct : nullptr;
    const Tensor out = mmtune::qgemm(args);
    if (!out.bytes.empty()) std::memcpy(y, out.bytes.data(), out.bytes.size());
    return;
  }
  host::ScratchTensor a_t, b_t;
  canonical_operands(p.chosen, p.args.trans_a, p.args.trans_b, p.a_type, p.b_type, a_shape, b_shape,
                     a, b, a_t, b_t);
  const Tensor& sums = p.chosen.panels ? p.packed_impl->column_sums : p.no_sums;
  halide_buffer_t ab = p.a.at(a), bb = p.b.at(b), cb = p.c.at(has_c ? c : p.zero_c.bytes.data()),
                  bsb = p.bsa.at(p.bs.bytes.data()), bzb = p.bza.at(p.bz.bytes.data()),
                  sb = p.sums.at(sums.bytes.data()), yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<QGemmKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &ab, &bb, &cb, p.a_scale_value, p.a_zero_value, &bsb, &bzb,
                &sb, p.y_scale_value, p.y_zero_value, p.args.alpha, &yb));
}

}  // namespace

PreparedQGemm prepare_qgemm(const QGemmArgs& args, const PackedB* packed_b) {
  const QGemmPlan plan = validate_qgemm(args);
  const PackedB::Impl* packed =
      packed_b ? &packed_for_call(*packed_b, "QGemm", args.b, args.b ? qgemm_packing_key(args) : "")
               : nullptr;
  auto p = make_qgemm(args, plan, packed);
  if (packed_b) p->packed = *packed_b;
  return PreparedQGemm(std::move(p));
}

std::optional<Tensor> qgemm_through_memo(const QGemmArgs& args, const PackedB& packed_b,
                                         DispatchInfo* info) {
  using P = PreparedQGemm::Impl;
  auto matches = [&](const P& e) {
    const bool ta = e.args.trans_a;
    return is_matrix(args.a, e.a_type, ta ? e.k : e.m, ta ? e.m : e.k) && args.trans_a == ta &&
           args.trans_b == e.args.trans_b && same_bits(args.alpha, e.args.alpha) &&
           (args.c != nullptr) == (e.args.c != nullptr) &&
           (!args.c || (args.c->dtype == DType::kInt32 && args.c->shape == e.c_shape)) &&
           same_optional(args.a_scale, e.args.a_scale) &&
           same_optional(args.a_zero_point, e.args.a_zero_point) &&
           same_optional(args.b_scale, e.args.b_scale) &&
           same_optional(args.b_zero_point, e.args.b_zero_point) &&
           same_optional(args.y_scale, e.args.y_scale) &&
           same_optional(args.y_zero_point, e.args.y_zero_point);
  };
  auto prepare = [&](const PackedB::Impl& packed) {
    packed_for_call(packed_b, "QGemm", args.b, qgemm_packing_key(args));
    return make_qgemm(args, validate_qgemm(args), &packed);
  };
  auto run = [&](const P& p) {
    Tensor y = Tensor::uninitialized(p.y_type, {p.m, p.n});  // written in full
    run_qgemm(p, args.a->bytes.data(), args.b->bytes.data(),
              args.c ? args.c->bytes.data() : nullptr, y.bytes.data());
    return y;
  };
  return through_memo<P>(packed_b, "QGemm", args.b, matches, prepare, run, info);
}

const DispatchInfo& PreparedQGemm::info() const {
  static const DispatchInfo empty{"", "an empty PreparedQGemm (make it with prepare_qgemm)"};
  return impl_ ? impl_->info : empty;
}

void PreparedQGemm::run(const void* a, const void* b, const void* c, void* y) const {
  if (!impl_) invalid("QGemm", "an empty PreparedQGemm; make it with prepare_qgemm");
  const Impl& p = *impl_;
  require_run("QGemm", p.packed_impl, a, b, p.args.c != nullptr, c, y);
  run_qgemm(p, a, b, c, y);
}

struct PreparedQuantMatmulDequant::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;  // (as PreparedGemm's)
  const PackedB::Impl* packed_impl = nullptr;
  std::size_t level = kInvalidLevel;
  int threads = 0;
  QuantMatmulDequantArgs args;  // the parameter tensors below; x, weight replaced per fallback run
  Tensor weight_scale, bias, x_scale, smooth_scale;
  Tensor kernel_bias;            // what the kernel adds: the bias, zeros, or with panels the fold
  Tensor no_x_scale, no_smooth;  // 1-element dummies the kernel never reads
  int64_t m = 0, n = 0, k = 0;
  Arg x, w, ws, b, xs, sm, y;
};

namespace {

std::shared_ptr<PreparedQuantMatmulDequant::Impl> make_quant_matmul_dequant(
    const QuantMatmulDequantArgs& args, const QuantMatmulDequantPlan& plan,
    const PackedB::Impl* packed) {
  auto p = new_prepared<PreparedQuantMatmulDequant::Impl>(packed);
  // The parameters are kept (copies): the fallback and the kernel read them.
  p->args = args;
  p->args.weight_scale = keep(args.weight_scale, p->weight_scale);
  p->args.bias = keep(args.bias, p->bias);
  p->args.x_scale = keep(args.x_scale, p->x_scale);
  p->args.smooth_scale = keep(args.smooth_scale, p->smooth_scale);
  p->m = plan.m;
  p->n = plan.n;
  p->k = plan.k;
  if (auto why = quant_matmul_dequant_no_kernel(plan)) {
    p->info = {"reference", *why};
  } else if (plan.k == 0) {
    p->info = {"reference", "K is 0 (an empty sum): the reference computes it"};
  } else {
    p->chosen = choose_quant_matmul_dequant(args, plan, packed, &p->info);
  }
  if (p->chosen.kernel) {
    p->no_x_scale = Tensor(DType::kFloat32, {1});
    p->no_smooth = Tensor(DType::kFloat16, {1});
    if (p->chosen.panels) {
      p->kernel_bias = fold_column_sums_into_bias(p->args.bias, packed->column_sums);
    } else {
      p->kernel_bias = p->args.bias ? p->bias : Tensor(DType::kInt32, {plan.n});
    }
    p->x.describe(view_matrix(nullptr, DType::kFloat16, 0, p->m, p->k));
    if (p->chosen.panels) {
      const Tensor& panels = p->chosen.panels->panels;
      p->w.describe(view(panels, panels.shape));
    } else {
      p->w.describe(view_matrix(nullptr, DType::kInt8, 0, p->k, p->n));
    }
    p->ws.describe(view(p->weight_scale, {p->n}));
    p->b.describe(view(p->kernel_bias, {p->n}));
    p->xs.describe(plan.dynamic                                 ? view(p->no_x_scale, {1})
                   : args.x_quant_mode == XQuantMode::kPerToken ? view(p->x_scale, {p->m})
                                                                : view(p->x_scale, {1}));
    p->sm.describe(args.smooth_scale ? view(p->smooth_scale, {p->k}) : view(p->no_smooth, {1}));
    p->y.describe(view_matrix(nullptr, DType::kFloat16, 0, p->m, p->n));
    if (args.transpose_weight && !p->chosen.panels)
      p->info.reason +=
          "; the (N, K) weight is copied transposed on each run (prepack_b avoids it)";
  }
  return p;
}

// The host pointer of a kept tensor (the Arg describing it holds none).
const void* host_of(const Tensor& t) { return t.bytes.data(); }

void run_quant_matmul_dequant(const PreparedQuantMatmulDequant::Impl& p, const void* x,
                              const void* weight, void* y) {
  const bool nk = p.args.transpose_weight;
  if (!p.chosen.kernel) {
    const Tensor xt = tensor_at(x, DType::kFloat16, {p.m, p.k}),
                 wt = tensor_at(weight, DType::kInt8, nk ? Shape{p.n, p.k} : Shape{p.k, p.n});
    QuantMatmulDequantArgs args = p.args;
    args.x = &xt;
    args.weight = &wt;
    const Tensor out = mmtune::quant_matmul_dequant(args);
    if (!out.bytes.empty()) std::memcpy(y, out.bytes.data(), out.bytes.size());
    return;
  }
  host::ScratchTensor w_t;
  const void* w = weight;
  if (p.chosen.panels) {
    w = p.chosen.panels->panels.bytes.data();
  } else if (nk) {
    w = w_t.transpose_of(weight, DType::kInt8, p.n, p.k).bytes.data();
  }
  const bool dynamic = p.args.x_scale == nullptr;
  halide_buffer_t xb = p.x.at(x), wb = p.w.at(w), wsb = p.ws.at(host_of(p.weight_scale)),
                  bb = p.b.at(host_of(p.kernel_bias)),
                  xsb = p.xs.at(host_of(dynamic ? p.no_x_scale : p.x_scale)),
                  smb = p.sm.at(host_of(p.args.smooth_scale ? p.smooth_scale : p.no_smooth)),
                  yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<QuantMatmulDequantKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &xb, &wb, &wsb, &bb, &xsb, &smb, &yb));
}

}  // namespace

PreparedQuantMatmulDequant prepare_quant_matmul_dequant(const QuantMatmulDequantArgs& args,
                                                        const PackedB* packed_b) {
  const char* op = "QuantMatmulDequant";
  const PackedB::Impl* packed =
      packed_b ? &packed_for_call(*packed_b, op, args.weight,
                                  args.weight ? quant_matmul_dequant_packing_key(args) : "")
               : nullptr;
  auto p = make_quant_matmul_dequant(args, validate_quant_matmul_dequant(args), packed);
  if (packed_b) p->packed = *packed_b;
  return PreparedQuantMatmulDequant(std::move(p));
}

std::optional<Tensor> quant_matmul_dequant_through_memo(const QuantMatmulDequantArgs& args,
                                                        const PackedB& packed_b,
                                                        DispatchInfo* info) {
  using P = PreparedQuantMatmulDequant::Impl;
  const char* op = "QuantMatmulDequant";
  auto matches = [&](const P& e) {
    return is_matrix(args.x, DType::kFloat16, e.m, e.k) && !args.x_offset &&
           args.transpose_weight == e.args.transpose_weight &&
           args.x_quant_mode == e.args.x_quant_mode &&
           same_optional(args.weight_scale, e.args.weight_scale) &&
           same_optional(args.bias, e.args.bias) && same_optional(args.x_scale, e.args.x_scale) &&
           same_optional(args.smooth_scale, e.args.smooth_scale);
  };
  auto prepare = [&](const PackedB::Impl& packed) {
    packed_for_call(packed_b, op, args.weight, quant_matmul_dequant_packing_key(args));
    return make_quant_matmul_dequant(args, validate_quant_matmul_dequant(args), &packed);
  };
  auto run = [&](const P& p) {
    Tensor y = Tensor::uninitialized(DType::kFloat16, {p.m, p.n});  // written in full
    run_quant_matmul_dequant(p, args.x->bytes.data(), args.weight->bytes.data(), y.bytes.data());
    return y;
  };
  return through_memo<P>(packed_b, op, args.weight, matches, prepare, run, info);
}

const DispatchInfo& PreparedQuantMatmulDequant::info() const {
  static const DispatchInfo empty{
      "", "an empty PreparedQuantMatmulDequant (make it with prepare_quant_matmul_dequant)"};
  return impl_ ? impl_->info : empty;
}

void PreparedQuantMatmulDequant::run(const void* x, const void* weight, void* y) const {
  const char* op = "QuantMatmulDequant";
  if (!impl_)
    invalid(op, "an empty PreparedQuantMatmulDequant; make it with prepare_quant_matmul_dequant");
  const Impl& p = *impl_;
  require_pointer(op, "x", x);
  require_pointer(op, "weight", weight);
  require_pointer(op, "y", y);
  if (p.packed_impl && weight != p.packed_impl->source)
    invalid(op, "prepared run: weight is not the tensor packed_b was prepacked from");
  run_quant_matmul_dequant(p, x, weight, y);
}

}  // namespace mmtune::runtime
