// Scalar types, shapes and source locations of the IR.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg {

enum class DType : uint8_t { BF16, F16, F32, F64, I64, Bool, I32, U8 };

const char* dtype_name(DType t);                 // "bf16", "f16", ...
bool parse_dtype(const std::string& s, DType* out);
int dtype_size(DType t);                         // bytes per element
bool is_floating(DType t);
// Binary-op result type: the wider floating type; bf16 with f16 gives f32.
DType promote(DType a, DType b);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);           // "[2,64,256]"
Shape contiguous_strides(const Shape& s);
// ATen's is_contiguous: `strides` are row-major for `shape` (dims of one
// element may have any stride).
bool is_contiguous(const Shape& shape, const Shape& strides);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string str() const;                       // "bf16[2,64,256]"
};

// Where a node came from: the repro's file:line and function, or the .fg
// file and line. Graph breaks and `explain` print it.
struct SourceLoc {
  std::string file;
  int line = 0;
  std::string function;
  int col = 0;  // a .fg statement's column (its op), for messages; not printed by str()
  std::string str() const;                       // "repros/x.cpp:42 (forward)"
  bool known() const { return !file.empty(); }
  // The inverse of str() (records keep locations as text); false for text
  // that is not "file:line" or "file:line (function)".
  static bool parse(const std::string& text, SourceLoc* out);
};

}  // namespace fg
