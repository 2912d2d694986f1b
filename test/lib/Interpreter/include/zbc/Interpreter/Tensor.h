//===- Tensor.h - dense tensors of the reference interpreter ----*- C++ -*-===//
//
// The values the reference interpreter computes with: a shape and a flat,
// row-major buffer of float, double or int64 elements. A float tensor carries
// the precision it is stored (and was computed) in, so an F32 run is float
// arithmetic from end to end and can be compared with an F64 run of the same
// IR. Integer tensors (embedding indices, class labels) always hold int64,
// whatever integer width the IR declares.
//
// This header includes no MLIR; tests and tools that only handle values can
// use it alone.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_INTERPRETER_TENSOR_H
#define ZBC_INTERPRETER_TENSOR_H

#include <cassert>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace zbc::interp {

/// The arithmetic every float op of a run is carried out in. The element type
/// the IR declares (f16, bf16, f32, f64) does not change it: the interpreter
/// is an oracle, and the caller picks how exact it must be. One exception,
/// to match the runtime: at F32, values of IR type bf16 are rounded to bf16
/// (Note [bf16], Executor.cpp); they are still stored as float.
enum class Precision { F32, F64 };

enum class ElementKind { Float, Int };

using Shape = std::vector<int64_t>;

class Tensor {
public:
  /// A 0-D F64 zero; exists so that Tensor can live in maps and FailureOr.
  Tensor();

  /// Float tensors. `values` must hold exactly as many elements as `shape`;
  /// they are rounded to `precision`.
  static Tensor zeros(Shape shape, Precision precision);
  static Tensor filled(Shape shape, Precision precision, double value);
  static Tensor fromValues(Shape shape, Precision precision,
                           const std::vector<double> &values);
  static Tensor scalar(double value, Precision precision);
  /// Integer tensors.
  static Tensor intZeros(Shape shape);
  static Tensor fromInts(Shape shape, std::vector<int64_t> values);

  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const { return numElements_; }
  ElementKind kind() const { return kind_; }
  bool isFloat() const { return kind_ == ElementKind::Float; }
  bool isInt() const { return kind_ == ElementKind::Int; }
  /// The precision of a float tensor (F64 for integer tensors; unused there).
  Precision precision() const { return precision_; }

  /// Element `flat` (row-major) as a double, for any kind.
  double get(int64_t flat) const;
  /// Sets element `flat` of a float tensor, rounding to its precision.
  void set(int64_t flat, double value);
  int64_t getInt(int64_t flat) const;
  void setInt(int64_t flat, int64_t value);
  /// The row-major position of a multi-index; `index` has one entry per dim.
  int64_t flatIndex(const Shape &index) const;
  double at(const Shape &index) const { return get(flatIndex(index)); }

  /// The buffer, typed: float or double for a float tensor of that
  /// precision, int64_t for an integer tensor. Kernels use these.
  template <typename T> T *data();
  template <typename T> const T *data() const {
    return const_cast<Tensor *>(this)->data<T>();
  }

  /// This tensor in another precision (integer tensors are returned as is).
  Tensor cast(Precision precision) const;
  std::vector<double> toDoubles() const;
  /// "f32[2, 2] {1, 2, 3, 4}", for test failure messages.
  std::string toString() const;

private:
  Tensor(Shape shape, ElementKind kind, Precision precision);

  Shape shape_;
  int64_t numElements_ = 1;
  ElementKind kind_ = ElementKind::Float;
  Precision precision_ = Precision::F64;
  // Exactly one buffer is in use, chosen by kind_ and precision_.
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<int64_t> i64_;
};

template <typename T> T *Tensor::data() {
  if constexpr (std::is_same_v<T, float>) {
    assert(isFloat() && precision_ == Precision::F32 && "not an f32 tensor");
    return f32_.data();
  } else if constexpr (std::is_same_v<T, double>) {
    assert(isFloat() && precision_ == Precision::F64 && "not an f64 tensor");
    return f64_.data();
  } else {
    static_assert(std::is_same_v<T, int64_t>, "float, double or int64_t");
    assert(isInt() && "not an integer tensor");
    return i64_.data();
  }
}

/// Same kind, precision and shape, and the same bits in every element (so
/// 0.0 and -0.0 differ and a NaN equals itself). Used to check that two
/// executions of the same computation are identical, not merely close.
bool bitwiseEqual(const Tensor &a, const Tensor &b);

/// ||actual - expected||_2 / ||expected||_2, in double; the absolute norm of
/// the difference when `expected` is zero, and +inf if the shapes or kinds
/// differ. Precisions may differ (that is the point of an F32 vs F64 check).
double relativeError(const Tensor &actual, const Tensor &expected);

/// "[2, 3]".
std::string formatShape(const Shape &shape);
/// The multi-index of row-major position `flat` in `shape`, as "[1, 0]".
std::string formatIndex(const Shape &shape, int64_t flat);

} // namespace zbc::interp

#endif // ZBC_INTERPRETER_TENSOR_H
