// `mmtune db compare BASE NEW`: two tuned databases (tuned/<target>.json) of one target side by
// side on the calls users make. For each kernel identity both hold and each shape, the kernel each
// database's dispatch picks (the runtime's rule: the bucket that contains the shape, else the
// nearest) is compiled, gated bit for bit and timed in one worker process, interleaved with the
// other (so drift and load affect both alike); the table gives both rates and NEW / BASE.
#pragma once

#include <string>
#include <vector>

#include "autotune/shape_list.h"
#include "autotune/tune_worker.h"

namespace mmtune::tune {

struct CompareOptions {
  std::string base, fresh;         // the two databases
  std::vector<std::string> ops;    // identity specs to compare (default: every common one)
  std::vector<NamedShape> shapes;  // the calls
  MeasureOptions measure;
  int jobs = 1;
  double timeout_s = 600;
  std::string exe;      // this program (workers are its children)
  std::string scratch;  // worker files
  bool json = false;    // one JSON object a line instead of the table
};

struct CompareRow {
  std::string identity;
  NamedShape shape;
  std::string base_kernel, new_kernel;
  double base_rate = 0, new_rate = 0;  // operations per second (0: not measured)
  std::string note;                    // "same kernel", a failure
};

// The rows, in identity then shape order. InvalidArgument for unreadable databases, different
// targets, a target this CPU cannot run, or an --op neither database holds.
std::vector<CompareRow> compare_tuned_databases(const CompareOptions& o);

}  // namespace mmtune::tune
