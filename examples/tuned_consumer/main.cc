// A user's program over a package of tuned kernels (examples/tuned_consumer/CMakeLists.txt:
// find_package(mmtune-kernels), mmtune::kernels): a float32 Gemm at the shape it was tuned for,
// with B as given and prepacked once, each compared bit for bit with mmtune's reference.
//
//   mmtune_tuned_consumer [M N K]   (default 16 64 64) exit 0 when both calls ran a kernel of the
//                                   package and equal the reference; prints "ran: <kernel>" a call
#include <mmtune/mmtune.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

// Values whose products and sums are exact in float32 would hide an ordering difference; these
// are not: a fixed pseudo-random sequence in [-1, 1).
std::vector<float> values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
  }
  return v;
}

// The call ran one of the package's kernels and computed the reference's bits.
bool check(const char* what, const mmtune::Tensor& y, const mmtune::Tensor& expected,
           const mmtune::DispatchInfo& info) {
  std::cout << "ran: " << info.kernel << "\n";
  std::cout << what << ": " << info.reason << "\n";
  bool linked = false;
  for (const mmtune::runtime::KernelInfo& k : mmtune::runtime::linked_kernel_infos())
    linked |= k.name == info.kernel;
  if (!info.used_kernel() || !linked) {
    std::cout << what << ": FAIL: " << info.kernel << " is not a kernel of this package\n";
    return false;
  }
  if (y.dtype != expected.dtype || y.shape != expected.shape || y.bytes != expected.bytes) {
    std::cout << what << ": FAIL: the result differs from the reference\n";
    return false;
  }
  std::cout << what << ": bit-identical to the reference\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t m = 16, n = 64, k = 64;
  if (argc == 4) {
    m = std::atoll(argv[1]);
    n = std::atoll(argv[2]);
    k = std::atoll(argv[3]);
  }
  using mmtune::DType;
  using mmtune::Tensor;
  try {
    const Tensor a = Tensor::from<float>(DType::kFloat32, {m, k}, values(m * k, 1));
    const Tensor b = Tensor::from<float>(DType::kFloat32, {k, n}, values(k * n, 2));
    const Tensor c = Tensor::from<float>(DType::kFloat32, {n}, values(n, 3));
    mmtune::GemmArgs args;
    args.a = &a;
    args.b = &b;
    args.c = &c;
    const Tensor expected = mmtune::gemm(args);
    mmtune::DispatchInfo info;
    bool ok = check("Gemm", mmtune::runtime::gemm(args, &info), expected, info);
    const mmtune::runtime::PackedB packed = mmtune::runtime::prepack_b(args);
    ok &= check("Gemm, B prepacked", mmtune::runtime::gemm(args, packed, &info), expected, info);
    std::cout << "levels:";
    for (const mmtune::runtime::KernelLevel& l : mmtune::runtime::kernel_levels())
      std::cout << " " << l.target << (l.used ? "" : " (not used: " + l.why_unused + ")");
    std::cout << "\n";
    return ok ? 0 : 1;
  } catch (const mmtune::InvalidArgument& e) {
    std::cerr << "invalid: " << e.what() << "\n";
    return 1;
  }
}
