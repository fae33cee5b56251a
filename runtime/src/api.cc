// The runtime's entry points that are not one operator's adapter: the named entry point, threads,
// and the list of linked kernels.
#include "HalideRuntime.h"
#include "mmtune/mmtune.h"
#include "runtime/src/kernel_table.h"

namespace mmtune {

int set_num_threads(int n) {
  if (n < 0)
    invalid("mmtune::set_num_threads", "n=", n,
            " is negative; expected 0 (default) or a thread count");
  return halide_set_num_threads(n);
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
  const KernelTable& table = linked_kernels();
  std::vector<KernelInfo> infos;
  for (std::size_t i = 0; i < table.size; ++i) {
    const KernelEntry& e = table.entries[i];
    infos.push_back({e.name, e.op, e.generator, parse_params(e.identity), parse_params(e.schedule),
                     e.bucket.to_string()});
  }
  return infos;
}

std::string kernel_target() { return linked_kernels().target; }
std::string kernel_database() { return linked_kernels().database; }

}  // namespace runtime
}  // namespace mmtune
