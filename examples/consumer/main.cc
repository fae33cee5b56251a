// A user's program: a float32 Gemm and a u8 QLinearMatMul through mmtune::runtime, each compared
// bit for bit with mmtune's reference, printing the kernel that ran. Built against an installed
// mmtune (examples/consumer/CMakeLists.txt: find_package(mmtune)); the tests build and run it.
//
//   mmtune_consumer [--require-kernels]   exit 0 when every result equals the reference (and, with
//                                         --require-kernels, every call ran on a linked kernel)
#include <mmtune/mmtune.h>

#include <cstring>
#include <iostream>
#include <string>

namespace {

bool same_bits(const mmtune::Tensor& a, const mmtune::Tensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

// Prints the call's outcome; false when the result differs from the reference's or, when kernels
// are required, the reference computed it.
bool report(const char* what, const mmtune::Tensor& y, const mmtune::Tensor& expected,
            const mmtune::DispatchInfo& info, bool require_kernel) {
  const bool exact = same_bits(y, expected);
  std::cout << what << ": kernel: " << info.kernel << " (" << info.reason << "); "
            << (exact ? "bit-identical to the reference" : "DIFFERS from the reference") << "\n";
  if (require_kernel && !info.used_kernel()) {
    std::cout << what << ": no linked kernel ran\n";
    return false;
  }
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  const bool require_kernels = argc > 1 && std::strcmp(argv[1], "--require-kernels") == 0;
  using mmtune::DType;
  using mmtune::Tensor;
  bool ok = true;
  try {
    // Gemm: A (2, 3), B (3, 2), C (2,) broadcast over the rows: Y = A B + C.
    const Tensor a = Tensor::from<float>(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor b = Tensor::from<float>(DType::kFloat32, {3, 2}, {1, 0, 0, 1, 1, 1});
    const Tensor c = Tensor::from<float>(DType::kFloat32, {2}, {0.5f, -0.5f});
    mmtune::GemmArgs args;
    args.a = &a;
    args.b = &b;
    args.c = &c;
    mmtune::DispatchInfo info;
    const Tensor y = mmtune::runtime::gemm(args, &info);
    std::cout << "Y =";
    for (int i = 0; i < 4; ++i) std::cout << " " << y.data<float>()[i];
    std::cout << "\n";
    ok &= report("Gemm", y, mmtune::gemm(args), info, require_kernels);

    // QLinearMatMul, the ONNX example (u8 a and b, u8 y, per-tensor parameters), by name.
    mmtune::NamedTensors in;
    in["a"] = Tensor::from<uint8_t>(DType::kUInt8, {2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
    in["a_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.0066f});
    in["a_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {113});
    in["b"] = Tensor::from<uint8_t>(DType::kUInt8, {4, 3},
                                    {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
    in["b_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.00705f});
    in["b_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {114});
    in["y_scale"] = Tensor::from<float>(DType::kFloat32, {}, {0.0107f});
    in["y_zero_point"] = Tensor::from<uint8_t>(DType::kUInt8, {}, {118});
    const Tensor q = mmtune::runtime::run("QLinearMatMul", in, {}, &info);
    std::cout << "y =";
    for (int i = 0; i < 6; ++i) std::cout << " " << static_cast<int>(q.data<uint8_t>()[i]);
    std::cout << "\n";
    ok &= report("QLinearMatMul", q, mmtune::run_reference("QLinearMatMul", in, {}), info,
                 require_kernels);
  } catch (const mmtune::InvalidArgument& e) {
    std::cerr << "invalid: " << e.what() << "\n";
    return 1;
  }
  std::cout << "kernels of this installation:";
  for (const mmtune::runtime::KernelLevel& l : mmtune::runtime::kernel_levels())
    std::cout << " " << l.target << (l.used ? "" : " (not used: " + l.why_unused + ")");
  std::cout << "; calls use " << mmtune::runtime::kernel_target() << "\n";
  return ok ? 0 : 1;
}
