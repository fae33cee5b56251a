// Kernel names (docs/naming.md): `<op>_<dtypes>[_<mode>]__<isa>_<tile>`, what is computed before
// the double underscore, how after it. The tuned databases name kernels by this rule and the
// runtime tests check every linked kernel against it.
#pragma once

#include <map>
#include <string>

namespace mmtune {

// "float32" -> "f32", "int8" -> "s8", "bfloat16" -> "bf16", "float8e4m3fn" -> "f8e4m3fn".
std::string dtype_code(const std::string& generator_type);

// The name of the `op` kernel with these identity and schedule generator params for the Halide
// `target`. InvalidArgument for an operator without a naming rule yet.
std::string kernel_name(const std::string& op, const std::map<std::string, std::string>& identity,
                        const std::map<std::string, std::string>& schedule,
                        const std::string& target);

}  // namespace mmtune
