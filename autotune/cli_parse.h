// The command line's text formats, parsed apart from running anything (the fuzz targets call them):
// `--input NAME=FILE.npy[:dtype]` and `--attr KEY=VALUE`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reference/registry.h"

namespace mmtune::cli {

// "NAME=PATH[:dtype]" -> (NAME, PATH, dtype). The dtype suffix is recognised only when it names a
// dtype, so paths containing ':' still work. InvalidArgument naming the spec otherwise.
void parse_input(const std::string& spec, std::string& name, std::string& path,
                 std::optional<DType>& as);

// "KEY=VALUE" items -> attributes; InvalidArgument on a malformed or repeated key.
Attributes parse_attrs(const std::vector<std::string>& specs);

}  // namespace mmtune::cli
