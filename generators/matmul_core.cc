// Shared matmul algorithm pieces of the generators.
#include "generators/matmul_core.h"

#include "reference/error.h"

namespace mmtune::gen {

using namespace Halide;

void build_matmul(schedules::MatmulPipeline& p, const Func& a, const Func& b, const Expr& k_extent,
                  const Expr& zero, const MatmulStep& step) {
  const Var& j = p.j;
  const Var& i = p.i;
  const int panel = p.layout.panel;
  if (p.layout.k_group > 1) {
    // Groups of k_group consecutive k; the padding beyond K is zero in both operands, so the sum is
    // unchanged (this form is only used for exact integer sums, where order does not matter).
    const int g = p.layout.k_group;
    Var kk("kk"), kg("kg"), jj("jj"), jp("jp"), y("y");
    p.r = RDom(0, g, 0, (k_extent + g - 1) / g, "r");
    p.packed_a(kk, kg, y) = select(kg * g + kk < k_extent, a(kg * g + kk, y), cast(a.type(), 0));
    p.packed_b(kk, jj, kg, jp) =
        select(kg * g + kk < k_extent, b(jp * panel + jj, kg * g + kk), cast(b.type(), 0));
    p.acc(j, i) = zero;
    p.acc(j, i) = step(p.acc(j, i), p.packed_a(p.r.x, p.r.y, i),
                       p.packed_b(p.r.x, j % panel, p.r.y, j / panel));
    return;
  }
  p.r = RDom(0, k_extent, "r");
  Expr b_value;
  if (p.layout.pack_b) {
    Var jj("jj"), k("k"), jp("jp");
    p.packed_b(jj, k, jp) = b(jp * panel + jj, k);
    b_value = p.packed_b(j % panel, p.r, j / panel);
  } else {
    b_value = b(j, p.r);
  }
  p.acc(j, i) = zero;
  p.acc(j, i) = step(p.acc(j, i), a(p.r, i), b_value);
}

Func clamped_matrix(const Func& input, const Expr& width, const Expr& height, bool transpose,
                    const std::string& name) {
  Var x("x"), y("y");
  Func f(name);
  // (x, y) = (column, row) of the logical matrix; a transposed input stores it as (row, column).
  if (transpose) {
    f(x, y) = input(clamp(y, 0, height - 1), clamp(x, 0, width - 1));
  } else {
    f(x, y) = input(clamp(x, 0, width - 1), clamp(y, 0, height - 1));
  }
  return f;
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
