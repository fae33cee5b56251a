// PackedB: packing B for the kernels of an identity, and the checks of a call that uses one.
#include "runtime/src/prepack.h"

#include <sstream>

#include "reference/error.h"
#include "runtime/host/buffer_view.h"
#include "runtime/host/kernel_memory.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/calls.h"
#include "runtime/src/dispatch.h"

namespace mmtune::runtime {
namespace {

// The accumulator width of an identity's kernels (generators: float32 for float16/bfloat16/float32
// Gemm, float64 for float64 and float8, the type's width for integer Gemm, 32 for 8-bit sums).
int accumulator_bits(const KernelIdentity& id, bool* exact) {
  if (id.op == "QGemm" || id.op == "QuantMatmulDequant") {  // x_q + 128 (uint8) x int8 weights
    *exact = true;
    return 32;
  }
  if (id.op == "QLinearMatMul") {
    *exact = id.params.count("a_format") == 0;  // float8: a float64 sum
    return *exact ? 32 : 64;
  }
  const std::optional<DType> type = dtype_from_name(id.params.at("A.type"));
  MMTUNE_CHECK(type, "Gemm identity of type " << id.params.at("A.type"));
  const DType t = *type;
  *exact = is_integer(t);
  return static_cast<int>(dtype_size(gemm_accumulation_type(t)) * 8);
}

// What an operator calls the B it packs.
const char* packed_operand_name(const std::string& op) {
  return op == "Gemm" || op == "QGemm" ? "B" : op == "QuantMatmulDequant" ? "weight" : "b";
}

}  // namespace

const PackedB::Impl::Packing* PackedB::Impl::packing_for(const KernelEntry* kernel) const {
  for (const auto& [entry, index] : kernels) {
    if (entry == kernel) return &packings[index];
  }
  return nullptr;
}

const PackedB::Impl::Packing* PackedB::Impl::ready_packing_for(const KernelEntry* kernel) const {
  const Packing* p = packing_for(kernel);
  if (!p) return nullptr;
  std::lock_guard<std::mutex> lock(pack_mutex);
  if (!p->ready()) {
    const Tensor b = tensor_at(source, dtype, shape);
    p->panels = pack_b_panels(trans_b ? transposed(b) : b, p->layout);
  }
  return p;
}

void PackedB::Impl::set_source(const Tensor& b, std::string packing_key) {
  source = b.bytes.data();
  shape = b.shape;
  dtype = b.dtype;
  key = std::move(packing_key);
  what = std::string(dtype_name(b.dtype)) + " " + shape_str(b.shape) + " " + key;
}

PackedB::Impl::~Impl() {
  if (!one_call) return;
  for (Packing& p : packings) host::return_scratch(std::move(p.panels.bytes));
}

std::shared_ptr<PackedB::Impl> pack_for_kernels(const char* op, KernelIdentity identity,
                                                const Tensor& b, bool dot8, bool with_column_sums,
                                                const PrepackOptions& options, bool one_call) {
  for (const int64_t m : options.rows) {
    if (m < 1)
      invalid(op, "PrepackOptions::rows holds ", m, "; the rows of a call's A are 1 or more");
  }
  auto impl = std::make_shared<PackedB::Impl>();
  impl->one_call = one_call;
  identity.params["prepacked_b"] = "true";
  impl->op = identity.op;
  impl->identity = identity;
  impl->groups = groups_by_level(identity.op, identity.params);
  impl->k = b.shape[0];
  impl->n = b.shape[1];
  if (with_column_sums) impl->column_sums = column_sums_mod32(b);
  if (impl->k == 0 || impl->n == 0) {
    impl->why_none = std::string(packed_operand_name(identity.op)) + " is empty: nothing to pack";
    return impl;
  }
  bool exact = false;
  const int bits = accumulator_bits(identity, &exact);
  const std::vector<Level>& all = levels();
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    const Level& level = all[i];
    const IdentityGroup* g = find_group(level.groups, identity.op, identity.params);
    if (!g || level.cannot_run) continue;
    impl->target = level.table->target;
    for (std::size_t ei = 0; ei < g->entries.size(); ++ei) {
      const KernelEntry* e = g->entries[ei];
      const PanelLayout l = panel_layout(impl->target, g->schedules[ei], bits, exact, dot8);
      std::size_t index = impl->packings.size();
      for (std::size_t p = 0; p < impl->packings.size(); ++p) {
        if (impl->packings[p].layout == l) index = p;
      }
      if (index == impl->packings.size()) impl->packings.push_back({l, Tensor()});
      impl->kernels.emplace_back(e, index);
    }
    // Packed now: every layout, or those of the kernels the given rows select.
    std::vector<bool> now(impl->packings.size(), options.rows.empty());
    for (const int64_t m : options.rows) {
      const KernelEntry* e =
          select_in_group(*g, m, impl->n, impl->k, host::pool_threads(), /*explain=*/false).kernel;
      for (const auto& [entry, index] : impl->kernels) {
        if (entry == e) now[index] = true;
      }
    }
    for (std::size_t p = 0; p < impl->packings.size(); ++p) {
      if (!now[p]) continue;
      const PanelLayout& l = impl->packings[p].layout;
      const Shape ps = packed_shape(impl->k, impl->n, l);
      impl->packings[p].panels = pack_b_panels(
          b, l,
          one_call
              ? host::take_scratch(static_cast<std::size_t>(ps[0] * ps[1]) * dtype_size(b.dtype))
              : Bytes());
    }
    return impl;
  }
  impl->why_none = "no prepacked " + identity.op + " kernel in this build (" + used_targets_text() +
                   ") computes " + identity.to_string();
  return impl;
}

bool pack_b_per_call(const KernelIdentity& plain, int64_t m, int64_t n, int64_t k) {
  if (m < kPackPerCallRows || m * n * k < kPackPerCallProducts) return false;
  KernelIdentity twin = plain;
  twin.params["prepacked_b"] = "true";
  const std::vector<Level>& all = levels();
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    if (all[i].cannot_run) continue;
    if (find_group(all[i].groups, plain.op, plain.params)) return false;
    if (find_group(all[i].groups, twin.op, twin.params)) return true;
  }
  return false;
}

std::string no_panels_reason(const PackedB::Impl& packed, const KernelEntry* kernel,
                             const std::string& reason) {
  if (packed.packings.empty()) return packed.why_none;
  if (kernel) return std::string("kernel ") + kernel->name + " has no panels here";
  return reason;
}

Chosen choose_for_call(const std::function<KernelIdentity()>& plain, const PackedB::Impl* packed,
                       int64_t m, int64_t n, int64_t k, const std::vector<BufferShape>& buffers,
                       DType b_type, const char* b_name, DispatchInfo* info) {
  if (!packed) return {choose_kernel(plain(), m, n, k, buffers, info)};
  std::vector<BufferShape> with_panels = buffers;
  for (const auto& p : packed->packings)
    with_panels.push_back({packed_shape(packed->k, packed->n, p.layout), b_type});
  Chosen chosen{choose_kernel(packed->identity, m, n, k, with_panels, info, &packed->groups)};
  chosen.panels = chosen.kernel ? packed->ready_packing_for(chosen.kernel) : nullptr;
  if (chosen.panels) {
    if (info)
      info->reason +=
          std::string("; ") + b_name + " prepacked (" + chosen.panels->layout.to_string() + ")";
    return chosen;
  }
  // No prepacked twin for this call: the plain kernel (exact, packing B itself).
  const std::string why = info ? no_panels_reason(*packed, chosen.kernel, info->reason) : "";
  chosen = {choose_kernel(plain(), m, n, k, buffers, info)};
  if (info) info->reason += std::string("; ") + b_name + " not prepacked for it (" + why + ")";
  return chosen;
}

const PackedB::Impl& packed_for_call(const PackedB& packed, const std::string& op, const Tensor* b,
                                     const std::string& what) {
  const PackedB::Impl* p = packed.impl();
  if (!p) invalid(op, "packed_b is empty; make it with prepack_b from this call's B");
  if (p->op != op) invalid(op, "packed_b holds a B prepacked for ", p->op, ", not ", op);
  const std::string name = packed_operand_name(op);
  if (!b) invalid(op, name, " is null; pass the tensor packed_b was prepacked from");
  // p->what is "<dtype> <shape> <key>" (set_source): compared by its parts, the text built only
  // for the error.
  if (b->dtype != p->dtype || b->shape != p->shape || what != p->key) {
    invalid(op, "packed_b was prepacked from ", name, " ", p->what, "; this call has ",
            dtype_name(b->dtype), " ", shape_str(b->shape), " ", what);
  }
  if (b->bytes.data() != p->source) {
    invalid(op, name,
            " is not the tensor packed_b was prepacked from (same shape and type, other "
            "storage); pass that tensor, unchanged since prepack_b");
  }
  return *p;
}

std::string PackedB::op() const { return impl_ ? impl_->op : ""; }

std::size_t PackedB::bytes() const {
  if (!impl_) return 0;
  std::size_t n = impl_->column_sums.bytes.size();
  std::lock_guard<std::mutex> lock(impl_->pack_mutex);
  for (const auto& p : impl_->packings) n += p.panels.bytes.size();
  return n;
}

std::string PackedB::description() const {
  if (!impl_) return "empty";
  std::ostringstream os;
  os << impl_->op << " " << packed_operand_name(impl_->op) << " " << impl_->what;
  if (impl_->packings.empty()) {
    os << ": nothing packed (" << impl_->why_none << ")";
    return os.str();
  }
  os << ", packed for level " << impl_->target << ":";
  for (const auto& [entry, index] : impl_->kernels) {
    const PackedB::Impl::Packing& p = impl_->packings[index];
    std::lock_guard<std::mutex> lock(impl_->pack_mutex);
    os << " " << entry->name << " [" << p.layout.to_string()
       << (p.ready() ? "" : "; packed by the first call that needs it") << "]";
  }
  if (!impl_->column_sums.bytes.empty()) os << "; with its column sums";
  os << "; " << bytes() << " bytes";
  return os.str();
}

}  // namespace mmtune::runtime
