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
  // With n_block, strips of n_block columns are the tasks (B packed per strip); without, B is packed
  // once and rows of tiles are the tasks. Tiles of rows x width, rows outer within a strip.
  const bool strips = params.n_block > 0;
  if (strips) out.split(p.j, jb, p.j, params.n_block, TailStrategy::GuardWithIf);
  out.tile(p.j, p.i, jo, io, ji, ii, width, rows, TailStrategy::GuardWithIf)
      .vectorize(ji, lanes, TailStrategy::GuardWithIf);
  if (strips) {
    out.reorder(ji, ii, jo, io, jb);
    if (params.parallel) out.parallel(jb);
  } else {
    out.reorder(ji, ii, jo, io);
    if (params.parallel) out.parallel(io);
  }

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
    if (strips) {
      packed.compute_at(out, jb);
    } else {
      packed.compute_root();
      if (params.parallel) packed.parallel(jp);
    }
    packed.bound_extent(jj, width).reorder(jj, k, jp).vectorize(jj, lanes).unroll(jj);
  }
  for (Func f : p.per_strip) {
    if (strips) {
      f.compute_at(out, jb);
    } else {
      f.compute_root();
    }
    f.vectorize(f.args()[0], lanes, TailStrategy::GuardWithIf);
  }
  for (Func f : p.per_call) f.compute_root();
}

}  // namespace mmtune::schedules
