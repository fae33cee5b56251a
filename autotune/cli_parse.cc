// The command line's text formats.
#include "autotune/cli_parse.h"

#include <filesystem>

#include "reference/error.h"

namespace mmtune::cli {

namespace fs = std::filesystem;

void parse_input(const std::string& spec, std::string& name, std::string& path,
                 std::optional<DType>& as) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    invalid("mmtune run", "--input ", spec, " is not NAME=FILE.npy[:dtype]");
  }
  name = spec.substr(0, eq);
  path = spec.substr(eq + 1);
  as.reset();
  const auto colon = path.rfind(':');
  if (colon != std::string::npos) {
    const std::string suffix = path.substr(colon + 1);
    if (auto t = dtype_from_name(suffix)) {
      as = t;
      path = path.substr(0, colon);
    } else if (std::error_code ec; suffix.find('/') == std::string::npos && !fs::exists(path, ec)) {
      // (A path the system cannot even look up, e.g. longer than PATH_MAX, does not exist.)
      invalid("mmtune run", "--input ", spec, ": '", suffix,
              "' is not a dtype (known: ", all_dtype_names(), ")");
    }
  }
}

Attributes parse_attrs(const std::vector<std::string>& specs) {
  Attributes attrs;
  for (const std::string& s : specs) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      invalid("mmtune run", "--attr ", s, " is not KEY=VALUE");
    if (!attrs.emplace(s.substr(0, eq), s.substr(eq + 1)).second) {
      invalid("mmtune run", "attribute ", s.substr(0, eq), " is given twice");
    }
  }
  return attrs;
}

}  // namespace mmtune::cli
