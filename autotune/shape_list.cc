// Shape-list files and --mm_shape specs.
#include "autotune/shape_list.h"

#include <fstream>
#include <sstream>

#include "reference/error.h"

namespace mmtune {
namespace {

bool positive(int64_t v) { return v > 0; }

}  // namespace

std::vector<NamedShape> read_shape_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) invalid("shapes", "cannot open shape list '", path, "'");
  std::vector<NamedShape> shapes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    NamedShape s;
    if (!(words >> s.name)) continue;  // blank or comment-only
    std::string extra;
    if (!(words >> s.m >> s.n >> s.k) || (words >> extra) || !positive(s.m) || !positive(s.n) ||
        !positive(s.k)) {
      invalid("shapes", path, ":", number, ": '", line,
              "' is not `name M N K` with positive integers");
    }
    shapes.push_back(s);
  }
  return shapes;
}

NamedShape parse_mnk(const std::string& text, const char* where) {
  NamedShape s;
  char c1 = 0, c2 = 0;
  std::istringstream in(text);
  std::string rest;
  if (!(in >> s.m >> c1 >> s.n >> c2 >> s.k) || c1 != ',' || c2 != ',' || (in >> rest) ||
      !positive(s.m) || !positive(s.n) || !positive(s.k)) {
    invalid(where, "--shape '", text, "' is not M,N,K with positive integers");
  }
  s.name = "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
  return s;
}

NamedShape parse_shape(const std::string& spec) {
  const auto colon = spec.find(':');
  NamedShape s;
  char c1 = 0, c2 = 0;
  std::string extra;
  if (colon != std::string::npos && colon > 0) {
    s.name = spec.substr(0, colon);
    std::istringstream dims(spec.substr(colon + 1));
    if ((dims >> s.m >> c1 >> s.n >> c2 >> s.k) && c1 == ',' && c2 == ',' && !(dims >> extra) &&
        positive(s.m) && positive(s.n) && positive(s.k)) {
      return s;
    }
  }
  invalid("shapes", "--mm_shape=", spec, " is not name:M,N,K with positive integers");
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? "x" : "") + std::to_string(dims[i]);
  return out;
}

}  // namespace mmtune
