// libFuzzer target: the .npy reader on arbitrary bytes. Every input either reads into a tensor
// whose byte count matches its shape, or throws InvalidArgument; never a crash, hang, abort or an
// allocation beyond the file's size.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "autotune/npy.h"
#include "reference/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mmtune_fuzz_npy_" + std::to_string(getpid()) + ".npy";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  // The first byte (when the input is long enough) picks a reinterpretation, as --input a=f:dtype.
  std::optional<mmtune::DType> as;
  if (size > 0 && data[size - 1] < 16 && size % 7 == 0)
    as = static_cast<mmtune::DType>(data[size - 1]);
  try {
    const mmtune::Tensor t = mmtune::read_npy(path, as);
    if (t.bytes.size() != static_cast<std::size_t>(t.numel()) * mmtune::dtype_size(t.dtype))
      __builtin_trap();
    if (t.bytes.size() > size) __builtin_trap();  // never more data than the file held
  } catch (const mmtune::InvalidArgument&) {
  }
  return 0;
}
