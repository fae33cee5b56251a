// Shared matmul algorithm pieces of the generators.
#include "generators/matmul_core.h"

#include "reference/error.h"

namespace mmtune::gen {

using namespace Halide;

namespace {

// packed_b(kk, jj, kg, jp) = b(jp * panel + jj, kg * g + kk), zero beyond K; or the prepacked one,
// whose panels hold `groups` K groups each (the sum may read that many: zero beyond K).
void define_grouped_packed_b(schedules::MatmulPipeline& p, const Func& b, const Expr& k_extent,
                             const Expr& groups) {
  const int panel = p.layout.panel;
  const int g = p.layout.k_group;
  Var kk("kk"), kg("kg"), jj("jj"), jp("jp");
  if (p.prepacked.defined()) {
    p.packed_b(kk, jj, kg, jp) = p.prepacked(kk + g * jj, kg + groups * jp);
    return;
  }
  p.packed_b(kk, jj, kg, jp) =
      select(kg * g + kk < k_extent, b(jp * panel + jj, kg * g + kk), cast(b.type(), 0));
}

}  // namespace

void build_matmul(schedules::MatmulPipeline& p, const Func& a, const Func& b, const Expr& k_extent,
                  const Expr& zero, const MatmulStep& step) {
  const Var& j = p.j;
  const Var& i = p.i;
  const int panel = p.layout.panel;
  if (p.layout.k_group > 1) {
    // Groups of k_group consecutive k; the padding beyond K is zero in both operands, so the sum is
    // unchanged (this form is only used for exact integer sums, where order does not matter).
    const int g = p.layout.k_group;
    Var kk("kk"), kg("kg"), y("y");
    p.r = RDom(0, g, 0, (k_extent + g - 1) / g, "r");
    p.packed_a(kk, kg, y) = select(kg * g + kk < k_extent, a(kg * g + kk, y), cast(a.type(), 0));
    define_grouped_packed_b(p, b, k_extent, (k_extent + g - 1) / g);
    p.acc(j, i) = zero;
    p.acc(j, i) = step(p.acc(j, i), p.packed_a(p.r.x, p.r.y, i),
                       p.packed_b(p.r.x, j % panel, p.r.y, j / panel));
    return;
  }
  p.r = RDom(0, k_extent, "r");
  Expr b_value;
  if (p.layout.pack_b) {
    Var jj("jj"), k("k"), jp("jp");
    if (p.prepacked.defined()) {
      p.packed_b(jj, k, jp) = p.prepacked(jj, k + k_extent * jp);
    } else {
      p.packed_b(jj, k, jp) = b(jp * panel + jj, k);
    }
    b_value = p.packed_b(j % panel, p.r, j / panel);
  } else {
    b_value = b(j, p.r);
  }
  p.a = a;
  p.acc(j, i) = zero;
  p.acc(j, i) = step(p.acc(j, i), a(p.r, i), b_value);
}

void build_dot8_matmul(schedules::MatmulPipeline& p, const Func& a, const Func& b,
                       const Expr& k_extent) {
  auto product = [](const Expr& av, const Expr& bv) {
    return cast(Int(32), av) * cast(Int(32), bv);
  };
  if (p.layout.k_group == 1) {
    build_matmul(p, a, b, k_extent, cast(UInt(32), 0),
                 [&](const Expr& sum, const Expr& av, const Expr& bv) {
                   return sum + cast(UInt(32), product(av, bv));
                 });
    return;
  }
  const Var& j = p.j;
  const Var& i = p.i;
  const int panel = p.layout.panel;
  const int g = p.layout.k_group;
  Var kk("kk"), kg("kg"), y("y"), kb("kb");
  const Type a_type = p.layout.widen_a ? Int(16) : a.type();
  p.packed_a(kk, kg, y) =
      select(kg * g + kk < k_extent, cast(a_type, a(kg * g + kk, y)), cast(a_type, 0));
  // K in nb blocks of bg groups (bg * g <= 2^15 products). The sizes are computed in uint32: in
  // int32 the simplifier may rewrite n + (n + c) / d into a form that overflows for large K.
  // (runtime/host/packed_b.cc packed_groups mirrors this for a prepacked B.)
  const int max_groups = (1 << 15) / g;
  const Expr groups = cast(UInt(32), (k_extent + g - 1) / g);
  const Expr nb = (groups + cast(UInt(32), max_groups - 1)) / cast(UInt(32), max_groups);
  Expr bg = (groups + nb - cast(UInt(32), 1)) / max(nb, cast(UInt(32), 1));
  if (p.layout.group_align > 1) {
    const Expr align = cast(UInt(32), p.layout.group_align);
    bg = (bg + align - cast(UInt(32), 1)) / align * align;
  }
  define_grouped_packed_b(p, b, k_extent, cast(Int(32), nb * bg));
  if (p.layout.amx) {
    // AMX: the tile's int32 sum over all nb * bg groups (a multiple of 16: whole 64-byte steps,
    // the padding zero in both operands) in one tile register. The tile multiply wraps mod 2^32
    // (no saturation), so no K blocks are needed for exactness: the sum is the blocked sum's value
    // mod 2^32. part(jj, i, jp) is column jp * 16 + jj; its operands are plain loads of the staged
    // A groups and of B's panels, in the form Halide's AMX lowering recognizes.
    MMTUNE_CHECK(g == 4 && panel == 16, "an AMX sum needs K groups of 4 and panels of 16");
    Var jj("jj"), jp("jp");
    // r.x: the 64 bytes of one tile step (16 groups of 4), r.y: the step.
    const int step = schedules::kAmxTileGroups;
    const RDom r(0, g * step, 0, cast(Int(32), nb * bg) / step, "r");
    p.r = r;
    const Expr kg = r.x / g + step * r.y;
    p.part(jj, i, jp) = cast(Int(32), 0);
    p.part(jj, i, jp) += product(p.packed_a(r.x % g, kg, i), p.packed_b(r.x % g, jj, kg, jp));
    // The tile's copy to memory in the tile's own coordinates (a plain 2-D store of the tile: the
    // lowering recognizes no other), read by column as acc.
    p.amx_out(jj, i, jp) = p.part(jj, i, jp);
    p.acc(j, i) = reinterpret(UInt(32), p.amx_out(j % panel, i, j / panel));
    return;
  }
  p.r = RDom(0, g, 0, cast(Int(32), bg), "r");  // r.x = kk, r.y = the group within the block
  p.rb = RDom(0, cast(Int(32), nb), "rb");
  // The last block may run past K by up to nb - 1 groups: the packed operands are zero there.
  const Expr group = kb * cast(Int(32), bg) + p.r.y;
  p.part(j, i, kb) = cast(Int(32), 0);
  p.part(j, i, kb) +=
      product(p.packed_a(p.r.x, group, i), p.packed_b(p.r.x, j % panel, group, j / panel));
  p.acc(j, i) = cast(UInt(32), 0);
  p.acc(j, i) += reinterpret(UInt(32), p.part(j, i, p.rb));
}

Func clamped_matrix(const Func& input, const Expr& width, const Expr& height, bool transpose,
                    const std::string& name, KAxis k_axis) {
  Var x("x"), y("y");
  Func f(name);
  // The sum reads K in range, so K's clamp is likely a no-op: Halide's loop partitioning then
  // gives the loops over K a steady state without it (otherwise each unrolled K step clamps its
  // index, and in a parallel task's closure those clamps take the registers the tile needs). It
  // stays, for the reads the grouped form pads past K (select evaluates both sides).
  const Expr cx = k_axis == KAxis::kColumns ? likely(x) : Expr(x);
  const Expr cy = k_axis == KAxis::kRows ? likely(y) : Expr(y);
  // (x, y) = (column, row) of the logical matrix; a transposed input stores it as (row, column).
  if (transpose) {
    f(x, y) = input(clamp(cy, 0, height - 1), clamp(cx, 0, width - 1));
  } else {
    f(x, y) = input(clamp(cx, 0, width - 1), clamp(cy, 0, height - 1));
  }
  return f;
}

Func clamped_rows(const Func& input, const Expr& height, const std::string& name) {
  Var x("x"), y("y");
  Func f(name);
  f(x, y) = input(x, clamp(y, 0, height - 1));
  return f;
}

Expr fused_multiply_add(const Expr& a, const Expr& b, const Expr& c) {
  const Type t = a.type();
  MMTUNE_CHECK(t.is_float() && (t.bits() == 32 || t.bits() == 64) && b.type() == t && c.type() == t,
               "fused_multiply_add of " << a.type() << ", " << b.type() << ", " << c.type());
  return Internal::Call::make(t, t.bits() == 32 ? "llvm.fma.f32" : "llvm.fma.f64", {a, b, c},
                              Internal::Call::PureExtern);
}

Expr saturate_to(const Type& t, const Expr& v) { return cast(t, clamp(v, t.min(), t.max())); }

DType dtype_of(const Type& t) {
  if (t.is_bfloat()) return DType::kBFloat16;
  if (t.is_float())
    return t.bits() == 16 ? DType::kFloat16 : t.bits() == 32 ? DType::kFloat32 : DType::kFloat64;
  const bool s = t.is_int();
  switch (t.bits()) {
    case 8:
      return s ? DType::kInt8 : DType::kUInt8;
    case 16:
      return s ? DType::kInt16 : DType::kUInt16;
    case 32:
      return s ? DType::kInt32 : DType::kUInt32;
    case 64:
      return s ? DType::kInt64 : DType::kUInt64;
    default:
      break;
  }
  MMTUNE_CHECK(false, "no mmtune dtype for Halide type " << t);
}

}  // namespace mmtune::gen
