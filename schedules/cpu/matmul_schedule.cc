// The cpu_matmul schedule template (see matmul_params.h for the knobs and their meaning).
#include "schedules/cpu/matmul_schedule.h"

namespace mmtune::schedules {

using namespace Halide;

void schedule_cpu_matmul(MatmulPipeline& p, const CpuMatmulParams& params, bool vector_epilogue) {
  const int lanes = p.layout.lanes;
  const int rows = params.tile_rows;
  const int width = params.tile_vectors * lanes;
  Func out = p.out;
  Var jb("jb"), jo("jo"), io("io"), ji("ji"), ii("ii");
  // Outputs start at (0, 0), so tile bases are multiples of the tile width and the packed panel
  // index j % width, j / width simplifies to the loop variables (otherwise: gathers).
  out.output_buffer().dim(0).set_min(0).dim(1).set_min(0);
  // With n_block, strips of n_block columns are the tasks (B packed per strip); without, B is
  // packed once and rows of tiles are the tasks. Tiles of rows x width; with m_block, blocks of
  // m_block rows inside a strip, all column tiles of a block before the next block (a packed B
  // panel is reused across the block's rows while it is in cache).
  const bool strips = params.n_block > 0;
  const bool blocks = params.m_block > 0;
  // When nothing is computed per strip (B prepacked by the host, its column sums too), the strips
  // and the row blocks (or tile rows) within them are independent: one parallel loop over both, so
  // that a shape with fewer strips than threads (N <= n_block) still has a task per row block.
  // copy_b: a prepacked B's strip copied per task (below, as a plain B's is packed), so the strips
  // are the tasks. At 64x4096x4096 float32 on a Xeon with AVX-512 (1 thread, 6x64 tiles) the tiles
  // reading the prepacked panels ran 72 GFLOP/s, each tile row streaming the strip's 1 MiB from
  // memory again; after one copy per strip, 135.
  const bool copy_b = params.copy_b && strips && p.prepacked.defined() && p.packed_b.defined();
  const bool fuse_tasks = strips && p.prepacked.defined() && p.per_column.empty() && !copy_b;
  Var ib("ib"), task("task");
  // The loop over row blocks (or tile rows without blocks); once fused, the task loop stands for
  // it.
  const Var rows_loop = blocks ? ib : io;
  const Var rows_level = fuse_tasks ? task : rows_loop;
  // The accumulator tile lives in registers (the sum below: neither AMX nor K blocks).
  const bool register_tile = !p.layout.amx && params.k_block == 0;
  auto apply = [&](Stage s, TailStrategy tail) {
    // Tiles first, then whole tiles grouped into strips (n_block / width tiles) and row blocks
    // (m_block / rows tile rows): the loops over a ragged last strip or block then stop at its
    // last tile that holds outputs. (Strips split first and tiled inside ran every tile of the
    // last strip, computing the sums of tiles wholly past N and storing them under an all-false
    // mask: at 1x64x64 a 512-column strip did eight times the work, 6.9 us a call where 1x512x64
    // took 0.6.)
    s.tile(p.j, p.i, jo, io, ji, ii, width, rows, tail);
    if (strips) s.split(jo, jb, jo, params.n_block / width, tail);
    if (blocks) s.split(io, ib, io, params.m_block / rows, tail);
    // (Vectorized over the whole tile width instead, a 256^3 u8.s8 call's requantization loop
    // went from 15% to 13% at 1 thread on Zen 4, but 512^3 at 2 threads took 12% longer.)
    if (vector_epilogue) s.vectorize(ji, lanes, tail);
    // Register tiles: the epilogue unrolled over the tile, so that it reads the accumulators
    // from their registers. As loops it read them back from a copy on the stack, which each tile
    // zeroed first with a call of memset (for a K loop that might not run) and stored to after its
    // K loop: float32 fma prepacked at 1 thread on a Xeon with AVX-512, 128^3 150-152 -> 165
    // GFLOP/s, 256^3 140-145 -> 154, 512^3 179-181 -> 185-187; u8.s8 QLinearMatMul on the VNNI
    // kernels within 1.05x either way.
    if (vector_epilogue && register_tile) s.unroll(ji).unroll(ii);
    std::vector<VarOrRVar> order{ji, ii};
    if (blocks) {
      order.insert(order.end(), {io, jo, ib});
    } else {
      order.insert(order.end(), {jo, io});
    }
    if (strips) order.push_back(jb);
    s.reorder(order);
    if (fuse_tasks) s.fuse(rows_loop, jb, task);
    if (params.parallel) s.parallel(fuse_tasks ? task : strips ? jb : rows_loop);
  };
  // Out's cases (MatmulPipeline::epilogue_cases: parameters one for all rows, ...) come first, each
  // a branch of its own in which out's definition simplifies (with whole tiles apart when tails are
  // specialized); the branches after them know that no case holds. Shapes made of whole tiles (and
  // whole strips / blocks) get a branch without tail guards.
  const std::vector<Expr>& cases = p.epilogue_cases;
  if (params.specialize_tails) {
    Expr whole = out.output_buffer().dim(0).extent() % (strips ? params.n_block : width) == 0 &&
                 out.output_buffer().dim(1).extent() % (blocks ? params.m_block : rows) == 0;
    for (const Expr& c : cases) apply(out.specialize(c && whole), TailStrategy::RoundUp);
    // (No branch of whole tiles outside the cases: they are the calls that matter, and each branch
    // is a copy of the whole loop nest to compile.)
    if (cases.empty()) apply(out.specialize(whole), TailStrategy::RoundUp);
  }
  for (const Expr& c : cases) apply(out.specialize(c), TailStrategy::GuardWithIf);
  apply(out, TailStrategy::GuardWithIf);

  // A's K groups (packed_a), staged per row tile, or once per row block when blocking (the
  // block's rows are then reused across every column tile). A row's groups are K's values in
  // order, so `lanes` groups at a time are one dense load of A (widened where the layout widens)
  // and one vector store: one group at a time this copy was a scalar load, widen and store per
  // group, about an eighth of a 64^3 u8.s8 call on AVX2.
  auto stage_a_groups = [&](bool unroll_rows) {
    Func packed_a = p.packed_a;
    const std::vector<Var> a = packed_a.args();  // (kk, kg, i)
    packed_a.compute_at(out, rows_level)
        .bound_extent(a[0], p.layout.k_group)
        .reorder(a[0], a[1], a[2])
        .vectorize(a[0])
        .vectorize(a[1], lanes);
    if (unroll_rows) packed_a.unroll(a[2]);
  };
  Func acc = p.acc;
  RVar ko("ko"), ki("ki");
  // The K-blocked sum's loop over the tile rows of a block.
  Var a_tile_rows("aio");
  // (The AMX form's acc is pure: its sum is p.part's.)
  Stage update = p.layout.amx ? Stage(acc) : acc.update();
  if (params.k_block > 0) {
    // K cache blocking: the accumulator of a whole (m_block x n_block) block lives in memory and
    // each K block of k_block is applied to all its tiles before the next one. Every output still
    // sums k = 0, 1, ..., K-1 in order (ko ascending, then ki ascending). With one tile row per
    // block (m_block = tile_rows) and a small k_block, this is the GEMV form for small M: the
    // strip's accumulators stay in L1 and each K block reads its k_block rows of B front to back
    // across the strip, so B streams through once instead of a tile-wide column at a time.
    Var ajo("ajo"), aji("aji"), aii("aii");
    const Var& aio = a_tile_rows;
    RVar kio("kio"), kii("kii");
    acc.compute_at(out, rows_level)
        .bound_extent(p.j, params.n_block)
        .bound_extent(p.i, params.m_block)
        .vectorize(p.j, lanes);
    update.split(p.r, ko, ki, params.k_block, TailStrategy::GuardWithIf)
        .tile(p.j, p.i, ajo, aio, aji, aii, width, rows)
        .reorder(aji, aii, ki, ajo, aio, ko)
        .vectorize(aji, lanes)
        .unroll(aji)
        .unroll(aii);
    if (params.k_unroll > 1)
      update.split(ki, kio, kii, params.k_unroll, TailStrategy::GuardWithIf).unroll(kii);
  } else if (p.layout.amx) {
    // The tile's sum in an AMX tile register (Halide's AMX lowering: a Func stored in
    // MemoryType::AMXTile whose update is a vectorized matmul of plain 8-bit loads). The whole
    // tile is computed (16 columns x rows, past M and N too: the inputs are clamped, the padded
    // groups zero), K in steps of 64 bytes (kAmxTileGroups groups of 4) with the tile held across
    // K, then copied to memory (amx_out), where the epilogue reads it. Only the stores of out are
    // guarded at the ragged edges.
    const Var at = blocks ? io : jo;
    Func part = p.part, tile_out = p.amx_out;
    const std::vector<Var> pa = part.args();  // (jj, i, jp)
    // Rows of the copy padded to twice the tile's width: the lowering recognizes a tile's store
    // only in the form of a 2-D ramp, which a dense 16 x rows copy would flatten into one.
    // One panel per tile (jp's extent 1: its bound inferred in the branches with tail guards was
    // not a constant there, and the copy was then allocated on the heap once per tile: 215 G/s
    // at 128^3 against 809 in the branch of whole tiles, Xeon with AMX, 1 thread).
    tile_out.compute_at(out, at)
        .align_storage(pa[0], 2 * width)
        .bound_extent(pa[0], width)
        .bound_extent(pa[1], rows)
        .bound_extent(pa[2], 1)
        .vectorize(pa[0])
        .vectorize(pa[1]);
    part.compute_at(out, at)
        .store_in(MemoryType::AMXTile)
        .bound_extent(pa[0], width)
        .bound_extent(pa[1], rows)
        .vectorize(pa[0])
        .vectorize(pa[1]);
    // p.r: r.x the 64 bytes of a step, r.y the step.
    part.update()
        .reorder(p.r.x, pa[0], pa[1], p.r.y, pa[2])
        .atomic()
        .vectorize(p.r.x)
        .vectorize(pa[0])
        .vectorize(pa[1]);
    stage_a_groups(false);
  } else {
    // The accumulator tile lives in registers: whole tiles are computed (the inputs are clamped),
    // only the stores are guarded at the ragged edges. At the innermost tile loop: jo (rows of
    // tiles outer) or io (with row blocks, columns outer).
    acc.compute_at(out, blocks ? io : jo)
        .bound_extent(p.j, width)
        .bound_extent(p.i, rows)
        .vectorize(p.j, lanes)
        .unroll(p.j)
        .unroll(p.i);
    if (p.layout.k_group > 1) {
      // Integer sums only: each group of k_group products is reduced across lanes in one
      // dot-product instruction (atomic vectorization of the group).
      RVar kk = p.r.x, kg = p.r.y;
      Stage grouped = update;
      if (p.part.defined()) {
        // Blocked exact sum: the tile's partial sums of one K block in registers (the grouped
        // dot products), added to the tile's accumulators block after block.
        update.reorder(p.j, p.i, p.rb).vectorize(p.j, lanes).unroll(p.j).unroll(p.i);
        Func part = p.part;
        part.compute_at(acc, p.rb)
            .bound_extent(p.j, width)
            .bound_extent(p.i, rows)
            .vectorize(p.j, lanes)
            .unroll(p.j)
            .unroll(p.i);
        grouped = part.update();
      }
      grouped.reorder(kk, p.j, p.i, kg)
          .atomic()
          .vectorize(kk)
          .vectorize(p.j, lanes)
          .unroll(p.j)
          .unroll(p.i);
      if (params.k_unroll > 1)
        grouped.split(kg, ko, ki, params.k_unroll, TailStrategy::GuardWithIf).unroll(ki);
      stage_a_groups(!blocks);
    } else {
      // K stays innermost-outer and ascending: only split (never reordered across tiles or
      // rfactored), so each output's sum keeps its K order.
      update.reorder(p.j, p.i, p.r).vectorize(p.j, lanes).unroll(p.j).unroll(p.i);
      if (params.k_unroll > 1) {
        update.split(p.r, ko, ki, params.k_unroll, TailStrategy::GuardWithIf).unroll(ki);
      }
    }
  }

  if (params.pack_a && p.a.defined()) {
    // A's rows copied into a panel of one tile row (rows innermost, K outer: what BLAS calls a
    // packed A micro-panel), so that the inner loop's broadcasts of A read one pointer at constant
    // offsets (row by row from A they need a base register per row, and the tile's registers run
    // out). With K blocks, one panel of k_block x tile_rows per tile row and K block, reused
    // across the block's column tiles; else one of K x tile_rows per tile row (per row block of
    // m_block rows when blocking). Only a copy: the sum and its K order are unchanged.
    Func a_rows = p.a.in(p.acc);
    const Var k = a_rows.args()[0], row = a_rows.args()[1];
    const bool per_tile_row = params.k_block > 0 || !blocks;
    if (params.k_block > 0) {
      a_rows.compute_at(p.acc, a_tile_rows);
    } else {
      a_rows.compute_at(out, rows_level);
    }
    a_rows.bound_extent(row, per_tile_row ? rows : params.m_block)
        .reorder_storage(row, k)
        .reorder(row, k);
    if (per_tile_row) a_rows.unroll(row);
  }

  // A prepacked B is read where the sum reads it: its packed_b view stays inline, unless copied
  // per strip (copy_b).
  if (p.packed_b.defined() && (!p.prepacked.defined() || copy_b)) {
    Func packed = p.packed_b;  // a handle: scheduling it schedules the pipeline's Func
    const bool grouped = p.layout.k_group > 1;
    Var jj = packed.args()[grouped ? 1 : 0], jp = packed.args()[grouped ? 3 : 2];
    if (strips) {
      packed.compute_at(out, jb);
    } else {
      packed.compute_root();
      if (params.parallel) packed.parallel(jp);
    }
    packed.bound_extent(jj, width);
    if (grouped) {
      Var kk = packed.args()[0];
      packed.bound_extent(kk, p.layout.k_group).vectorize(kk).vectorize(jj, lanes);
    } else {
      packed.vectorize(jj, lanes).unroll(jj);
    }
  }
  for (Func f : p.per_column) {
    if (strips) {
      f.compute_at(out, jb);
    } else {
      f.compute_root();
    }
    const Var x = f.args()[0];
    f.vectorize(x, lanes, TailStrategy::GuardWithIf);
    // A column reduction (e.g. column sums of B): columns innermost and vectorized, the reduction
    // outside, so rows of B are read contiguously. (Integer sums only: order is free.)
    for (int u = 0; u < f.num_update_definitions(); ++u) {
      std::vector<VarOrRVar> order{x};
      for (const auto& rv : f.function().update(u).schedule().rvars())
        order.emplace_back(RVar(rv.var));
      f.update(u).reorder(order).vectorize(x, lanes, TailStrategy::GuardWithIf);
    }
  }
  for (Func f : p.per_call) f.compute_root();
  for (Func f : p.column_params) {
    f.compute_root();
    if (vector_epilogue) f.vectorize(f.args()[0], lanes, TailStrategy::GuardWithIf);
  }
  // Row sums (wrapping integer sums, so any order gives the same bits): where A's rows are packed,
  // per tile row (or row block, or task), so that each task sums its own rows while they are in
  // cache and a call forks its threads once. (Once per call before, in a parallel loop of its
  // own, a second fork and join per call: moving them here made 64^3 u8.s8 calls on AVX2 1.11x
  // faster at 1 thread and 1.21x at 2. A strip's task now sums its rows again per strip: K adds
  // per row against n_block x K products.)
  // K is split into vectors of lanes partial sums, then the lanes added (rfactor). (A serial
  // scalar loop here, reading A through its clamp a byte at a time, took about a quarter of a
  // 256^3 u8.s8 call on AVX-512 at 1 thread.) The generators read A clamped in rows only
  // (clamped_rows), so that the K chunks load as dense vectors.
  // Read from A's K groups in blocks (row_sum_blocks: rvars kk, kg; the pipeline's one row sum is
  // then their sum over the blocks), lanes x k_group values of a row are one dot product with
  // ones (atomic vectorization of kk, as in the sum): on AVX-512 VNNI one vpdpbusd per 64 bytes
  // where the widening sum took a vpmovzxbd and a vpaddd per 16 (256^3 u8.s8 at 1 thread on
  // Zen 4: 3-6% of the call before, 0.8% after, with the lanes' vector reduction below).
  for (Func f : p.row_sums) {
    f.compute_at(out, rows_level);
    const Var row = f.args()[0];
    if (!p.row_sum_blocks.empty()) continue;
    const RVar r(f.function().update(0).schedule().rvars().at(0).var);
    RVar ro("rso"), ri("rsi");
    Var lane("rs_lane");
    Func part = f.update().split(r, ro, ri, lanes, TailStrategy::GuardWithIf).rfactor(ri, lane);
    part.compute_at(f, row).vectorize(lane);
    part.update().vectorize(lane);
  }
  for (Func f : p.row_sum_blocks) {
    const Var kb = f.args()[1];
    const auto& rvars = f.function().update(0).schedule().rvars();
    const RVar kk(rvars.at(0).var), kg(rvars.at(1).var);
    RVar go("rsgo"), gi("rsgi");
    Var lane("rs_lane");
    // Per block of the row sum's loop (one block at a time: a fixed size, on the stack; per row,
    // its extent over the blocks was a heap allocation per row).
    const Func sums = p.row_sums.at(0);
    f.compute_at(sums, RVar(sums.function().update(0).schedule().rvars().at(0).var));
    Func part = f.update().split(kg, go, gi, lanes, TailStrategy::GuardWithIf).rfactor(gi, lane);
    part.compute_at(f, kb).vectorize(lane);
    part.update().reorder(kk, lane, go).atomic().vectorize(kk).vectorize(lane);
    // The lanes added as one vector reduction (a scalar loop over them read back the vector just
    // stored, lane by lane).
    f.update().atomic().vectorize(RVar(f.function().update(0).schedule().rvars().at(0).var));
  }
  // Per-row producers (e.g. a row's quantization): once per call, rows in parallel, vectorized
  // along their first dimension when they have one besides the row.
  for (Func f : p.per_row) {
    f.compute_root();
    const std::vector<Var> args = f.args();
    const Var& row = args.back();
    if (args.size() > 1 && vector_epilogue) f.vectorize(args[0], lanes, TailStrategy::GuardWithIf);
    if (params.parallel) {
      if (args.size() > 1) f.parallel(row);
      for (int u = 0; u < f.num_update_definitions(); ++u) f.update(u).parallel(row);
    }
  }
}

}  // namespace mmtune::schedules
