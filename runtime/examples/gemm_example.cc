// A user's program: one float32 Gemm through mmtune::runtime, printing the kernel that ran.
#include <iostream>

#include "mmtune/mmtune.h"

int main() {
  using mmtune::DType;
  using mmtune::Tensor;
  // A (2, 3), B (3, 2), C (2,) broadcast over the rows: Y = A B + C.
  const Tensor a = Tensor::from<float>(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from<float>(DType::kFloat32, {3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor c = Tensor::from<float>(DType::kFloat32, {2}, {0.5f, -0.5f});
  mmtune::GemmArgs args;
  args.a = &a;
  args.b = &b;
  args.c = &c;
  mmtune::DispatchInfo info;
  try {
    const Tensor y = mmtune::runtime::gemm(args, &info);
    std::cout << "Y =";
    for (int i = 0; i < 4; ++i) std::cout << " " << y.data<float>()[i];
    std::cout << "\nkernel: " << info.kernel << " (" << info.reason << ")\n";
  } catch (const mmtune::InvalidArgument& e) {
    std::cerr << "invalid: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
