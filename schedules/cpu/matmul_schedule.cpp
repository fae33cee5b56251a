// CPU matmul schedule template (see matmul_params.h for the knobs and their meaning).
#include "schedules/cpu/matmul_schedule.h"

namespace mmtune::schedules {

using namespace Halide;

void schedule_cpu_matmul(CpuMatmulPipeline& p, const CpuMatmulParams& params, int lanes) {
  const gen::MatmulCore& core = *p.core;
  const int rows = params.tile_rows;
  const int width = params.tile_vectors * lanes;
  Func out = p.out;
  Var jb("jb"), jo("jo"), io("io"), ji("ji"), ii("ii");
  // Strips of n_block columns are the tasks; tiles of rows x width inside, rows outer.
  if (params.n_block > 0) {
    out.split(p.j, jb, p.j, params.n_block, TailStrategy::GuardWithIf);
  } else {
    out.split(p.j, jb, p.j, 1 << 30, TailStrategy::GuardWithIf);
  }
  out.tile(p.j, p.i, jo, io, ji, ii, width, rows, TailStrategy::GuardWithIf)
      .reorder(ji, ii, jo, io, jb)
      .vectorize(ji, lanes, TailStrategy::GuardWithIf);
  if (params.parallel) out.parallel(jb);

  // The accumulator tile lives in registers: whole tiles are computed (the inputs are clamped),
  // only the stores are guarded at the ragged edges.
  Func acc = core.acc;
  acc.compute_at(out, jo)
      .bound_extent(core.j, width)
      .bound_extent(core.i, rows)
      .vectorize(core.j, lanes)
      .unroll(core.j)
      .unroll(core.i);
  RVar ko("ko"), ki("ki");
  Stage update = acc.update();
  // K stays innermost-outer and ascending: only split (never reordered across tiles or rfactored),
  // so each output's sum keeps its K order.
  update.reorder(core.j, core.i, core.r).vectorize(core.j, lanes).unroll(core.j).unroll(core.i);
  if (params.k_unroll > 1) {
    update.split(core.r, ko, ki, params.k_unroll, TailStrategy::GuardWithIf).unroll(ki);
  }

  if (core.packed_b.defined()) {
    Func packed = core.packed_b;  // a handle: scheduling it schedules the pipeline's Func
    Var jj = packed.args()[0], k = packed.args()[1], jp = packed.args()[2];
    packed.compute_at(out, jb)
        .bound_extent(jj, width)
        .reorder(jj, k, jp)
        .vectorize(jj, lanes)
        .unroll(jj);
  }
  for (Func f : p.per_strip) f.compute_at(out, jb).vectorize(f.args()[0], lanes, TailStrategy::GuardWithIf);
  for (Func f : p.per_call) f.compute_root();
}

}  // namespace mmtune::schedules
