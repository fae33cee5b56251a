// Internal-invariant failures: file, line, condition and the operand values.
#include "reference/error.h"

namespace mmtune {

void throw_internal_error(const char* file, int line, const char* condition,
                          const std::string& detail) {
  std::ostringstream os;
  os << "mmtune internal error at " << file << ":" << line << ": check `" << condition
     << "` failed";
  if (!detail.empty()) os << " (" << detail << ")";
  throw InternalError(os.str());
}

}  // namespace mmtune
