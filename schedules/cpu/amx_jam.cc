// The AMX unroll-and-jam lowering pass (see amx_jam.h).
#include "schedules/cpu/amx_jam.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mmtune::schedules {

namespace {

using namespace Halide::Internal;
using Halide::Expr;
using Halide::MemoryType;

// The names a statement defines: its lets, loops and allocations.
class DefinedNames : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  using IRVisitor::visit;
  void visit(const LetStmt* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Let* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    names.insert(op->name);
    IRVisitor::visit(op);
  }
};

// Renames the given names (definitions and uses) by appending a suffix: one copy of a loop body
// per jammed iteration, each with names of its own.
class Rename : public IRMutator {
 public:
  Rename(const std::set<std::string>& names, std::string suffix)
      : names_(names), suffix_(std::move(suffix)) {}

 protected:
  using IRMutator::visit;
  std::string r(const std::string& n) const { return names_.count(n) != 0 ? n + suffix_ : n; }

  Expr visit(const Variable* op) override {
    if (names_.count(op->name) == 0) return op;
    return Variable::make(op->type, r(op->name));
  }
  Expr visit(const Load* op) override {
    Expr e = IRMutator::visit(op);
    const Load* l = e.as<Load>();
    return Load::make(l->type, r(l->name), l->index, l->image, l->param, l->predicate,
                      l->alignment);
  }
  Expr visit(const Let* op) override {
    return Let::make(r(op->name), mutate(op->value), mutate(op->body));
  }
  Stmt visit(const Store* op) override {
    Stmt s = IRMutator::visit(op);
    const Store* st = s.as<Store>();
    return Store::make(r(st->name), st->value, st->index, st->param, st->predicate, st->alignment);
  }
  Stmt visit(const Free* op) override { return Free::make(r(op->name)); }
  Stmt visit(const LetStmt* op) override {
    return LetStmt::make(r(op->name), mutate(op->value), mutate(op->body));
  }
  Stmt visit(const For* op) override {
    return For::make(r(op->name), mutate(op->min), mutate(op->extent), op->for_type,
                     op->partition_policy, op->device_api, mutate(op->body));
  }
  Stmt visit(const ProducerConsumer* op) override {
    return ProducerConsumer::make(r(op->name), op->is_producer, mutate(op->body));
  }
  Stmt visit(const Allocate* op) override {
    std::vector<Expr> extents;
    for (const Expr& e : op->extents) extents.push_back(mutate(e));
    return Allocate::make(r(op->name), op->type, op->memory_type, extents, mutate(op->condition),
                          mutate(op->body), op->new_expr.defined() ? mutate(op->new_expr) : Expr(),
                          op->free_function, op->padding);
  }

 private:
  const std::set<std::string>& names_;
  std::string suffix_;
};

using Lets = std::vector<std::pair<std::string, Expr>>;

Stmt wrap_lets(const Lets& lets, Stmt s) {
  for (auto it = lets.rbegin(); it != lets.rend(); ++it)
    s = LetStmt::make(it->first, it->second, s);
  return s;
}

Stmt strip_lets(Stmt s, Lets* lets) {
  while (const LetStmt* l = s.as<LetStmt>()) {
    lets->emplace_back(l->name, l->value);
    s = l->body;
  }
  return s;
}

void flatten(const Stmt& s, std::vector<Stmt>* out) {
  if (const Block* b = s.as<Block>()) {
    flatten(b->first, out);
    flatten(b->rest, out);
  } else {
    out->push_back(s);
  }
}

bool is_call(const Expr& e, const char* name) {
  const Call* c = e.as<Call>();
  return c != nullptr && c->name == name;
}

// A group of accumulator tiles summed in one K loop, as a loop over tiles holds it after
// Halide's AMX lowering (one tile) or after this pass (several):
//   lets...; allocate T1 in AMXTile { allocate T2 ... { produce T1 { produce T2 ... {
//     T1 = tile_zero; T2 = tile_zero; ...; lets...;
//     for k { (lets of tile loads...) T1 = tile_matmul(T1, A, B); T2 = ... } } };
//     rests (each tile's copy to memory and epilogue, in order) } }
// (Its pointers are into the statement it was taken from.)
struct TileGroup {
  Lets lets;
  std::vector<const Allocate*> tiles;
  std::vector<Stmt> zeros;
  Lets inner_lets;
  const For* k_loop = nullptr;
  std::vector<Stmt> steps;  // with the tile loads' lets substituted in
  std::vector<Stmt> rests;
};

bool decompose(const Stmt& body, TileGroup* g) {
  Stmt s = strip_lets(body, &g->lets);
  std::set<std::string> names;
  while (const Allocate* a = s.as<Allocate>()) {
    if (a->memory_type != MemoryType::AMXTile) break;
    g->tiles.push_back(a);
    names.insert(a->name);
    s = a->body;
  }
  if (g->tiles.empty()) return false;
  std::vector<Stmt> parts;
  flatten(s, &parts);
  if (parts.size() < 2) return false;
  Stmt produce = parts[0];
  g->rests.assign(parts.begin() + 1, parts.end());
  while (const ProducerConsumer* pc = produce.as<ProducerConsumer>()) {
    if (!pc->is_producer || names.count(pc->name) == 0) return false;
    produce = pc->body;
  }
  std::vector<Stmt> body_parts;
  flatten(produce, &body_parts);
  if (body_parts.size() != g->tiles.size() + 1) return false;
  for (size_t i = 0; i < g->tiles.size(); ++i) {
    const Store* z = body_parts[i].as<Store>();
    if (z == nullptr || names.count(z->name) == 0 || !is_call(z->value, "tile_zero")) return false;
    g->zeros.push_back(body_parts[i]);
  }
  g->k_loop = strip_lets(body_parts.back(), &g->inner_lets).as<For>();
  if (g->k_loop == nullptr || g->k_loop->for_type != ForType::Serial) return false;
  Lets loads;
  std::vector<Stmt> steps;
  flatten(strip_lets(g->k_loop->body, &loads), &steps);
  if (steps.size() != g->tiles.size()) return false;
  for (const Stmt& step : steps) {
    const Store* st = step.as<Store>();
    if (st == nullptr || names.count(st->name) == 0 || !is_call(st->value, "tile_matmul")) {
      return false;
    }
    Stmt inlined = step;
    for (auto it = loads.rbegin(); it != loads.rend(); ++it) {
      inlined = substitute(it->first, it->second, inlined);
    }
    g->steps.push_back(inlined);
  }
  return true;
}

// Copies of a loop body, one per jammed iteration, with names of their own: copy u binds the
// loop variable to base + u.
std::vector<Stmt> copies_of(const For* op, const Stmt& body, const std::string& outer, int jam) {
  DefinedNames defined;
  body.accept(&defined);
  defined.names.insert(op->name);
  const Expr base = op->min + Variable::make(Halide::Int(32), outer) * jam;
  std::vector<Stmt> copies;
  for (int u = 0; u < jam; ++u) {
    const std::string suffix = ".jam" + std::to_string(u);
    copies.push_back(
        LetStmt::make(op->name + suffix, base + u, Rename(defined.names, suffix).mutate(body)));
  }
  return copies;
}

// The groups as one: every tile zeroed, then one K loop (the first group's variable) whose step
// multiplies each tile in turn, each distinct tile load bound once (named after `outer`), then
// every group's rests in order.
Stmt combine(const std::vector<TileGroup>& groups, const std::string& outer) {
  const For* k0 = groups[0].k_loop;
  for (const TileGroup& g : groups) {
    if (!equal(g.k_loop->min, k0->min) || !equal(g.k_loop->extent, k0->extent)) return Stmt();
  }
  const Expr k = Variable::make(Halide::Int(32), k0->name);
  std::vector<Expr> loads;
  Lets load_lets;
  auto shared = [&](const Expr& e) {
    for (size_t i = 0; i < loads.size(); ++i) {
      if (equal(loads[i], e)) return Variable::make(e.type(), load_lets[i].first);
    }
    loads.push_back(e);
    load_lets.emplace_back(outer + ".tile" + std::to_string(loads.size() - 1), e);
    return Variable::make(e.type(), load_lets.back().first);
  };
  Lets lets, inner_lets;
  std::vector<Stmt> zeros, steps, rests;
  std::vector<const Allocate*> tiles;
  for (const TileGroup& g : groups) {
    for (const Stmt& step : g.steps) {
      const Store* st = step.as<Store>();
      const Call* mm = st->value.as<Call>();
      std::vector<Expr> args = mm->args;
      for (Expr& arg : args) arg = substitute(g.k_loop->name, k, arg);
      for (size_t a = 4; a < args.size(); ++a) args[a] = shared(args[a]);
      const Expr product = Call::make(mm->type, mm->name, args, mm->call_type, mm->func,
                                      mm->value_index, mm->image, mm->param);
      steps.push_back(
          Store::make(st->name, product, st->index, st->param, st->predicate, st->alignment));
    }
    lets.insert(lets.end(), g.lets.begin(), g.lets.end());
    inner_lets.insert(inner_lets.end(), g.inner_lets.begin(), g.inner_lets.end());
    zeros.insert(zeros.end(), g.zeros.begin(), g.zeros.end());
    rests.insert(rests.end(), g.rests.begin(), g.rests.end());
    tiles.insert(tiles.end(), g.tiles.begin(), g.tiles.end());
  }
  Stmt k_loop = For::make(k0->name, k0->min, k0->extent, k0->for_type, k0->partition_policy,
                          k0->device_api, wrap_lets(load_lets, Block::make(steps)));
  zeros.push_back(wrap_lets(inner_lets, k_loop));
  Stmt produce = Block::make(zeros);
  for (auto it = tiles.rbegin(); it != tiles.rend(); ++it) {
    produce = ProducerConsumer::make_produce((*it)->name, produce);
  }
  rests.insert(rests.begin(), produce);
  Stmt s = Block::make(rests);
  for (auto it = tiles.rbegin(); it != tiles.rend(); ++it) {
    const Allocate* a = *it;
    s = Allocate::make(a->name, a->type, a->memory_type, a->extents, a->condition, s, a->new_expr,
                       a->free_function, a->padding);
  }
  return wrap_lets(lets, s);
}

// The jammed body of `op` (its body `body`), or nothing when it is not in a form this pass knows:
// either the body is a tile group (the loop over tiles that holds them), or it is lets and one
// loop whose body is a tile group (the next loop out: unrolled, its copies' inner loops fused).
Stmt jam_body(const For* op, const Stmt& body, const std::string& outer, int jam) {
  const std::vector<Stmt> copies = copies_of(op, body, outer, jam);
  TileGroup probe;
  if (decompose(body, &probe)) {
    std::vector<TileGroup> groups(jam);
    for (int u = 0; u < jam; ++u) {
      if (!decompose(copies[u], &groups[u])) return Stmt();
    }
    return combine(groups, outer);
  }
  // Unroll and jam: lets; for inner { group } in each copy.
  std::vector<TileGroup> groups(jam);
  std::vector<Stmt> bodies(jam);  // (the groups point into them)
  Lets lets;
  const For* inner0 = nullptr;
  for (int u = 0; u < jam; ++u) {
    const For* inner = strip_lets(copies[u], &lets).as<For>();
    if (inner == nullptr || inner->for_type != ForType::Serial) return Stmt();
    if (inner0 == nullptr) inner0 = inner;
    if (!equal(inner->min, inner0->min) || !equal(inner->extent, inner0->extent)) return Stmt();
    bodies[u] = substitute(inner->name, Variable::make(Halide::Int(32), inner0->name), inner->body);
    if (!decompose(bodies[u], &groups[u])) return Stmt();
  }
  Stmt fused = combine(groups, outer);
  if (!fused.defined()) return fused;
  return wrap_lets(lets, For::make(inner0->name, inner0->min, inner0->extent, inner0->for_type,
                                   inner0->partition_policy, inner0->device_api, fused));
}

}  // namespace

Stmt AmxJam::visit(const For* op) {
  Stmt body = mutate(op->body);
  auto unchanged = [&]() -> Stmt {
    if (body.same_as(op->body)) return op;
    return For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy,
                     op->device_api, body);
  };
  if (op->for_type != ForType::Serial) return unchanged();
  // Level 0: the loop whose body is a tile group; level 1: the loop around it.
  TileGroup group;
  Lets lets;
  int level = -1;
  if (decompose(body, &group)) {
    level = 0;
  } else if (const For* inner = strip_lets(body, &lets).as<For>()) {
    TileGroup inner_group;
    if (decompose(inner->body, &inner_group)) level = 1;
  }
  if (level < 0 || level >= (int)jams_.size() || jams_[level] < 2) return unchanged();
  const int jam = jams_[level];
  const std::string outer = op->name + ".jam";
  Stmt jammed = jam_body(op, body, outer, jam);
  if (!jammed.defined()) return unchanged();
  const Expr groups = simplify(op->extent / jam);
  jammed = For::make(outer, 0, groups, op->for_type, op->partition_policy, op->device_api, jammed);
  const Expr done = simplify(groups * jam);
  const Expr left = simplify(op->extent - done);
  if (!is_const_zero(left)) {
    jammed = Block::make(jammed, For::make(op->name, simplify(op->min + done), left, op->for_type,
                                           op->partition_policy, op->device_api, body));
  }
  return jammed;
}

}  // namespace mmtune::schedules
