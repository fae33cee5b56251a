// Errors in two tiers: InvalidArgument for user mistakes, InternalError (via MMTUNE_CHECK) for
// broken invariants of mmtune itself.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace mmtune {

// A user mistake: the message is a sentence naming the input, its value and the rule it breaks.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A bug in mmtune: an invariant that no input, valid or not, may break.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws InvalidArgument("<where>: <args...>").
template <class... Args>
[[noreturn]] void invalid(const std::string& where, const Args&... args) {
  std::ostringstream os;
  os << where << ": ";
  (os << ... << args);
  throw InvalidArgument(os.str());
}

[[noreturn]] void throw_internal_error(const char* file, int line, const char* condition,
                                       const std::string& detail);

}  // namespace mmtune

// Internal invariant: on failure names the file, line, condition and the operand values in `detail`
// (stream syntax: MMTUNE_CHECK(k == k2, "k=" << k << " k2=" << k2)).
#define MMTUNE_CHECK(cond, detail)                                                       \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::ostringstream mmtune_check_os_;                                               \
      mmtune_check_os_ << detail; /* NOLINT(bugprone-macro-parentheses): a << chain */   \
      ::mmtune::throw_internal_error(__FILE__, __LINE__, #cond, mmtune_check_os_.str()); \
    }                                                                                    \
  } while (0)
