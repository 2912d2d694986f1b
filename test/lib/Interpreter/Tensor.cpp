//===- Tensor.cpp - dense tensors of the reference interpreter ------------===//
//
// Construction, element access and comparison of zbc::interp::Tensor. Misuse
// of the API by a caller (a value list of the wrong length, a negative
// dimension, an out-of-range flat index) is a programming error and stops
// the program with a message; errors in the data a model is run on are the
// interpreter's to report, through MLIR diagnostics, never here. Links no
// LLVM library (ZBCInterpreterKernels, CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Tensor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace zbc::interp {

/// Stops on a misuse of the Tensor API (a caller bug, not bad data).
[[noreturn]] static void misuse(const std::string &what) {
  std::fprintf(stderr, "zbc::interp::Tensor: %s\n", what.c_str());
  std::abort();
}

static int64_t countElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      misuse("negative dimension");
    n *= dim;
  }
  return n;
}

Tensor::Tensor() : Tensor(Shape{}, ElementKind::Float, Precision::F64) {}

Tensor::Tensor(Shape shape, ElementKind kind, Precision precision)
    : shape_(std::move(shape)), numElements_(countElements(shape_)),
      kind_(kind), precision_(kind == ElementKind::Int ? Precision::F64
                                                       : precision) {
  if (kind_ == ElementKind::Int)
    i64_.assign(numElements_, 0);
  else if (precision_ == Precision::F32)
    f32_.assign(numElements_, 0.0f);
  else
    f64_.assign(numElements_, 0.0);
}

Tensor Tensor::zeros(Shape shape, Precision precision) {
  return Tensor(std::move(shape), ElementKind::Float, precision);
}

Tensor Tensor::filled(Shape shape, Precision precision, double value) {
  Tensor t = zeros(std::move(shape), precision);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, value);
  return t;
}

Tensor Tensor::fromValues(Shape shape, Precision precision,
                          const std::vector<double> &values) {
  Tensor t = zeros(std::move(shape), precision);
  if (static_cast<int64_t>(values.size()) != t.numElements())
    misuse("fromValues: " +
                             std::to_string(values.size()) +
                             " values for shape " + formatShape(t.shape()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, values[i]);
  return t;
}

Tensor Tensor::scalar(double value, Precision precision) {
  return filled(Shape{}, precision, value);
}

Tensor Tensor::intZeros(Shape shape) {
  return Tensor(std::move(shape), ElementKind::Int, Precision::F64);
}

Tensor Tensor::fromInts(Shape shape, std::vector<int64_t> values) {
  Tensor t = intZeros(std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numElements())
    misuse("fromInts: " +
                             std::to_string(values.size()) +
                             " values for shape " + formatShape(t.shape()));
  t.i64_ = std::move(values);
  return t;
}

static void checkFlat(const Tensor &t, int64_t flat) {
  if (flat < 0 || flat >= t.numElements())
    misuse("element " +
                             std::to_string(flat) + " of a tensor of shape " +
                             formatShape(t.shape()));
}

double Tensor::get(int64_t flat) const {
  checkFlat(*this, flat);
  if (isInt())
    return static_cast<double>(i64_[flat]);
  if (precision_ == Precision::F32)
    return f32_[flat];
  return f64_[flat];
}

void Tensor::set(int64_t flat, double value) {
  checkFlat(*this, flat);
  if (isInt())
    misuse("set on an integer tensor");
  if (precision_ == Precision::F32)
    f32_[flat] = static_cast<float>(value);
  else
    f64_[flat] = value;
}

int64_t Tensor::getInt(int64_t flat) const {
  checkFlat(*this, flat);
  if (!isInt())
    misuse("getInt on a float tensor");
  return i64_[flat];
}

void Tensor::setInt(int64_t flat, int64_t value) {
  checkFlat(*this, flat);
  if (!isInt())
    misuse("setInt on a float tensor");
  i64_[flat] = value;
}

int64_t Tensor::flatIndex(const Shape &index) const {
  if (index.size() != shape_.size())
    misuse("flatIndex: rank mismatch");
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape_[d])
      misuse("flatIndex: index out of "
                               "range for shape " + formatShape(shape_));
    flat = flat * shape_[d] + index[d];
  }
  return flat;
}

Tensor Tensor::cast(Precision precision) const {
  if (isInt() || precision == precision_)
    return *this;
  Tensor t = zeros(shape_, precision);
  for (int64_t i = 0; i < numElements_; ++i)
    t.set(i, get(i));
  return t;
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> values(numElements_);
  for (int64_t i = 0; i < numElements_; ++i)
    values[i] = get(i);
  return values;
}

std::string Tensor::toString() const {
  std::ostringstream os;
  os.precision(17);
  os << (isInt() ? "i64" : precision_ == Precision::F32 ? "f32" : "f64")
     << formatShape(shape_) << " {";
  for (int64_t i = 0; i < numElements_; ++i) {
    os << (i ? ", " : "");
    if (isInt())
      os << getInt(i);
    else
      os << get(i);
  }
  os << "}";
  return os.str();
}

bool bitwiseEqual(const Tensor &a, const Tensor &b) {
  if (a.kind() != b.kind() || a.shape() != b.shape())
    return false;
  size_t n = static_cast<size_t>(a.numElements());
  if (a.isInt())
    return std::memcmp(a.data<int64_t>(), b.data<int64_t>(),
                       n * sizeof(int64_t)) == 0;
  if (a.precision() != b.precision())
    return false;
  if (a.precision() == Precision::F32)
    return std::memcmp(a.data<float>(), b.data<float>(), n * sizeof(float)) ==
           0;
  return std::memcmp(a.data<double>(), b.data<double>(),
                     n * sizeof(double)) == 0;
}

double relativeError(const Tensor &actual, const Tensor &expected) {
  if (actual.kind() != expected.kind() || actual.shape() != expected.shape())
    return std::numeric_limits<double>::infinity();
  double diff = 0.0, norm = 0.0;
  for (int64_t i = 0; i < actual.numElements(); ++i) {
    double d = actual.get(i) - expected.get(i);
    diff += d * d;
    norm += expected.get(i) * expected.get(i);
  }
  diff = std::sqrt(diff);
  norm = std::sqrt(norm);
  return norm == 0.0 ? diff : diff / norm;
}

std::string formatShape(const Shape &shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string formatIndex(const Shape &shape, int64_t flat) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(index);
}

} // namespace zbc::interp
