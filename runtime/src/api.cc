// The runtime's entry points that are not one operator's adapter: the named entry point, threads,
// and what is linked and used (levels, kernels).
#include "mmtune/mmtune.h"
#include "runtime/host/thread_pool.h"
#include "runtime/src/dispatch.h"

namespace mmtune {

int set_num_threads(int n) {
  if (n < 0)
    invalid("mmtune::set_num_threads", "n=", n,
            " is negative; expected 0 (default) or a thread count");
  return host::pool_set_threads(n);
}

namespace runtime {

Tensor run(std::string_view op_name, const NamedTensors& in, const Attributes& attrs,
           DispatchInfo* info) {
  const std::string op = find_operator(op_name).name;
  if (op == "QLinearMatMul") return qlinear_matmul(qlinear_matmul_args(in, attrs), info);
  if (op == "Gemm") return gemm(gemm_args(in, attrs), info);
  if (op == "QGemm") return qgemm(qgemm_args(in, attrs), info);
  MMTUNE_CHECK(op == "QuantMatmulDequant", op);
  return quant_matmul_dequant(quant_matmul_dequant_args(in, attrs), info);
}

std::vector<KernelInfo> linked_kernel_infos() {
  std::vector<KernelInfo> infos;
  for (const UsedGroup& u : used_groups()) {
    for (const KernelEntry* e : u.group->entries) {
      infos.push_back({e->name, e->op, e->generator, u.group->identity, parse_params(e->schedule),
                       e->bucket.to_string(), u.level->table->target});
    }
  }
  return infos;
}

std::vector<KernelLevel> kernel_levels() {
  const std::vector<Level>& all = levels();
  const std::size_t first = first_allowed_level();
  std::vector<KernelLevel> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    KernelLevel l{all[i].table->target, all[i].table->database, all[i].table->size, true, ""};
    if (i < first) {
      l.used = false;
      l.why_unused =
          "above the highest level allowed (MMTUNE_MAX_KERNEL_TARGET or "
          "set_max_kernel_target)";
    } else if (all[i].cannot_run) {
      l.used = false;
      l.why_unused = *all[i].cannot_run;
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::string kernel_target() {
  const std::vector<Level>& all = levels();
  for (std::size_t i = first_allowed_level(); i < all.size(); ++i) {
    if (!all[i].cannot_run) return all[i].table->target;
  }
  return "none";
}

}  // namespace runtime
}  // namespace mmtune
