// A minimal reader of serialized onnx.TensorProto messages (the input_<i>.pb / output_<i>.pb files
// of the ONNX backend test data), written against the protobuf wire format because the machine has
// no libprotobuf.
//
// Fields read (onnx/onnx.proto3): dims (1, packed or not), data_type (2), float_data (4),
// int32_data (5), int64_data (7), name (8), raw_data (9), double_data (10), uint64_data (11),
// data_location (14). Rejected with mmtune::InvalidArgument naming the file: string_data (6),
// segment (3), data_location = EXTERNAL or external_data (13) entries, data types mmtune has no
// DType for (bool, string, complex, 4-bit, 2-bit, float8e8m0, ...), values that do not fit the data
// type, an element count that differs from the product of the dims, truncated or malformed varints,
// lengths running past the end, group wire types. Unknown fields are skipped, as protobuf does; a
// repeated scalar field (data_type, name, raw_data, data_location) keeps its last value, as
// protobuf does.
//
// Storage per type (onnx.proto3): raw_data (little-endian, fixed width) for every type; otherwise
// float_data for float32; int32_data for int8/uint8/int16/uint16/int32 (the values) and for
// float16/bfloat16/float8 (the bit patterns, zero-extended); int64_data for int64; double_data for
// float64; uint64_data for uint32/uint64. float16, bfloat16 and float8 tensors keep their bit
// patterns (mmtune::Tensor's storage convention).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/tensor.h"

namespace mmtune::testing {

// The onnx TensorProto.DataType value of `t` (1 = FLOAT, 2 = UINT8, 3 = INT8, ...).
int onnx_data_type(DType t);

// Parses the serialized TensorProto in `bytes`; `what` (a path) prefixes error messages. If `name`
// is not null it receives the tensor's name field ("" when absent).
Tensor parse_tensor_proto(const uint8_t* bytes, std::size_t size, const std::string& what,
                          std::string* name = nullptr);
Tensor parse_tensor_proto(const std::vector<uint8_t>& bytes, const std::string& what,
                          std::string* name = nullptr);

// Reads and parses the file; InvalidArgument if it cannot be opened or parsed.
Tensor read_tensor_proto(const std::string& path);

}  // namespace mmtune::testing

namespace mmtune {
using testing::read_tensor_proto;
}  // namespace mmtune
