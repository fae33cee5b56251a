// QGemm through Halide's JIT: transposed operands are materialized (exact copies), then one kernel
// call.
#pragma once

#include "autotune/kernel_key.h"
#include "reference/qgemm.h"

namespace mmtune {

Tensor qgemm_halide(const QGemmArgs& args, const HalideVariant& v);

}  // namespace mmtune
