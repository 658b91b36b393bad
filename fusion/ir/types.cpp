#include "fusion/ir/types.h"

#include <cstdlib>

#include "fusion/errors.h"

namespace fg {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::U8: return "u8";
  }
  internal_error("unknown dtype");
}

bool parse_dtype(const std::string& s, DType* out) {
  static const DType all[] = {DType::BF16, DType::F16, DType::F32, DType::F64,
                              DType::I64,  DType::Bool, DType::I32, DType::U8};
  for (DType t : all)
    if (s == dtype_name(t)) { *out = t; return true; }
  return false;
}

int dtype_size(DType t) {
  switch (t) {
    case DType::BF16: case DType::F16: return 2;
    case DType::F32: case DType::I32: return 4;
    case DType::F64: case DType::I64: return 8;
    case DType::Bool: case DType::U8: return 1;
  }
  internal_error("unknown dtype");
}

bool is_floating(DType t) {
  return t == DType::BF16 || t == DType::F16 || t == DType::F32 || t == DType::F64;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType t) {
    switch (t) {
      // torch's order: bool < u8 < i32 < i64 < floating
      case DType::Bool: return 0;
      case DType::U8: return 1;
      case DType::I32: return 2;
      case DType::I64: return 3;
      case DType::BF16: case DType::F16: return 4;
      case DType::F32: return 5;
      case DType::F64: return 6;
    }
    return 0;
  };
  if ((a == DType::BF16 && b == DType::F16) || (a == DType::F16 && b == DType::BF16))
    return DType::F32;
  return rank(a) >= rank(b) ? a : b;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

bool is_contiguous(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] == 1) continue;
    if (strides[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

std::string TensorType::str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

bool SourceLoc::parse(const std::string& text, SourceLoc* out) {
  std::string head = text;
  SourceLoc l;
  const size_t open = text.rfind(" (");
  if (open != std::string::npos && !text.empty() && text.back() == ')') {
    l.function = text.substr(open + 2, text.size() - open - 3);
    head = text.substr(0, open);
  }
  const size_t colon = head.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == head.size()) return false;
  for (size_t i = colon + 1; i < head.size(); ++i)
    if (head[i] < '0' || head[i] > '9') return false;
  l.file = head.substr(0, colon);
  l.line = std::atoi(head.c_str() + colon + 1);
  *out = std::move(l);
  return true;
}

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  std::string r = file + ":" + std::to_string(line);
  if (!function.empty()) r += " (" + function + ")";
  return r;
}

}  // namespace fg
