// Named GEMM shapes for the benchmarks: the shape-list files (benchmarks/shapes/*.txt, one
// `name M N K` a line) and ad hoc shapes given on the command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mmtune {

struct NamedShape {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// Reads a shape list: blank lines and text after '#' are ignored; every other line is
// `name M N K` with positive integers. InvalidArgument names the file and line of a bad line.
std::vector<NamedShape> read_shape_list(const std::string& path);

// Parses `M,N,K` (the CLI's --shape), named m<M>_n<N>_k<K>; InvalidArgument "WHERE: --shape ..."
// unless three positive integers.
NamedShape parse_mnk(const std::string& text, const char* where);

// Parses `name:M,N,K` (the --mm_shape flag).
NamedShape parse_shape(const std::string& spec);

// "MxNxK" (any number of dimensions, joined by 'x').
std::string shape_text(const std::vector<int64_t>& dims);
inline std::string shape_text(const NamedShape& s) { return shape_text({s.m, s.n, s.k}); }

}  // namespace mmtune
