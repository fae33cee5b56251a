// The cuda_matmul schedule template (see matmul_params.h for the knobs and their meaning).
//
// Where each part runs. Halide 21 compiles CUDA kernels with fast-math options that strict_float
// does not lift (CodeGen_PTX_Dev::compile_to_src: FMA contraction, unsafe FP math, no NaNs or
// Infs), so a float step on the GPU may be fused or folded: placed on the GPU, the Gemm epilogue's
// v + c * beta and QLinearMatMul's float64 requantization acc * m + zp each become one fma. The GPU
// therefore runs what is exact there: the K sum (validate() admits only the sums that are) and the
// producers without a float step (the column and row sums of the 8-bit operators). The output's
// epilogue and the producers with a float step (a row's quantization, scales) run on the host,
// whose code generation keeps strict_float; Halide copies the sums back once, as it would copy the
// output.
#include "schedules/cuda/matmul_schedule.h"

#include <set>
#include <string>

#include "reference/error.h"

namespace mmtune::schedules {

using namespace Halide;

namespace {

// Host vector width of the epilogue and of host producers (LLVM splits wider vectors to the host's
// SIMD registers).
constexpr int kHostLanes = 8;
// Threads per block of the producers' kernels (one-dimensional ones; two-dimensional: 16 x 16).
constexpr int kProducerThreads = 64;

// Whether a Func computes with values of a type `of` selects: any such expression in its
// definitions or in those of the Funcs inlined into it. Funcs named in `computed` are scheduled on
// their own: a call to one is a value, not a step.
class FindsType : public Internal::IRGraphVisitor {
 public:
  FindsType(bool (*of)(const Type&), const std::set<std::string>& computed)
      : of_(of), computed_(computed) {}

  bool in(const Func& f) {
    visit_function(f.function());
    return found_;
  }

 private:
  using IRGraphVisitor::visit;

  void visit_function(const Internal::Function& f) {
    if (!seen_.insert(f.name()).second) return;
    auto definition = [&](const Internal::Definition& d) {
      for (const Expr& e : d.values()) include(e);
      for (const Expr& e : d.args()) include(e);
      if (d.predicate().defined()) include(d.predicate());
    };
    definition(f.definition());
    for (const Internal::Definition& u : f.updates()) definition(u);
  }

  void include(const Expr& e) override {
    if (of_(e.type())) found_ = true;
    IRGraphVisitor::include(e);
  }

  void visit(const Internal::Call* op) override {
    IRGraphVisitor::visit(op);
    if (op->call_type == Internal::Call::Halide && op->func.defined()) {
      const Internal::Function callee(op->func);
      if (!computed_.count(callee.name())) visit_function(callee);
    }
  }

  bool (*of_)(const Type&);
  const std::set<std::string>& computed_;
  std::set<std::string> seen_;
  bool found_ = false;
};

bool is_float_type(const Type& t) { return t.is_float() || t.is_bfloat(); }
bool is_bfloat_type(const Type& t) { return t.is_bfloat(); }

// The Funcs the K update of `f` reads its two operands from: the one indexed by the output row i
// (A's side) and the one indexed by the output column j (B's side).
struct Operands {
  Func a, b;
};

Operands operands_of(const Func& f, const Var& j, const Var& i) {
  class Reads : public Internal::IRGraphVisitor {
   public:
    std::vector<const Internal::Call*> calls;

   private:
    using IRGraphVisitor::visit;
    void visit(const Internal::Call* op) override {
      if (op->call_type == Internal::Call::Halide && op->func.defined()) calls.push_back(op);
      IRGraphVisitor::visit(op);
    }
  } reads;
  for (const Expr& e : f.function().update(0).values()) e.accept(&reads);
  Operands ops;
  for (const Internal::Call* c : reads.calls) {
    if (c->name == f.name()) continue;
    bool row = false, column = false;
    for (const Expr& arg : c->args) {
      row |= Internal::expr_uses_var(arg, i.name());
      column |= Internal::expr_uses_var(arg, j.name());
    }
    if (row && !column) ops.a = Func(Internal::Function(c->func));
    if (column && !row) ops.b = Func(Internal::Function(c->func));
  }
  MMTUNE_CHECK(ops.a.defined() && ops.b.defined(),
               "the K update of " << f.name() << " reads no operand by row and by column");
  return ops;
}

// The pure vars of f that stage `s` (0: the pure definition, u + 1: update u) keeps as plain
// arguments, in order.
std::vector<Var> pure_vars(const Func& f, int s) {
  std::vector<Var> vars = f.args();
  if (s == 0) return vars;
  std::vector<Var> kept;
  for (const Var& v : vars) {
    for (const Expr& arg : f.function().update(s - 1).args()) {
      const auto* var = arg.as<Internal::Variable>();
      if (var && var->name == v.name()) kept.push_back(v);
    }
  }
  return kept;
}

// A producer on the GPU, once per call: its pure vars over blocks and threads in every stage (a
// stage's reduction stays inside one thread, in order).
void schedule_on_gpu(Func f) {
  f.compute_root();
  for (int s = 0; s <= f.num_update_definitions(); ++s) {
    Stage stage = s == 0 ? Stage(f) : f.update(s - 1);
    const std::vector<Var> v = pure_vars(f, s);
    Var bx("bx"), by("by"), tx("tx"), ty("ty");
    if (v.size() >= 2) {
      stage.gpu_tile(v[0], v[1], bx, by, tx, ty, 16, 16, TailStrategy::GuardWithIf);
    } else if (v.size() == 1) {
      stage.gpu_tile(v[0], bx, tx, kProducerThreads, TailStrategy::GuardWithIf);
    } else {
      stage.gpu_single_thread();
    }
  }
}

// A producer on the host, once per call: rows (its last dimension) in parallel, its first
// vectorized when it has another.
void schedule_on_host(Func f) {
  f.compute_root();
  const std::vector<Var> args = f.args();
  if (args.empty()) return;
  if (args.size() > 1) f.vectorize(args[0], kHostLanes, TailStrategy::GuardWithIf);
  for (int s = 0; s <= f.num_update_definitions(); ++s) {
    const std::vector<Var> v = pure_vars(f, s);
    if (!v.empty() && v.back().name() == args.back().name()) {
      (s == 0 ? Stage(f) : f.update(s - 1)).parallel(args.back());
    }
  }
}

}  // namespace

void schedule_cuda_matmul(MatmulPipeline& p, const CudaMatmulParams& params, Accumulator kind) {
  const int rows = params.tile_rows, cols = params.tile_cols;
  const int t_rows = params.thread_rows, t_cols = params.thread_cols;
  const int threads_x = cols / t_cols, threads_y = rows / t_rows;
  const int g = p.layout.k_group;
  const bool staged = params.k_tile > 0;
  const Var j = p.j, i = p.i;

  // The epilogue, on the host. Outputs start at (0, 0), so block tiles start at multiples of the
  // tile (and of the packed panel: j % panel, j / panel simplify to the block's loop variables).
  Func out = p.out;
  out.output_buffer().dim(0).set_min(0).dim(1).set_min(0);
  out.vectorize(j, kHostLanes, TailStrategy::GuardWithIf).parallel(i);

  // The sums, on the GPU: one kernel over blocks of rows x cols outputs (whole blocks: the inputs
  // are clamped, the sum buffer is rounded up), each thread storing its own outputs' sums.
  Func acc = p.acc;
  Func sum = acc.in();
  Var jb("jb"), ib("ib"), jt("jt"), it("it"), jx("jx"), iy("iy"), jq("jq"), iq("iq");
  RVar ko("ko"), ki("ki"), kio("kio"), kii("kii");
  sum.compute_root().tile(j, i, jb, ib, jt, it, cols, rows, TailStrategy::RoundUp);
  // A thread (jx, iy) owns t_rows adjacent rows and t_cols columns of the block: adjacent ones when
  // its sums live in its registers (a box Halide computes per thread), every threads_x-th one when
  // they live in the block's shared memory (so that a warp reads adjacent columns).
  if (staged) {
    sum.split(jt, jq, jx, threads_x).split(it, iy, iq, t_rows);
  } else {
    sum.tile(jt, it, jx, iy, jq, iq, t_cols, t_rows);
  }
  sum.reorder(jq, iq, jx, iy, jb, ib).gpu_blocks(jb, ib).gpu_threads(jx, iy).unroll(jq).unroll(iq);

  // The Func whose update runs over K: the blocked sum of grouped 8-bit products sums each K block
  // in `part`, which `acc` adds up block after block (rb).
  const bool blocked = p.part.defined();
  MMTUNE_CHECK(blocked || g == 1, "a grouped K sum without K blocks (k_group " << g << ")");
  Func k_sum = blocked ? p.part : acc;
  const Operands ops = operands_of(k_sum, j, i);
  // Halide 21's PTX backend aborts on a bfloat16 -> float32 conversion (an LLVM "Invalid cast"
  // assertion): an operand widened from bfloat16 is widened on the host (exactly), the GPU reads
  // its float32 copy.
  const std::set<std::string> none;
  for (const Func& operand : {ops.a, ops.b}) {
    if (FindsType(is_bfloat_type, none).in(operand)) schedule_on_host(operand);
  }

  if (staged) {
    // The block's sums in shared memory; per K tile, the block's threads load the tile's A rows and
    // B columns into shared memory, then add the tile's products to the block's sums. The tile loop
    // ko runs at block level, its loads and sums between barriers.
    // Thread (jx, iy) of a stage owns t_rows adjacent rows and t_cols columns: adjacent ones
    // (`adjacent`) or every threads_x-th one (a warp then touches adjacent words of shared memory).
    auto by_threads = [&](Stage s, bool adjacent, const std::vector<VarOrRVar>& inner,
                          const std::vector<VarOrRVar>& outer) {
      if (adjacent) {
        s.split(j, jx, jq, t_cols);
      } else {
        s.split(j, jq, jx, threads_x);
      }
      s.split(i, iy, iq, t_rows);
      std::vector<VarOrRVar> order{jq, iq};
      order.insert(order.end(), inner.begin(), inner.end());
      order.insert(order.end(), {jx, iy});
      order.insert(order.end(), outer.begin(), outer.end());
      s.reorder(order).gpu_threads(jx, iy).unroll(jq).unroll(iq);
      return s;
    };
    acc.compute_at(sum, jb);
    by_threads(acc, false, {}, {});
    if (blocked) {
      by_threads(acc.update(), false, {}, {p.rb});
      k_sum.compute_at(acc, p.rb);
      by_threads(k_sum, false, {}, {});
    }
    // K tiles of k_tile (grouped: r.x is kk within a group, r.y the group; tiles of whole groups).
    Stage update = k_sum.update();
    update.split(g > 1 ? p.r.y : p.r.x, ko, ki, params.k_tile / g);
    Func reads = k_sum;  // the Func that reads the staged operands
    if (kind.exact) {
      // An exact integer sum, whose order is free: each thread sums a K tile of its outputs in
      // registers (tile_sum, an rfactor over the tiles) and adds them to the block's sums once per
      // tile; each group of four 8-bit products is one dp4a.
      Var u("u");
      Func tile_sum = update.rfactor(ko, u);
      by_threads(k_sum.update(), true, {}, {ko});
      tile_sum.compute_at(k_sum, jx).unroll(j).unroll(i);
      Stage t = tile_sum.update();
      t.split(ki, kio, kii, params.k_unroll);
      if (g > 1) {
        t.reorder(p.r.x, j, i, kii, kio).atomic().vectorize(p.r.x);
      } else {
        t.reorder(j, i, kii, kio);
      }
      t.unroll(j).unroll(i).unroll(kii);
      reads = tile_sum;
    } else {
      // A float sum keeps each output's K order: the thread adds each product to the block's sum in
      // shared memory, k ascending (tile after tile, in order within a tile).
      update.split(ki, kio, kii, params.k_unroll);
      by_threads(update, false, {kii, kio}, {ko}).unroll(kii);
    }
    const int k_extent = params.k_tile / g;  // K (or K groups) of a tile
    for (const bool a_side : {true, false}) {
      // A K tile of the operand as the sum reads it (grouped: K groups innermost, one word each),
      // loaded by the block's threads, adjacent threads reading adjacent elements: A's tile is
      // k_extent x rows, B's cols x k_extent.
      Func operand = a_side ? ops.a : ops.b;
      Func tile = operand.in(reads);
      const int x_extent = a_side ? k_extent : cols, y_extent = a_side ? rows : k_extent;
      tile.compute_at(k_sum, ko);
      const std::vector<Var> v = tile.args();
      const std::size_t first = g > 1 ? 1 : 0;
      if (g > 1) tile.bound_extent(v[0], g).vectorize(v[0]);
      Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
      tile.tile(v[first], v[first + 1], xo, yo, xi, yi, threads_x, threads_y,
                TailStrategy::GuardWithIf);
      std::vector<VarOrRVar> order;
      if (g > 1) order.emplace_back(v[0]);
      order.insert(order.end(), {xo, yo, xi, yi});
      tile.reorder(order).gpu_threads(xi, yi);
      if (x_extent > threads_x) tile.unroll(xo);
      if (y_extent > threads_y) tile.unroll(yo);
    }
  } else {
    // Each thread's sums in registers, K innermost-outer and in order; operands read from global
    // memory (cached), the grouped ones from packed copies made on the GPU first.
    acc.compute_at(sum, jx).unroll(j).unroll(i);
    Stage update = acc.update();
    if (blocked) {
      update.reorder(j, i, p.rb).unroll(j).unroll(i);
      k_sum.compute_at(acc, p.rb).unroll(j).unroll(i);
      update = k_sum.update();
    }
    if (g > 1) {
      // Exact integer sums only: each group of four 8-bit products is one dp4a.
      update.reorder(p.r.x, j, i, p.r.y).atomic().vectorize(p.r.x).unroll(j).unroll(i);
      if (params.k_unroll > 1) {
        update.split(p.r.y, ko, ki, params.k_unroll, TailStrategy::GuardWithIf).unroll(ki);
      }
      Func packed_a = p.packed_a;
      const std::vector<Var> a = packed_a.args();  // (kk, kg, i)
      Var bx("bx"), by("by"), tx("tx"), ty("ty");
      packed_a.compute_root().bound_extent(a[0], g).vectorize(a[0]).gpu_tile(
          a[1], a[2], bx, by, tx, ty, 16, 16, TailStrategy::GuardWithIf);
      // A prepacked B is read where the sum reads it: its packed_b view stays inline.
      if (!p.prepacked.defined()) {
        Func packed_b = p.packed_b;
        const std::vector<Var> b = packed_b.args();  // (kk, jj, kg, jp)
        packed_b.compute_root()
            .bound_extent(b[0], g)
            .bound_extent(b[1], cols)
            .vectorize(b[0])
            .gpu_tile(b[1], b[2], bx, by, tx, ty, 16, 16, TailStrategy::GuardWithIf)
            .gpu_blocks(b[3]);
      }
    } else {
      // K stays the thread's innermost-outer loop, ascending: only split, never reordered across
      // threads or rfactored, so each output's sum keeps its K order.
      update.reorder(j, i, p.r.x).unroll(j).unroll(i);
      if (params.k_unroll > 1) {
        update.split(p.r.x, ko, ki, params.k_unroll, TailStrategy::GuardWithIf).unroll(ki);
      }
    }
  }

  // Producers: on the GPU when exact there (no float step), otherwise on the host. Each is
  // computed once per call, before the sums.
  std::vector<Func> producers;
  for (const auto* role : {&p.per_row, &p.per_call, &p.row_sums, &p.per_column}) {
    producers.insert(producers.end(), role->begin(), role->end());
  }
  std::set<std::string> computed;
  for (const Func& f : producers) computed.insert(f.name());
  for (const Func& f : producers) {
    if (FindsType(is_float_type, computed).in(f)) {
      schedule_on_host(f);
    } else {
      schedule_on_gpu(f);
    }
  }
}

}  // namespace mmtune::schedules
