// Prepared calls (mmtune.h: Gemm, QLinearMatMul, QGemm): validation, the kernel's choice, the
// buffers' description and the quantization parameters' widening done once; run() fills in the host
// pointers of copies of the described buffers and calls the kernel. Nothing on run()'s path
// allocates, formats or parses (but a transposed operand without a PackedB, materialized per run,
// and the reference fallback).
#include <cstring>

#include "mmtune/mmtune.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/qgemm_host.h"
#include "runtime/host/qlinear_matmul_host.h"
#include "runtime/src/calls.h"
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

// A copy of `bytes` bytes at `data` as a tensor (the reference fallback and per-run transposes).
Tensor tensor_at(const void* data, DType t, const Shape& shape) {
  Tensor x(t, shape);
  if (!x.bytes.empty()) std::memcpy(x.bytes.data(), data, x.bytes.size());
  return x;
}

void require_pointer(const char* op, const char* name, const void* p) {
  if (!p) invalid(op, "prepared run: ", name, " is null");
}

// A Gemm-shaped run's pointers (Gemm, QGemm): A, B, Y, and C where it was prepared with one; with
// a PackedB, B the tensor it was packed from.
void require_run(const char* op, const PackedB& packed, const void* a, const void* b, bool has_c,
                 const void* c, const void* y) {
  require_pointer(op, "A", a);
  require_pointer(op, "B", b);
  require_pointer(op, "Y", y);
  if (has_c) require_pointer(op, "C", c);
  if (!packed.empty() && b != packed.impl()->source)
    invalid(op, "prepared run: B is not the tensor packed_b was prepacked from");
}

// The kernel's operands of a Gemm-shaped run: A transposed into `a_t` under transA; B the panels
// when prepacked, else transposed into `b_t` under transB.
void canonical_operands(const Chosen& chosen, bool trans_a, bool trans_b, DType ta, DType tb,
                        const Shape& a_shape, const Shape& b_shape, const void*& a, const void*& b,
                        Tensor& a_t, Tensor& b_t) {
  if (trans_a) {
    a_t = transposed(tensor_at(a, ta, a_shape));
    a = a_t.bytes.data();
  }
  if (chosen.panels) {
    b = chosen.panels->panels.bytes.data();
  } else if (trans_b) {
    b_t = transposed(tensor_at(b, tb, b_shape));
    b = b_t.bytes.data();
  }
}

}  // namespace

struct PreparedGemm::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;  // keeps the panels alive
  DType t = DType::kFloat32;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, has_c = false;
  float alpha = 1.0f, beta = 0.0f;
  FloatContract contract = FloatContract::kStrict;
  Shape c_shape;
  Tensor zero_c;  // the absent C: beta = 0 over a zero scalar
  Arg a, b, c, y;
};

PreparedGemm prepare_gemm(const GemmArgs& args, const PackedB* packed_b) {
  const GemmPlan plan = validate_gemm(args);
  const PackedB::Impl* packed =
      packed_b ? &packed_for_call(*packed_b, "Gemm", args.b, args.b ? gemm_packing_key(args) : "")
               : nullptr;
  auto p = std::make_shared<PreparedGemm::Impl>();
  if (packed_b) p->packed = *packed_b;
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
  p->zero_c = Tensor(p->t, {});
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
    p->c.describe(view(p->has_c ? *args.c : p->zero_c, {plan.m, plan.n}));
    p->y.describe(view_matrix(nullptr, p->t, 0, plan.m, plan.n));
    if (p->trans_a || (p->trans_b && !p->chosen.panels))
      p->info.reason +=
          "; a transposed operand is materialized on each run (prepack_b avoids it "
          "for B)";
  }
  return PreparedGemm(std::move(p));
}

const DispatchInfo& PreparedGemm::info() const {
  static const DispatchInfo empty{"", "an empty PreparedGemm (make it with prepare_gemm)"};
  return impl_ ? impl_->info : empty;
}

void PreparedGemm::run(const void* a, const void* b, const void* c, void* y) const {
  if (!impl_) invalid("Gemm", "an empty PreparedGemm; make it with prepare_gemm");
  const Impl& p = *impl_;
  require_run("Gemm", p.packed, a, b, p.has_c, c, y);
  const Shape a_shape = p.trans_a ? Shape{p.k, p.m} : Shape{p.m, p.k};
  const Shape b_shape = p.trans_b ? Shape{p.n, p.k} : Shape{p.k, p.n};
  if (!p.chosen.kernel) {
    // The reference, on copies (exact; the slow path the plain call takes too).
    const Tensor at = tensor_at(a, p.t, a_shape), bt = tensor_at(b, p.t, b_shape);
    const Tensor ct = p.has_c ? tensor_at(c, p.t, p.c_shape) : Tensor();
    GemmArgs args;
    args.a = &at;
    args.b = &bt;
    args.c = p.has_c ? &ct : nullptr;
    args.alpha = p.alpha;
    args.beta = p.beta;
    args.trans_a = p.trans_a;
    args.trans_b = p.trans_b;
    args.contract = p.contract;
    const Tensor out = mmtune::gemm(args);
    if (!out.bytes.empty()) std::memcpy(y, out.bytes.data(), out.bytes.size());
    return;
  }
  Tensor a_t, b_t;
  canonical_operands(p.chosen, p.trans_a, p.trans_b, p.t, p.t, a_shape, b_shape, a, b, a_t, b_t);
  halide_buffer_t ab = p.a.at(a), bb = p.b.at(b), cb = p.c.at(p.has_c ? c : p.zero_c.bytes.data()),
                  yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<GemmKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &ab, &bb, &cb, p.alpha, p.beta, &yb));
}

struct PreparedQLinearMatMul::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;
  QLinearMatMulArgs args;  // the scale / zero-point tensors below; a, b replaced per fallback run
  Tensor a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point;
  QLinearMatMulEntryParams params;  // widened once
  Tensor no_sums;                   // the column sums an unprepacked kernel does not read
  DType a_type = DType::kUInt8, b_type = DType::kUInt8, y_type = DType::kUInt8;
  int64_t m = 0, n = 0, k = 0;
  Arg a, b, as, az, bs, bz, sums, y;
};

PreparedQLinearMatMul prepare_qlinear_matmul(const QLinearMatMulArgs& args,
                                             const PackedB* packed_b) {
  const QLinearMatMulPlan plan = validate_qlinear_matmul(args);
  if (args.a->rank() != 2 || args.b->rank() != 2) {
    invalid("QLinearMatMul", "a is ", describe(*args.a), " and b ", describe(*args.b),
            "; prepared calls take 2-D a and b (qlinear_matmul() takes batches and vectors)");
  }
  const PackedB::Impl* packed = packed_b ? &packed_for_call(*packed_b, "QLinearMatMul", args.b,
                                                            qlinear_matmul_packing_key(args))
                                         : nullptr;
  auto p = std::make_shared<PreparedQLinearMatMul::Impl>();
  if (packed_b) p->packed = *packed_b;
  // The parameters are kept (copies): the fallback and the widening read them.
  p->a_scale = *args.a_scale;
  p->a_zero_point = *args.a_zero_point;
  p->b_scale = *args.b_scale;
  p->b_zero_point = *args.b_zero_point;
  p->y_scale = *args.y_scale;
  p->y_zero_point = *args.y_zero_point;
  p->args = args;
  p->args.a_scale = &p->a_scale;
  p->args.a_zero_point = &p->a_zero_point;
  p->args.b_scale = &p->b_scale;
  p->args.b_zero_point = &p->b_zero_point;
  p->args.y_scale = &p->y_scale;
  p->args.y_zero_point = &p->y_zero_point;
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
    p->as.describe(view(p->params.a_scale, p->params.a_scale.shape));
    p->az.describe(view(p->params.a_zero_point, p->params.a_zero_point.shape));
    p->bs.describe(view(p->params.b_scale, p->params.b_scale.shape));
    p->bz.describe(view(p->params.b_zero_point, p->params.b_zero_point.shape));
    const Tensor& sums =
        p->chosen.panels && !packed->column_sums.bytes.empty() ? packed->column_sums : p->no_sums;
    p->sums.describe(view(sums, sums.shape));
    p->y.describe(view_matrix(nullptr, p->y_type, 0, p->m, p->n));
  }
  return PreparedQLinearMatMul(std::move(p));
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
  if (!p.packed.empty() && b != p.packed.impl()->source)
    invalid("QLinearMatMul", "prepared run: b is not the tensor packed_b was prepacked from");
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
  const Tensor& sums = p.chosen.panels && !p.packed.impl()->column_sums.bytes.empty()
                           ? p.packed.impl()->column_sums
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

struct PreparedQGemm::Impl {
  DispatchInfo info;
  Chosen chosen;
  PackedB packed;
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

PreparedQGemm prepare_qgemm(const QGemmArgs& args, const PackedB* packed_b) {
  const QGemmPlan plan = validate_qgemm(args);
  const PackedB::Impl* packed =
      packed_b ? &packed_for_call(*packed_b, "QGemm", args.b, args.b ? qgemm_packing_key(args) : "")
               : nullptr;
  auto p = std::make_shared<PreparedQGemm::Impl>();
  if (packed_b) p->packed = *packed_b;
  // The parameters are kept (copies): the fallback reads them; the kernel's are widened once.
  p->args = args;
  auto keep = [](const Tensor* from, Tensor& into) -> const Tensor* {
    if (!from) return nullptr;
    into = *from;
    return &into;
  };
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
  return PreparedQGemm(std::move(p));
}

const DispatchInfo& PreparedQGemm::info() const {
  static const DispatchInfo empty{"", "an empty PreparedQGemm (make it with prepare_qgemm)"};
  return impl_ ? impl_->info : empty;
}

void PreparedQGemm::run(const void* a, const void* b, const void* c, void* y) const {
  if (!impl_) invalid("QGemm", "an empty PreparedQGemm; make it with prepare_qgemm");
  const Impl& p = *impl_;
  const bool has_c = p.args.c != nullptr;
  require_run("QGemm", p.packed, a, b, has_c, c, y);
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
  Tensor a_t, b_t;
  canonical_operands(p.chosen, p.args.trans_a, p.args.trans_b, p.a_type, p.b_type, a_shape, b_shape,
                     a, b, a_t, b_t);
  const Tensor& sums = p.chosen.panels ? p.packed.impl()->column_sums : p.no_sums;
  halide_buffer_t ab = p.a.at(a), bb = p.b.at(b), cb = p.c.at(has_c ? c : p.zero_c.bytes.data()),
                  bsb = p.bsa.at(p.bs.bytes.data()), bzb = p.bza.at(p.bz.bytes.data()),
                  sb = p.sums.at(sums.bytes.data()), yb = p.y.at(y);
  KernelCall call(*p.chosen.kernel);
  const auto fn = reinterpret_cast<QGemmKernelFn>(p.chosen.kernel->fn);
  call.check(fn(call.user_context(), &ab, &bb, &cb, p.a_scale_value, p.a_zero_value, &bsb, &bzb,
                &sb, p.y_scale_value, p.y_zero_value, p.args.alpha, &yb));
}

}  // namespace mmtune::runtime
