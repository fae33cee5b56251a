// Shared runner of the generated conformance vector suites (ONNX Runtime, ONNX reference
// evaluator).
#pragma once

#include <string>

namespace mmtune::testing {

// Reads $MMTUNE_VECTORS_DIR/<suite>/index.json and checks every case (see conformance_support.cc);
// fails the current test on a missing or empty index, an unreadable case or a mismatch.
void run_conformance_suite(const std::string& suite);

}  // namespace mmtune::testing
