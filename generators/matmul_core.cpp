// Shared matmul algorithm pieces of the generators.
#include "generators/matmul_core.h"

namespace mmtune::gen {

using namespace Halide;

MatmulCore build_matmul(const Func& a, const Func& b, const Expr& k_extent, const Expr& zero,
                        const MatmulStep& step, int panel, bool pack_b, int k_group) {
  MatmulCore m;
  m.panel = panel;
  m.k_group = k_group;
  if (k_group > 1) {
    // Groups of k_group consecutive k; the padding beyond K is zero in both operands, so the sum is
    // unchanged (this form is only used for exact integer sums, where order does not matter).
    const int g = k_group;
    Var kk("kk"), kg("kg"), jj("jj"), jp("jp"), y("y");
    m.r = RDom(0, g, 0, (k_extent + g - 1) / g, "r");
    m.packed_a(kk, kg, y) = select(kg * g + kk < k_extent, a(kg * g + kk, y), cast(a.type(), 0));
    m.packed_b(kk, jj, kg, jp) =
        select(kg * g + kk < k_extent, b(jp * panel + jj, kg * g + kk), cast(b.type(), 0));
    const Var& j = m.j;
    const Var& i = m.i;
    m.acc(j, i) = zero;
    m.acc(j, i) = step(m.acc(j, i), m.packed_a(m.r.x, m.r.y, i), m.packed_b(m.r.x, j % panel, m.r.y, j / panel));
    return m;
  }
  m.r = RDom(0, k_extent, "r");
  const Var& j = m.j;
  const Var& i = m.i;
  Expr b_value;
  if (pack_b) {
    Var jj("jj"), k("k"), jp("jp");
    m.packed_b(jj, k, jp) = b(jp * panel + jj, k);
    b_value = m.packed_b(j % panel, m.r, j / panel);
  } else {
    b_value = b(j, m.r);
  }
  m.acc(j, i) = zero;
  m.acc(j, i) = step(m.acc(j, i), a(m.r, i), b_value);
  return m;
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

Expr saturate_to(const Type& t, const Expr& v) {
  return cast(t, clamp(v, t.min(), t.max()));
}

}  // namespace mmtune::gen
