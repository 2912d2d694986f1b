//===- KernelConformanceTest.cpp - a Device's kernels vs the interpreter --===//
//
// The conformance suite of the runtime's kernels, run against a backend's
// Device (DeviceUnderTest.h: the CPU's in ctest, the CUDA one's by
// bench/gpu), as IREE runs its hal/cts suite once per driver: every kernel
// of the kernel table on seeded random fp32 operands of several shapes
// (sizes 1, 3, 17 and other odd ones, non-square GEMMs, attention over S in
// {1, 5, 16} and heads in {1, 2, 4}, plus one S past the attention block
// size), in buffers of the device's arena, against the reference
// interpreter's kernel for the same op (zbc::interp::kernels) in F64 and in
// F32, on the same float-rounded operands.
//
// What "conforms" means, per element, with ref the F64 oracle:
//   |runtime - ref| <= tol * (1 + |ref|),  tol = 1e-5
// (~170 float roundings at unit scale; the worst measured outside GEMMs is
// 6e-7), except where a test says why: GEMMs scale tol with their reduction
// length (dotTol), and a device may state looser bounds for attention
// (DeviceTraits). Against the F32 oracle a kernel either must give the same
// bits (where it performs the same float operations in the same order:
// copies, elementwise ops, and sums it accumulates in the interpreter's
// order; a device that does not promise this is held to the next bound) or
// must be within 2 * tol (both are within tol of the exact result); that
// bound alone is looser where the F32 oracle loses digits the kernel keeps
// (LayerNorm of rows of mean 100).
//
// Every output buffer starts as NaN, so an element a kernel does not write
// fails, and sits between guard zones that must be left as they were
// (outputs and workspaces alike: a workspace has the bytes the kernel table
// states, KernelTable.h, as the memory plan gives it), so a kernel that
// writes past its buffer fails too. The elementwise kernels also run in
// place and must give the same bits. The kernels that read indices or
// labels are checked for both index types, and for their errors: an
// out-of-range value fails the call with its position, value and bound,
// writes nothing, and the interpreter rejects the same input.
//
// The interpreter has no document ids and no ignore_index, so the packed
// documents' semantics (issue 44) are held to it independently: attention
// with document ids must equal each document attended alone as a causal
// attention of its own length (and differ from the unmasked row), and a
// loss with ignored labels must equal the loss of the counted rows alone
// (ignored rows' gradients exactly 0; everything ignored: loss 0).
//
//===----------------------------------------------------------------------===//

#include "DeviceUnderTest.h"

#include "zbc/Interpreter/Kernels.h"
#include "zbc/runtime/KernelTable.h"

#include "zbc/contracts/VocabShards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace zbc::interp;
using namespace zbc::rt::conformance;
using zbc::rt::Indices;
namespace k = zbc::interp::kernels;

namespace {

constexpr Precision F32 = Precision::F32;
constexpr Precision F64 = Precision::F64;
constexpr double kTol = 1e-5;
/// The element type of every call's float tensors.
constexpr int32_t kF32 = ZBC_RT_F32;
/// An attention call without document ids (the kernel table's absent
/// OptIndices: a null pointer).
const Indices kNoDocuments{nullptr, ZBC_RT_I64};
/// The cross entropy's ignore_index where the test means none (PyTorch's
/// default, which no label in [0, classes) equals).
constexpr int64_t kIgnoreNone = -100;

zbc::rt::Device &device() { return *deviceUnderTest().device; }
const DeviceTraits &traits() { return deviceUnderTest().traits; }

//===----------------------------------------------------------------------===//
// The device's arena, buffers in it, and calls
//===----------------------------------------------------------------------===//

/// Counts the calls run, so that a buffer reads the device back once after
/// each.
uint64_t callsRun = 0;

/// The device's arena, allocated once (a Device allocates once); each test
/// takes its buffers from the start again (the fixture resets it).
class Arena {
public:
  static constexpr int64_t kBytes = 64 << 20;
  static Arena &get() {
    static Arena arena;
    return arena;
  }
  void reset() { used_ = 0; }
  /// `bytes` at an offset aligned as the memory plan aligns buffers.
  int64_t take(int64_t bytes) {
    int64_t at = (used_ + 255) / 256 * 256;
    used_ = at + bytes;
    if (used_ > kBytes)
      ADD_FAILURE() << "the test needs more than the arena's " << kBytes
                    << " bytes";
    return at;
  }

private:
  Arena() {
    program_.arena_bytes = kBytes;
    std::string error = device().allocate(program_);
    if (!error.empty())
      ADD_FAILURE() << "allocating the arena: " << error;
  }
  zbc_rt_program program_{}; // the device keeps a pointer to it
  int64_t used_ = 0;
};

/// Runs one device call: it must succeed, and so must the synchronize that
/// waits for it (a GPU reports a failed kernel there).
void run(const std::string &error) {
  EXPECT_EQ(error, "") << "the call failed";
  std::string later = device().synchronize();
  EXPECT_EQ(later, "") << "synchronize failed";
  ++callsRun;
}

/// The failure of a call that must fail: the call's, or the synchronize's.
std::string failureOf(const std::string &error) {
  std::string later = device().synchronize();
  ++callsRun;
  return error.empty() ? later : error;
}

constexpr int64_t kGuard = 16;
constexpr float kSentinel = -12345.5f;

/// n floats of the arena between two guard zones of kSentinel. The interior
/// starts as `init` (NaN unless given); what the device wrote is read back
/// after each call.
class Buffer {
public:
  explicit Buffer(int64_t n,
                  float init = std::numeric_limits<float>::quiet_NaN())
      : n_(n) {
    std::vector<float> host(n + 2 * kGuard, kSentinel);
    std::fill(host.begin() + kGuard, host.end() - kGuard, init);
    place(host);
  }
  /// A buffer holding the F32 tensor `t` (to run an in-place kernel on).
  explicit Buffer(const Tensor &t) : n_(t.numElements()) {
    std::vector<float> host(n_ + 2 * kGuard, kSentinel);
    std::copy_n(t.data<float>(), n_, host.begin() + kGuard);
    place(host);
  }
  /// The device's address of the interior.
  void *data() { return device().arena() + offset_; }
  int64_t size() const { return n_; }
  /// The interior as the device holds it after the last call.
  const float *host() const {
    fetch();
    return mirror_.data() + kGuard;
  }
  float operator[](int64_t i) const { return host()[i]; }
  bool guardsIntact() const {
    fetch();
    for (int64_t i = 0; i < kGuard; ++i)
      if (std::memcmp(&mirror_[i], &kSentinel, sizeof(float)) != 0 ||
          std::memcmp(&mirror_[kGuard + n_ + i], &kSentinel,
                      sizeof(float)) != 0)
        return false;
    return true;
  }

private:
  void place(const std::vector<float> &host) {
    // The interior at an aligned offset, the guard before it just below.
    int64_t bytes = static_cast<int64_t>(host.size() * sizeof(float));
    offset_ = Arena::get().take(bytes + 256) + 256;
    EXPECT_EQ(device().write(offset_ - kGuard * 4, host.data(), bytes), "");
  }
  void fetch() const {
    if (fetchedAfter_ == callsRun)
      return;
    mirror_.resize(n_ + 2 * kGuard);
    EXPECT_EQ(device().read(offset_ - kGuard * 4, mirror_.data(),
                            static_cast<int64_t>(mirror_.size() * 4)),
              "");
    fetchedAfter_ = callsRun;
  }

  int64_t n_;
  int64_t offset_ = 0;
  mutable std::vector<float> mirror_;
  mutable uint64_t fetchedAfter_ = ~uint64_t{0};
};

/// The F32 tensor `t` in the arena, as a kernel's input.
const void *on(const Tensor &t) {
  int64_t bytes = t.numElements() * static_cast<int64_t>(sizeof(float));
  int64_t offset = Arena::get().take(bytes);
  EXPECT_EQ(device().write(offset, t.data<float>(), bytes), "");
  return device().arena() + offset;
}

/// Indices of type I in the arena.
template <typename I> Indices on(const std::vector<I> &values) {
  int64_t bytes = static_cast<int64_t>(values.size() * sizeof(I));
  int64_t offset = Arena::get().take(bytes);
  EXPECT_EQ(device().write(offset, values.data(), bytes), "");
  return {device().arena() + offset,
          sizeof(I) == 4 ? ZBC_RT_I32 : ZBC_RT_I64};
}

/// Every test on the device under test, from an empty arena; skipped where
/// this machine has no such device.
class KernelConformance : public ::testing::Test {
protected:
  void SetUp() override {
    if (!deviceUnderTest().device)
      GTEST_SKIP() << deviceUnderTest().whyNone;
    Arena::get().reset();
  }
};

//===----------------------------------------------------------------------===//
// Operands and comparisons
//===----------------------------------------------------------------------===//

/// An F32 tensor of N(offset, scale^2) values.
Tensor randomF32(const Shape &shape, std::mt19937_64 &rng, double scale = 1.0,
                 double offset = 0.0) {
  std::normal_distribution<double> normal(offset, scale);
  Tensor t = Tensor::zeros(shape, F32);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, normal(rng));
  return t;
}

/// An integer tensor of values uniform in [0, bound).
Tensor randomIndices(const Shape &shape, int64_t bound, std::mt19937_64 &rng) {
  std::uniform_int_distribution<int64_t> uniform(0, bound - 1);
  std::vector<int64_t> values(Tensor::intZeros(shape).numElements());
  for (int64_t &v : values)
    v = uniform(rng);
  return Tensor::fromInts(shape, values);
}

template <typename I> std::vector<I> indicesAs(const Tensor &t) {
  std::vector<I> out(t.numElements());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[i] = static_cast<I>(t.getInt(i));
  return out;
}

int64_t product(const Shape &shape, size_t dropped = 0) {
  int64_t n = 1;
  for (size_t d = 0; d + dropped < shape.size(); ++d)
    n *= shape[d];
  return n;
}

std::string describe(const Shape &shape) { return formatShape(shape); }

Tensor unwrap(zbc::FailureOr<Tensor> result) {
  EXPECT_TRUE(zbc::succeeded(result));
  return zbc::succeeded(result) ? *result : Tensor();
}

/// Whether `actual` holds exactly the bits of the F32 tensor `expected`.
bool sameBits(const Buffer &actual, const Tensor &expected) {
  return actual.size() == expected.numElements() &&
         std::memcmp(actual.host(), expected.data<float>(),
                     actual.size() * sizeof(float)) == 0;
}

/// An in-place run gave the out-of-place run's bits and kept in its buffer.
void expectSameInPlace(const Buffer &inPlace, const Buffer &outOfPlace) {
  EXPECT_TRUE(inPlace.guardsIntact());
  EXPECT_EQ(std::memcmp(inPlace.host(), outOfPlace.host(),
                        outOfPlace.size() * sizeof(float)),
            0)
      << "in place differs";
}

/// The worst |actual - expected| / (1 + |expected|) and where it is; NaN
/// anywhere (an unwritten element) counts as infinitely bad.
struct Worst {
  double error = 0.0;
  int64_t at = -1;
};
template <typename Get> Worst worstError(int64_t n, const Tensor &expected,
                                         Get actual) {
  Worst worst;
  for (int64_t i = 0; i < n; ++i) {
    double a = actual(i), e = expected.get(i);
    double error = std::abs(a - e) / (1.0 + std::abs(e));
    if (std::isnan(error))
      error = std::numeric_limits<double>::infinity();
    if (error > worst.error || worst.at < 0)
      worst = {error, i};
  }
  return worst;
}

enum class Match32 {
  /// The same float operations in the same order as the F32 oracle (on a
  /// device that promises it, DeviceTraits; else Close).
  Bitwise,
  /// Within 2 * tol of the F32 oracle.
  Close,
};

/// The conformance check of one kernel result (see the file comment);
/// `tol32`, where given, replaces 2 * tol against the F32 oracle.
void expectConforms(const Buffer &actual, const Tensor &ref64,
                    const Tensor &ref32, double tol = kTol,
                    Match32 match = Match32::Close, double tol32 = 0.0) {
  ASSERT_EQ(actual.size(), ref64.numElements());
  EXPECT_TRUE(actual.guardsIntact()) << "kernel wrote outside its output";
  Worst worst =
      worstError(actual.size(), ref64, [&](int64_t i) { return actual[i]; });
  EXPECT_LE(worst.error, tol)
      << "vs F64 at element " << worst.at << " of " << actual.size() << ": "
      << actual[worst.at] << " vs " << ref64.get(worst.at);
  if (match == Match32::Bitwise && traits().sameBitsAsInterpreter) {
    EXPECT_TRUE(sameBits(actual, ref32)) << "differs from the F32 oracle";
    return;
  }
  Worst worst32 =
      worstError(actual.size(), ref32, [&](int64_t i) { return actual[i]; });
  EXPECT_LE(worst32.error, tol32 > 0.0 ? tol32 : 2 * tol)
      << "vs F32 at element " << worst32.at << ": " << actual[worst32.at]
      << " vs " << ref32.get(worst32.at);
}

/// The F64 and F32 oracle results of one interpreter call on F32 operands
/// (`fn` gets the operands cast to one precision).
template <typename Fn> std::pair<Tensor, Tensor> oracles(Fn fn) {
  return {fn(F64), fn(F32)};
}

Tensor in(const Tensor &t, Precision precision) { return t.cast(precision); }

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

/// A K-term dot product of unit-sized random values rounds ~K times at
/// partial sums of size ~sqrt(k): its error, a random walk, is ~eps K / sqrt 2
/// whatever the result (6.5e-6 measured at K = 130 on a result near 0). So
/// kTol up to K = 64, and proportionally more beyond.
double dotTol(int64_t K) { return kTol * std::max(1.0, K / 64.0); }

struct LinearCase {
  Shape x; // [..., in]
  int64_t out;
};
const LinearCase kLinearCases[] = {
    {{1, 1}, 1},  {{3, 17}, 5}, {{17, 3}, 64},
    {{2, 5, 16}, 24}, {{1, 33}, 1}, {{64, 1}, 3}, {{4, 25, 9}, 130},
};

TEST_F(KernelConformance, Linear) {
  std::mt19937_64 rng(1);
  for (const LinearCase &c : kLinearCases) {
    SCOPED_TRACE(describe(c.x) + " out " + std::to_string(c.out));
    int64_t rows = product(c.x, 1), inDim = c.x.back();
    Tensor x = randomF32(c.x, rng), w = randomF32({inDim, c.out}, rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::linear(in(x, p), in(w, p)); });
    Buffer y(rows * c.out);
    run(device().linear(kF32, on(x), on(w), y.data(), rows, inDim, c.out, 0));
    expectConforms(y, ref64, ref32, dotTol(inDim));
  }
}

/// PyTorch's layout, w [out, in]: the three kernels against the oracle.
TEST_F(KernelConformance, LinearWithAnOutInWeight) {
  std::mt19937_64 rng(4);
  for (const LinearCase &c : kLinearCases) {
    SCOPED_TRACE(describe(c.x) + " out " + std::to_string(c.out));
    int64_t rows = product(c.x, 1), inDim = c.x.back();
    Shape dyShape = c.x;
    dyShape.back() = c.out;
    Tensor x = randomF32(c.x, rng), w = randomF32({c.out, inDim}, rng);
    Tensor dy = randomF32(dyShape, rng);
    auto [y64, y32] = oracles(
        [&](Precision p) { return k::linear(in(x, p), in(w, p), true); });
    Buffer y(rows * c.out);
    run(device().linear(kF32, on(x), on(w), y.data(), rows, inDim, c.out, 1));
    expectConforms(y, y64, y32, dotTol(inDim));
    auto [dx64, dx32] = oracles([&](Precision p) {
      return k::linearGradInput(in(dy, p), in(w, p), true);
    });
    Buffer dx(rows * inDim);
    run(device().linearGradInput(kF32, on(dy), on(w), dx.data(), rows, inDim,
                                 c.out, 1));
    expectConforms(dx, dx64, dx32, dotTol(c.out));
    auto [dw64, dw32] = oracles([&](Precision p) {
      return k::linearGradWeight(in(x, p), in(dy, p), true);
    });
    Buffer dw(inDim * c.out);
    run(device().linearGradWeight(kF32, on(x), on(dy), dw.data(), rows, inDim,
                                  c.out, 1));
    expectConforms(dw, dw64, dw32, dotTol(rows));
  }
}

TEST_F(KernelConformance, LinearGradInput) {
  std::mt19937_64 rng(2);
  for (const LinearCase &c : kLinearCases) {
    SCOPED_TRACE(describe(c.x) + " out " + std::to_string(c.out));
    int64_t rows = product(c.x, 1), inDim = c.x.back();
    Shape dyShape = c.x;
    dyShape.back() = c.out;
    Tensor dy = randomF32(dyShape, rng), w = randomF32({inDim, c.out}, rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::linearGradInput(in(dy, p), in(w, p)); });
    Buffer dx(rows * inDim);
    run(device().linearGradInput(kF32, on(dy), on(w), dx.data(), rows, inDim,
                                 c.out, 0));
    expectConforms(dx, ref64, ref32, dotTol(c.out));
  }
}

TEST_F(KernelConformance, LinearGradWeight) {
  std::mt19937_64 rng(3);
  for (const LinearCase &c : kLinearCases) {
    SCOPED_TRACE(describe(c.x) + " out " + std::to_string(c.out));
    int64_t rows = product(c.x, 1), inDim = c.x.back();
    Shape dyShape = c.x;
    dyShape.back() = c.out;
    Tensor x = randomF32(c.x, rng), dy = randomF32(dyShape, rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::linearGradWeight(in(x, p), in(dy, p)); });
    Buffer dw(inDim * c.out);
    run(device().linearGradWeight(kF32, on(x), on(dy), dw.data(), rows, inDim,
                                  c.out, 0));
    expectConforms(dw, ref64, ref32, dotTol(rows));
  }
}

struct MatmulCase {
  Shape batch;
  int64_t M, K, N;
};
const MatmulCase kMatmulCases[] = {
    {{1}, 1, 1, 1},  {{3}, 5, 17, 2}, {{2}, 16, 3, 33},
    {{2, 3}, 4, 7, 9}, {{1}, 1, 64, 1}, {{5}, 17, 1, 3},
};

Shape withMatrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

std::string describe(const MatmulCase &c) {
  return describe(c.batch) + " M " + std::to_string(c.M) + " K " +
         std::to_string(c.K) + " N " + std::to_string(c.N);
}

TEST_F(KernelConformance, Matmul) {
  std::mt19937_64 rng(4);
  for (const MatmulCase &c : kMatmulCases) {
    SCOPED_TRACE(describe(c));
    int64_t batch = product(c.batch);
    Tensor a = randomF32(withMatrix(c.batch, c.M, c.K), rng);
    Tensor b = randomF32(withMatrix(c.batch, c.K, c.N), rng);
    auto [ref64, ref32] =
        oracles([&](Precision p) { return k::matmul(in(a, p), in(b, p)); });
    Buffer out(batch * c.M * c.N);
    run(device().matmul(kF32, on(a), on(b), out.data(), batch, c.M, c.K, c.N));
    expectConforms(out, ref64, ref32, dotTol(c.K));
  }
}

TEST_F(KernelConformance, MatmulGradLhs) {
  std::mt19937_64 rng(5);
  for (const MatmulCase &c : kMatmulCases) {
    SCOPED_TRACE(describe(c));
    int64_t batch = product(c.batch);
    Tensor dc = randomF32(withMatrix(c.batch, c.M, c.N), rng);
    Tensor b = randomF32(withMatrix(c.batch, c.K, c.N), rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::matmulGradLhs(in(dc, p), in(b, p)); });
    Buffer da(batch * c.M * c.K);
    run(device().matmulGradLhs(kF32, on(dc), on(b), da.data(), batch, c.M, c.K,
                               c.N));
    expectConforms(da, ref64, ref32, dotTol(c.N));
  }
}

TEST_F(KernelConformance, MatmulGradRhs) {
  std::mt19937_64 rng(6);
  for (const MatmulCase &c : kMatmulCases) {
    SCOPED_TRACE(describe(c));
    int64_t batch = product(c.batch);
    Tensor a = randomF32(withMatrix(c.batch, c.M, c.K), rng);
    Tensor dc = randomF32(withMatrix(c.batch, c.M, c.N), rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::matmulGradRhs(in(a, p), in(dc, p)); });
    Buffer db(batch * c.K * c.N);
    run(device().matmulGradRhs(kF32, on(a), on(dc), db.data(), batch, c.M, c.K,
                               c.N));
    expectConforms(db, ref64, ref32, dotTol(c.M));
  }
}

//===----------------------------------------------------------------------===//
// Elementwise and row-wise ops
//===----------------------------------------------------------------------===//

const Shape kRowShapes[] = {{1, 1}, {3, 17}, {2, 5, 7}, {1, 64}, {17, 3}};
const int64_t kSizes[] = {1, 3, 17, 1000};

/// Random values with the points where elementwise ops change behaviour
/// planted at the front: zeros of both signs, +-1, and large magnitudes.
Tensor withSpecials(int64_t n, std::mt19937_64 &rng, double scale) {
  Tensor t = randomF32({n}, rng, scale);
  const double specials[] = {0.0, -0.0, 1.0, -1.0, 5.0,  -5.0,
                             10.0, -10.0, 20.0, -20.0, 1e-3, -1e-3};
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(std::size(specials));
       ++i)
    t.set(i, specials[i]);
  return t;
}

TEST_F(KernelConformance, BiasAdd) {
  std::mt19937_64 rng(7);
  for (const Shape &shape : kRowShapes) {
    SCOPED_TRACE(describe(shape));
    int64_t rows = product(shape, 1), n = shape.back();
    Tensor x = randomF32(shape, rng), bias = randomF32({n}, rng);
    auto [ref64, ref32] =
        oracles([&](Precision p) { return k::biasAdd(in(x, p), in(bias, p)); });
    Buffer y(rows * n);
    run(device().biasAdd(kF32, on(x), on(bias), y.data(), rows, n));
    expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
    Buffer inPlace(x);
    run(device().biasAdd(kF32, inPlace.data(), on(bias), inPlace.data(), rows,
                         n));
    expectSameInPlace(inPlace, y);
  }
}

TEST_F(KernelConformance, AddAndAccumulate) {
  std::mt19937_64 rng(8);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor a = randomF32({n}, rng), b = randomF32({n}, rng);
    auto [ref64, ref32] =
        oracles([&](Precision p) { return k::add(in(a, p), in(b, p)); });
    Buffer y(n);
    run(device().add(kF32, on(a), on(b), y.data(), n));
    expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
    Buffer inPlaceA(a), inPlaceB(b);
    run(device().add(kF32, inPlaceA.data(), on(b), inPlaceA.data(), n));
    run(device().add(kF32, on(a), inPlaceB.data(), inPlaceB.data(), n));
    expectSameInPlace(inPlaceA, y);
    expectSameInPlace(inPlaceB, y);
    // accumulate is zb.add in place: acc = a, acc += b.
    Buffer acc(a);
    run(device().accumulate(static_cast<float *>(acc.data()), kF32, on(b), n));
    expectConforms(acc, ref64, ref32, kTol, Match32::Bitwise);
  }
}

TEST_F(KernelConformance, Transpose) {
  std::mt19937_64 rng(21);
  // Tiles of 32: shapes on, below and across their edges.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5},
                            {32, 32}, {33, 70}, {256, 64}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    Tensor x = randomF32({rows, cols}, rng);
    auto [ref64, ref32] =
        oracles([&](Precision p) { return k::transpose(in(x, p)); });
    Buffer y(rows * cols);
    run(device().transpose(kF32, on(x), y.data(), rows, cols));
    expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
  }
}

TEST_F(KernelConformance, Relu) {
  std::mt19937_64 rng(9);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor x = withSpecials(n, rng, 1.0);
    auto [ref64, ref32] = oracles([&](Precision p) { return k::relu(in(x, p)); });
    Buffer y(n);
    run(device().relu(kF32, on(x), y.data(), n));
    expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
    Buffer inPlace(x);
    run(device().relu(kF32, inPlace.data(), inPlace.data(), n));
    expectSameInPlace(inPlace, y);
  }
}

TEST_F(KernelConformance, ReluGrad) {
  std::mt19937_64 rng(10);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor dy = randomF32({n}, rng), x = withSpecials(n, rng, 1.0);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::reluGrad(in(dy, p), in(x, p)); });
    Buffer dx(n);
    run(device().reluGrad(kF32, on(dy), on(x), dx.data(), n));
    expectConforms(dx, ref64, ref32, kTol, Match32::Bitwise);
    Buffer inPlace(dy);
    run(device().reluGrad(kF32, inPlace.data(), on(x), inPlace.data(), n));
    expectSameInPlace(inPlace, dx);
  }
}

// GELU's tanh (and exp) is a polynomial here (Note [Vectorisable exp] in
// Kernels.cpp), within a few ulp of the F64 oracle: kTol holds with room to
// spare, tails (|x| = 10, 20) included.
TEST_F(KernelConformance, Gelu) {
  std::mt19937_64 rng(11);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor x = withSpecials(n, rng, 3.0);
    auto [ref64, ref32] = oracles([&](Precision p) { return k::gelu(in(x, p)); });
    Buffer y(n);
    run(device().gelu(kF32, on(x), y.data(), n));
    expectConforms(y, ref64, ref32);
    Buffer inPlace(x);
    run(device().gelu(kF32, inPlace.data(), inPlace.data(), n));
    expectSameInPlace(inPlace, y);
  }
}

TEST_F(KernelConformance, GeluGrad) {
  std::mt19937_64 rng(12);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor dy = randomF32({n}, rng), x = withSpecials(n, rng, 3.0);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::geluGrad(in(dy, p), in(x, p)); });
    Buffer dx(n);
    run(device().geluGrad(kF32, on(dy), on(x), dx.data(), n));
    expectConforms(dx, ref64, ref32);
    Buffer inPlace(dy);
    run(device().geluGrad(kF32, inPlace.data(), on(x), inPlace.data(), n));
    expectSameInPlace(inPlace, dx);
  }
}

TEST_F(KernelConformance, SwiGluAndItsGradients) {
  std::mt19937_64 rng(18);
  for (int64_t n : kSizes) {
    SCOPED_TRACE("n " + std::to_string(n));
    Tensor gate = withSpecials(n, rng, 6.0), up = randomF32({n}, rng);
    Tensor dy = randomF32({n}, rng);
    auto [y64, y32] = oracles(
        [&](Precision p) { return k::swiGlu(in(gate, p), in(up, p)); });
    Buffer y(n);
    run(device().swiGlu(kF32, on(gate), on(up), y.data(), n));
    expectConforms(y, y64, y32);
    auto [dg64, dg32] = oracles([&](Precision p) {
      return k::swiGluGradGate(in(dy, p), in(gate, p), in(up, p));
    });
    Buffer dgate(n);
    run(device().swiGluGradGate(kF32, on(dy), on(gate), on(up), dgate.data(),
                                n));
    expectConforms(dgate, dg64, dg32);
    auto [du64, du32] = oracles(
        [&](Precision p) { return k::swiGluGradUp(in(dy, p), in(gate, p)); });
    Buffer dup(n);
    run(device().swiGluGradUp(kF32, on(dy), on(gate), dup.data(), n));
    expectConforms(dup, du64, du32);
  }
}

TEST_F(KernelConformance, Fill) {
  for (int64_t n : kSizes)
    for (double value : {0.0, 1.0, -0.3}) {
      SCOPED_TRACE("n " + std::to_string(n) + " value " +
                   std::to_string(value));
      Tensor ref64 = k::fill({n}, F64, value), ref32 = k::fill({n}, F32, value);
      Buffer y(n);
      run(device().fill(kF32, y.data(), n, static_cast<float>(value)));
      expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
    }
}

TEST_F(KernelConformance, BiasGrad) {
  std::mt19937_64 rng(13);
  for (const Shape &shape : kRowShapes) {
    SCOPED_TRACE(describe(shape));
    int64_t rows = product(shape, 1), n = shape.back();
    Tensor dy = randomF32(shape, rng);
    auto [ref64, ref32] =
        oracles([&](Precision p) { return k::biasGrad(in(dy, p)); });
    Buffer db(n);
    run(device().biasGrad(kF32, on(dy), db.data(), rows, n));
    // Row by row, as the interpreter sums.
    expectConforms(db, ref64, ref32, kTol, Match32::Bitwise);
  }
}

struct LayerNormCase {
  Shape shape;
  double epsilon;
  double offset; // of the inputs' mean
};
const LayerNormCase kLayerNormCases[] = {
    {{1, 1}, 1e-5, 0.0},  {{3, 17}, 1e-5, 0.0}, {{5, 64}, 1e-5, 0.0},
    {{2, 3, 8}, 1e-3, 0.0}, {{4, 33}, 1e-5, 100.0},
};

/// The bound against the F32 oracle. Its two-pass row mean of inputs of mean
/// 100 and spread 1 rounds at ulp(100), ~1e-5 of the spread, which xhat and
/// so every LayerNorm result inherits (kernel vs F32 oracle: up to 3.7e-5
/// measured). The kernel shifts each row by its first element first
/// (rowStats in Kernels.cpp) and meets kTol against F64; against the F32
/// oracle the offset case is held to that oracle's own error, 1e-4.
double layerNormTol32(const LayerNormCase &c) {
  return c.offset == 0.0 ? 2 * kTol : 1e-4;
}

TEST_F(KernelConformance, LayerNorm) {
  std::mt19937_64 rng(14);
  for (const LayerNormCase &c : kLayerNormCases) {
    SCOPED_TRACE(describe(c.shape) + " offset " + std::to_string(c.offset));
    int64_t rows = product(c.shape, 1), n = c.shape.back();
    Tensor x = randomF32(c.shape, rng, 1.0, c.offset);
    Tensor gamma = randomF32({n}, rng, 1.0, 1.0), beta = randomF32({n}, rng);
    auto [ref64, ref32] = oracles([&](Precision p) {
      return k::layerNorm(in(x, p), in(gamma, p), in(beta, p), c.epsilon);
    });
    Buffer y(rows * n);
    run(device().layerNorm(kF32, on(x), on(gamma), on(beta), y.data(), rows, n,
                           static_cast<float>(c.epsilon)));
    expectConforms(y, ref64, ref32, kTol, Match32::Close, layerNormTol32(c));
  }
}

TEST_F(KernelConformance, LayerNormGradInput) {
  std::mt19937_64 rng(15);
  for (const LayerNormCase &c : kLayerNormCases) {
    SCOPED_TRACE(describe(c.shape) + " offset " + std::to_string(c.offset));
    int64_t rows = product(c.shape, 1), n = c.shape.back();
    Tensor dy = randomF32(c.shape, rng);
    Tensor x = randomF32(c.shape, rng, 1.0, c.offset);
    Tensor gamma = randomF32({n}, rng, 1.0, 1.0);
    auto [ref64, ref32] = oracles([&](Precision p) {
      return k::layerNormGradInput(in(dy, p), in(x, p), in(gamma, p),
                                   c.epsilon);
    });
    Buffer dx(rows * n);
    run(device().layerNormGradInput(kF32, on(dy), on(x), on(gamma), dx.data(),
                                    rows, n, static_cast<float>(c.epsilon)));
    expectConforms(dx, ref64, ref32, kTol, Match32::Close, layerNormTol32(c));
  }
}

TEST_F(KernelConformance, LayerNormGradGamma) {
  std::mt19937_64 rng(16);
  for (const LayerNormCase &c : kLayerNormCases) {
    SCOPED_TRACE(describe(c.shape) + " offset " + std::to_string(c.offset));
    int64_t rows = product(c.shape, 1), n = c.shape.back();
    Tensor dy = randomF32(c.shape, rng);
    Tensor x = randomF32(c.shape, rng, 1.0, c.offset);
    auto [ref64, ref32] = oracles([&](Precision p) {
      return k::layerNormGradGamma(in(dy, p), in(x, p), c.epsilon);
    });
    Buffer dgamma(n);
    run(device().layerNormGradGamma(kF32, on(dy), on(x), dgamma.data(), rows, n,
                                    static_cast<float>(c.epsilon)));
    expectConforms(dgamma, ref64, ref32, kTol, Match32::Close,
                   layerNormTol32(c));
  }
}

/// RMSNorm has no mean to round: the LayerNorm shapes, at offset 0 and at
/// offset 100 (rows far from zero: the squares' sum carries it).
TEST_F(KernelConformance, RmsNormAndItsGradients) {
  std::mt19937_64 rng(17);
  for (const LayerNormCase &c : kLayerNormCases) {
    SCOPED_TRACE(describe(c.shape) + " offset " + std::to_string(c.offset));
    int64_t rows = product(c.shape, 1), n = c.shape.back();
    Tensor x = randomF32(c.shape, rng, 1.0, c.offset);
    Tensor w = randomF32({n}, rng, 1.0, 1.0), dy = randomF32(c.shape, rng);
    float eps = static_cast<float>(c.epsilon);
    auto [y64, y32] = oracles([&](Precision p) {
      return k::rmsNorm(in(x, p), in(w, p), c.epsilon);
    });
    Buffer y(rows * n);
    run(device().rmsNorm(kF32, on(x), on(w), y.data(), rows, n, eps));
    expectConforms(y, y64, y32, kTol, Match32::Close, 2 * kTol);
    auto [dx64, dx32] = oracles([&](Precision p) {
      return k::rmsNormGradInput(in(dy, p), in(x, p), in(w, p), c.epsilon);
    });
    Buffer dx(rows * n);
    run(device().rmsNormGradInput(kF32, on(dy), on(x), on(w), dx.data(), rows,
                                  n, eps));
    expectConforms(dx, dx64, dx32, kTol, Match32::Close, 2 * kTol);
    auto [dw64, dw32] = oracles([&](Precision p) {
      return k::rmsNormGradWeight(in(dy, p), in(x, p), c.epsilon);
    });
    Buffer dw(n);
    run(device().rmsNormGradWeight(kF32, on(dy), on(x), dw.data(), rows, n,
                                   eps));
    expectConforms(dw, dw64, dw32, kTol, Match32::Close, 2 * kTol);
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t B, S, heads, headDim;
};

/// B in {1, 2} x S in {1, 5, 16} x heads in {1, 2, 4}, head sizes 3 and 8,
/// and S = 130: two full blocks of Note [Causal attention blocks] (64 rows)
/// and a ragged one.
std::vector<AttentionCase> attentionCases() {
  std::vector<AttentionCase> cases;
  for (int64_t B : {1, 2})
    for (int64_t S : {1, 5, 16})
      for (int64_t heads : {1, 2, 4})
        cases.push_back({B, S, heads, (S + heads) % 2 ? 3 : 8});
  cases.push_back({1, 130, 2, 4});
  cases.push_back({2, 65, 1, 5});
  return cases;
}

std::string describe(const AttentionCase &c) {
  return "B " + std::to_string(c.B) + " S " + std::to_string(c.S) +
         " heads " + std::to_string(c.heads) + " d " +
         std::to_string(c.headDim);
}

TEST_F(KernelConformance, CausalAttention) {
  std::mt19937_64 rng(17);
  for (const AttentionCase &c : attentionCases()) {
    SCOPED_TRACE(describe(c));
    int64_t H = c.heads * c.headDim;
    Tensor qkv = randomF32({c.B, c.S, 3 * H}, rng);
    auto [ref64, ref32] = oracles(
        [&](Precision p) { return k::causalAttention(in(qkv, p), c.heads); });
    Buffer out(c.B * c.S * H);
    int64_t bytes = zbc_rt_causal_attention_workspace(c.S, sizeof(float));
    Buffer workspace(bytes / 4);
    run(device().causalAttention(kF32, on(qkv), kNoDocuments, out.data(),
                                 workspace.data(), bytes, c.B, c.S, H,
                                 c.heads));
    EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
    expectConforms(out, ref64, ref32, traits().attentionTol);
  }
}

TEST_F(KernelConformance, CausalAttentionGrad) {
  std::mt19937_64 rng(18);
  for (const AttentionCase &c : attentionCases()) {
    SCOPED_TRACE(describe(c));
    int64_t H = c.heads * c.headDim;
    Tensor qkv = randomF32({c.B, c.S, 3 * H}, rng);
    Tensor dout = randomF32({c.B, c.S, H}, rng);
    auto [ref64, ref32] = oracles([&](Precision p) {
      return k::causalAttentionGrad(in(dout, p), in(qkv, p), c.heads);
    });
    Buffer dqkv(c.B * c.S * 3 * H);
    int64_t bytes = zbc_rt_causal_attention_grad_workspace(c.S, sizeof(float));
    Buffer workspace(bytes / 4);
    run(device().causalAttentionGrad(kF32, on(dout), on(qkv), kNoDocuments,
                                     dqkv.data(), workspace.data(), bytes, c.B,
                                     c.S, H, c.heads));
    EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
    expectConforms(dqkv, ref64, ref32, traits().attentionGradTol);
  }
}

/// zb.attention's cases: attentionCases() with every kv head count that
/// divides the heads (1: multi-query; heads: multi-head).
template <typename Fn> void forEachGroupedCase(Fn fn) {
  for (const AttentionCase &c : attentionCases())
    for (int64_t kvHeads = 1; kvHeads <= c.heads; ++kvHeads)
      if (c.heads % kvHeads == 0) {
        SCOPED_TRACE(describe(c) + " kv_heads " + std::to_string(kvHeads));
        fn(c, kvHeads);
      }
}

TEST_F(KernelConformance, GroupedAttention) {
  std::mt19937_64 rng(23);
  forEachGroupedCase([&](const AttentionCase &c, int64_t kvHeads) {
    int64_t H = c.heads * c.headDim, KV = kvHeads * c.headDim;
    Tensor q = randomF32({c.B, c.S, H}, rng), k = randomF32({c.B, c.S, KV}, rng),
           v = randomF32({c.B, c.S, KV}, rng);
    auto [ref64, ref32] = oracles([&](Precision p) {
      return k::attention(in(q, p), in(k, p), in(v, p), c.heads, kvHeads);
    });
    Buffer out(c.B * c.S * H);
    int64_t bytes = zbc_rt_attention_workspace(c.B, c.S, c.heads, c.headDim,
                                               sizeof(float));
    Buffer workspace(bytes / 4);
    run(device().attention(kF32, on(q), on(k), on(v), kNoDocuments,
                           out.data(), workspace.data(), bytes, c.B, c.S,
                           c.heads, kvHeads, c.headDim));
    EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
    expectConforms(out, ref64, ref32, traits().attentionTol);
  });
}

TEST_F(KernelConformance, GroupedAttentionGrad) {
  std::mt19937_64 rng(24);
  forEachGroupedCase([&](const AttentionCase &c, int64_t kvHeads) {
    int64_t H = c.heads * c.headDim, KV = kvHeads * c.headDim;
    Tensor q = randomF32({c.B, c.S, H}, rng), k = randomF32({c.B, c.S, KV}, rng),
           v = randomF32({c.B, c.S, KV}, rng),
           dout = randomF32({c.B, c.S, H}, rng);
    k::AttentionGrads g64 = k::attentionGrad(in(dout, F64), in(q, F64),
                                             in(k, F64), in(v, F64), c.heads,
                                             kvHeads);
    k::AttentionGrads g32 =
        k::attentionGrad(dout, q, k, v, c.heads, kvHeads);
    // dk and dv start as NaN (as every output): the first head of each group
    // must write them, not add to them.
    Buffer dq(c.B * c.S * H), dk(c.B * c.S * KV), dv(c.B * c.S * KV);
    int64_t bytes = zbc_rt_attention_grad_workspace(c.B, c.S, c.heads,
                                                    c.headDim, sizeof(float));
    Buffer workspace(bytes / 4);
    run(device().attentionGrad(kF32, on(dout), on(q), on(k), on(v),
                               kNoDocuments, dq.data(), dk.data(), dv.data(),
                               workspace.data(), bytes, c.B, c.S, c.heads,
                               kvHeads, c.headDim));
    EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
    double tol = traits().attentionGradTol;
    expectConforms(dq, g64.dq, g32.dq, tol);
    expectConforms(dk, g64.dk, g32.dk, tol);
    expectConforms(dv, g64.dv, g32.dv, tol);
  });
}

//===----------------------------------------------------------------------===//
// Document masks (Note [Document masks] in dialect/docs/ZB.md)
//===----------------------------------------------------------------------===//
//
// The oracle knows no document ids, which makes the check independent: a
// row of documents attended with ids must equal each document attended
// alone, as an unmasked causal attention of its own length (the
// interpreter's, on the document's rows), and must differ from the same
// row attended unmasked.

/// Attention over rows of packed documents: per row, the documents'
/// lengths in order (summing to S).
struct DocumentCase {
  int64_t S, heads, headDim;
  std::vector<std::vector<int64_t>> rows;
  /// The ids alternate 0, 1, 0, ... along a row instead of growing: a run
  /// of equal ids is a document even where its id came before (ids equal
  /// over [j, i], not only at j and i).
  bool recurringIds = false;
};

/// Documents of length 1 (first, last, between others and a whole row of
/// them); documents across the 64-row blocks of the CPU and the GPU tiles
/// (S 65 and 130); rows of one document (the unmasked case, inside a
/// masked call).
std::vector<DocumentCase> documentCases() {
  return {
      {16, 2, 8, {{1, 6, 4, 5}, {16}}},
      {5, 4, 3, {{2, 3}, {1, 1, 1, 1, 1}}},
      {65, 1, 5, {{64, 1}, {3, 61, 1}}},
      {130, 2, 4, {{1, 70, 1, 58}}},
      {24, 4, 8, {{5, 7, 12}, {12, 1, 11}}, /*recurringIds=*/true},
  };
}

std::string describe(const DocumentCase &c) {
  std::string text = "S " + std::to_string(c.S) + " heads " +
                     std::to_string(c.heads) + " d " +
                     std::to_string(c.headDim) + " documents";
  for (const std::vector<int64_t> &row : c.rows) {
    text += " [";
    for (size_t k = 0; k < row.size(); ++k)
      text += (k ? " " : "") + std::to_string(row[k]);
    text += "]";
  }
  return text + (c.recurringIds ? " recurring ids" : "");
}

/// Calls fn(b, s0, n) for each document [s0, s0 + n) of row b.
template <typename Fn> void forEachDocument(const DocumentCase &c, Fn fn) {
  for (size_t b = 0; b < c.rows.size(); ++b) {
    int64_t s0 = 0;
    for (int64_t n : c.rows[b]) {
      fn(static_cast<int64_t>(b), s0, n);
      s0 += n;
    }
    ASSERT_EQ(s0, c.S) << "row " << b << "'s documents do not fill it";
  }
}

/// The ids [B, S] of a case: non-decreasing along a row (steps of 1 and 2),
/// and each row starting with the id the previous row ended with, as a
/// document split across rows is packed (each row's part is attended
/// alone); or alternating 0, 1, ... (recurringIds).
template <typename I> std::vector<I> documentIds(const DocumentCase &c) {
  std::vector<I> ids;
  int64_t id = 3;
  for (const std::vector<int64_t> &row : c.rows)
    for (size_t k = 0; k < row.size(); ++k) {
      if (k > 0)
        id += 1 + static_cast<int64_t>(k % 2);
      const int64_t value = c.recurringIds ? static_cast<int64_t>(k % 2) : id;
      ids.insert(ids.end(), row[k], static_cast<I>(value));
    }
  return ids;
}

/// Rows [s0, s0 + n) of batch b of t [B, S, W], as a [1, n, W] tensor.
Tensor documentOf(const Tensor &t, int64_t b, int64_t s0, int64_t n) {
  const int64_t S = t.shape()[1], W = t.shape()[2];
  Tensor piece = Tensor::zeros({1, n, W}, t.precision());
  for (int64_t e = 0; e < n * W; ++e)
    piece.set(e, t.get((b * S + s0) * W + e));
  return piece;
}

/// Writes `piece` [1, n, W] into rows [s0, s0 + n) of batch b of t.
void putDocument(Tensor &t, int64_t b, int64_t s0, const Tensor &piece) {
  const int64_t S = t.shape()[1], W = t.shape()[2];
  for (int64_t e = 0; e < piece.numElements(); ++e)
    t.set((b * S + s0) * W + e, piece.get(e));
}

/// The masked result differs from the unmasked one (`unmasked` the F64
/// oracle without ids): some element by far more than the tolerance.
void expectDiffersFromUnmasked(const Buffer &masked, const Tensor &unmasked,
                               double tol) {
  Worst worst = worstError(masked.size(), unmasked,
                           [&](int64_t i) { return masked[i]; });
  EXPECT_GT(worst.error, 100 * tol)
      << "the masked result is the unmasked one: the ids changed nothing";
}

template <typename I> void checkMaskedCausalAttention() {
  std::mt19937_64 rng(31);
  for (const DocumentCase &c : documentCases()) {
    SCOPED_TRACE(describe(c));
    const int64_t B = static_cast<int64_t>(c.rows.size()),
                  H = c.heads * c.headDim;
    Tensor qkv = randomF32({B, c.S, 3 * H}, rng);
    Tensor dout = randomF32({B, c.S, H}, rng);
    Tensor out64 = Tensor::zeros({B, c.S, H}, F64),
           out32 = Tensor::zeros({B, c.S, H}, F32),
           dqkv64 = Tensor::zeros({B, c.S, 3 * H}, F64),
           dqkv32 = Tensor::zeros({B, c.S, 3 * H}, F32);
    forEachDocument(c, [&](int64_t b, int64_t s0, int64_t n) {
      Tensor part = documentOf(qkv, b, s0, n), dpart = documentOf(dout, b, s0, n);
      putDocument(out64, b, s0, k::causalAttention(in(part, F64), c.heads));
      putDocument(out32, b, s0, k::causalAttention(part, c.heads));
      putDocument(dqkv64, b, s0,
                  k::causalAttentionGrad(in(dpart, F64), in(part, F64),
                                         c.heads));
      putDocument(dqkv32, b, s0, k::causalAttentionGrad(dpart, part, c.heads));
    });
    Indices documents = on(documentIds<I>(c));

    Buffer out(B * c.S * H);
    int64_t bytes = zbc_rt_causal_attention_workspace(c.S, sizeof(float));
    Buffer workspace(bytes / 4);
    run(device().causalAttention(kF32, on(qkv), documents, out.data(),
                                 workspace.data(), bytes, B, c.S, H, c.heads));
    EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
    expectConforms(out, out64, out32, traits().attentionTol);
    expectDiffersFromUnmasked(out, k::causalAttention(in(qkv, F64), c.heads),
                              traits().attentionTol);

    Buffer dqkv(B * c.S * 3 * H);
    bytes = zbc_rt_causal_attention_grad_workspace(c.S, sizeof(float));
    Buffer gradWorkspace(bytes / 4);
    run(device().causalAttentionGrad(kF32, on(dout), on(qkv), documents,
                                     dqkv.data(), gradWorkspace.data(), bytes,
                                     B, c.S, H, c.heads));
    EXPECT_TRUE(gradWorkspace.guardsIntact()) << "wrote past the workspace";
    expectConforms(dqkv, dqkv64, dqkv32, traits().attentionGradTol);
    expectDiffersFromUnmasked(
        dqkv, k::causalAttentionGrad(in(dout, F64), in(qkv, F64), c.heads),
        traits().attentionGradTol);
  }
}
TEST_F(KernelConformance, CausalAttentionDocumentsI32) {
  checkMaskedCausalAttention<int32_t>();
}
TEST_F(KernelConformance, CausalAttentionDocumentsI64) {
  checkMaskedCausalAttention<int64_t>();
}

/// zb.attention and its gradient under documentCases(), with every kv head
/// count that divides the heads.
template <typename I> void checkMaskedGroupedAttention() {
  std::mt19937_64 rng(32);
  for (const DocumentCase &c : documentCases())
    for (int64_t kvHeads = 1; kvHeads <= c.heads; ++kvHeads) {
      if (c.heads % kvHeads)
        continue;
      SCOPED_TRACE(describe(c) + " kv_heads " + std::to_string(kvHeads));
      const int64_t B = static_cast<int64_t>(c.rows.size()),
                    H = c.heads * c.headDim, KV = kvHeads * c.headDim;
      Tensor q = randomF32({B, c.S, H}, rng), k = randomF32({B, c.S, KV}, rng),
             v = randomF32({B, c.S, KV}, rng),
             dout = randomF32({B, c.S, H}, rng);
      Tensor out64 = Tensor::zeros({B, c.S, H}, F64),
             out32 = Tensor::zeros({B, c.S, H}, F32);
      k::AttentionGrads g64{Tensor::zeros({B, c.S, H}, F64),
                            Tensor::zeros({B, c.S, KV}, F64),
                            Tensor::zeros({B, c.S, KV}, F64)};
      k::AttentionGrads g32{Tensor::zeros({B, c.S, H}, F32),
                            Tensor::zeros({B, c.S, KV}, F32),
                            Tensor::zeros({B, c.S, KV}, F32)};
      forEachDocument(c, [&](int64_t b, int64_t s0, int64_t n) {
        Tensor qp = documentOf(q, b, s0, n), kp = documentOf(k, b, s0, n),
               vp = documentOf(v, b, s0, n), dp = documentOf(dout, b, s0, n);
        putDocument(out64, b, s0,
                    k::attention(in(qp, F64), in(kp, F64), in(vp, F64),
                                 c.heads, kvHeads));
        putDocument(out32, b, s0, k::attention(qp, kp, vp, c.heads, kvHeads));
        k::AttentionGrads p64 =
            k::attentionGrad(in(dp, F64), in(qp, F64), in(kp, F64),
                             in(vp, F64), c.heads, kvHeads);
        k::AttentionGrads p32 =
            k::attentionGrad(dp, qp, kp, vp, c.heads, kvHeads);
        putDocument(g64.dq, b, s0, p64.dq);
        putDocument(g64.dk, b, s0, p64.dk);
        putDocument(g64.dv, b, s0, p64.dv);
        putDocument(g32.dq, b, s0, p32.dq);
        putDocument(g32.dk, b, s0, p32.dk);
        putDocument(g32.dv, b, s0, p32.dv);
      });
      Indices documents = on(documentIds<I>(c));

      Buffer out(B * c.S * H);
      int64_t bytes = zbc_rt_attention_workspace(B, c.S, c.heads, c.headDim,
                                                 sizeof(float));
      Buffer workspace(bytes / 4);
      run(device().attention(kF32, on(q), on(k), on(v), documents, out.data(),
                             workspace.data(), bytes, B, c.S, c.heads, kvHeads,
                             c.headDim));
      EXPECT_TRUE(workspace.guardsIntact()) << "wrote past the workspace";
      expectConforms(out, out64, out32, traits().attentionTol);
      expectDiffersFromUnmasked(out,
                                k::attention(in(q, F64), in(k, F64),
                                             in(v, F64), c.heads, kvHeads),
                                traits().attentionTol);

      Buffer dq(B * c.S * H), dk(B * c.S * KV), dv(B * c.S * KV);
      bytes = zbc_rt_attention_grad_workspace(B, c.S, c.heads, c.headDim,
                                              sizeof(float));
      Buffer gradWorkspace(bytes / 4);
      run(device().attentionGrad(kF32, on(dout), on(q), on(k), on(v),
                                 documents, dq.data(), dk.data(), dv.data(),
                                 gradWorkspace.data(), bytes, B, c.S, c.heads,
                                 kvHeads, c.headDim));
      EXPECT_TRUE(gradWorkspace.guardsIntact()) << "wrote past the workspace";
      const double tol = traits().attentionGradTol;
      expectConforms(dq, g64.dq, g32.dq, tol);
      expectConforms(dk, g64.dk, g32.dk, tol);
      expectConforms(dv, g64.dv, g32.dv, tol);
      k::AttentionGrads unmasked =
          k::attentionGrad(in(dout, F64), in(q, F64), in(k, F64), in(v, F64),
                           c.heads, kvHeads);
      expectDiffersFromUnmasked(dq, unmasked.dq, tol);
      expectDiffersFromUnmasked(dk, unmasked.dk, tol);
    }
}
TEST_F(KernelConformance, GroupedAttentionDocumentsI32) {
  checkMaskedGroupedAttention<int32_t>();
}
TEST_F(KernelConformance, GroupedAttentionDocumentsI64) {
  checkMaskedGroupedAttention<int64_t>();
}

//===----------------------------------------------------------------------===//
// Index-reading ops
//===----------------------------------------------------------------------===//

struct EmbeddingCase {
  Shape indices;
  int64_t vocab, hidden;
};
// Few rows and many positions repeat indices, which embeddingGrad must add.
const EmbeddingCase kEmbeddingCases[] = {
    {{1}, 1, 1}, {{3}, 5, 7}, {{2, 9}, 50, 32}, {{4, 17}, 3, 5},
};

template <typename I> void checkEmbedding() {
  std::mt19937_64 rng(19);
  for (const EmbeddingCase &c : kEmbeddingCases) {
    SCOPED_TRACE(describe(c.indices) + " vocab " + std::to_string(c.vocab));
    Tensor indices = randomIndices(c.indices, c.vocab, rng);
    Tensor table = randomF32({c.vocab, c.hidden}, rng);
    std::string error;
    Tensor ref64 = unwrap(k::embedding(indices, in(table, F64), error));
    Tensor ref32 = unwrap(k::embedding(indices, table, error));
    std::vector<I> ids = indicesAs<I>(indices);
    int64_t count = indices.numElements();
    Buffer y(count * c.hidden);
    run(device().embedding(kF32, on(ids), on(table), y.data(), count, c.vocab,
                           c.hidden));
    expectConforms(y, ref64, ref32, kTol, Match32::Bitwise);
  }
}
TEST_F(KernelConformance, EmbeddingI32) { checkEmbedding<int32_t>(); }
TEST_F(KernelConformance, EmbeddingI64) { checkEmbedding<int64_t>(); }

template <typename I> void checkEmbeddingGrad() {
  std::mt19937_64 rng(20);
  for (const EmbeddingCase &c : kEmbeddingCases) {
    SCOPED_TRACE(describe(c.indices) + " vocab " + std::to_string(c.vocab));
    Tensor indices = randomIndices(c.indices, c.vocab, rng);
    Shape dyShape = c.indices;
    dyShape.push_back(c.hidden);
    Tensor dy = randomF32(dyShape, rng);
    std::string error;
    Tensor ref64 =
        unwrap(k::embeddingGrad(indices, in(dy, F64), c.vocab, error));
    Tensor ref32 = unwrap(k::embeddingGrad(indices, dy, c.vocab, error));
    std::vector<I> ids = indicesAs<I>(indices);
    Buffer dtable(c.vocab * c.hidden);
    run(device().embeddingGrad(kF32, on(ids), on(dy), dtable.data(),
                               indices.numElements(), c.vocab, c.hidden));
    // Scatter-adds in position order, as the interpreter.
    expectConforms(dtable, ref64, ref32, kTol, Match32::Bitwise);
  }
}
TEST_F(KernelConformance, EmbeddingGradI32) { checkEmbeddingGrad<int32_t>(); }
TEST_F(KernelConformance, EmbeddingGradI64) { checkEmbeddingGrad<int64_t>(); }

struct RopeCase {
  Shape x; // [B, S, heads * headDim]
  int64_t headDim;
  bool llama3;
};
// One pair; odd head counts; head_dim 256 (the bound); Llama 3's scaling
// at positions beyond its original context.
const RopeCase kRopeCases[] = {
    {{1, 1, 2}, 2, false},    {{2, 5, 12}, 4, false}, {{1, 3, 768}, 256, false},
    {{2, 7, 3 * 64}, 64, true}, {{3, 4, 32}, 8, true},
};

template <typename I> void checkRope() {
  std::mt19937_64 rng(22);
  for (const RopeCase &c : kRopeCases) {
    SCOPED_TRACE(describe(c.x) + " head_dim " + std::to_string(c.headDim) +
                 (c.llama3 ? " llama3" : ""));
    k::RopeParams params;
    params.headDim = c.headDim;
    params.theta = 500000.0;
    if (c.llama3) {
      params.llama3Factor = 8.0;
      params.llama3Low = 1.0;
      params.llama3High = 4.0;
      params.llama3Original = 64.0;
    }
    Tensor positions = randomIndices({c.x[0], c.x[1]}, 8192, rng);
    Tensor x = randomF32(c.x, rng);
    std::vector<I> ids = indicesAs<I>(positions);
    int64_t rows = c.x[0] * c.x[1], width = c.x[2];
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(inverse ? "rope_grad" : "rope");
      auto [ref64, ref32] = oracles([&](Precision p) {
        return k::rope(in(x, p), positions, params, inverse);
      });
      Buffer y(rows * width);
      // The device's reals are floats, as the kernel table passes them; 0
      // for a Llama 3 scaling the op does not have.
      auto rope = inverse ? &zbc::rt::Device::ropeGrad : &zbc::rt::Device::rope;
      run((device().*rope)(
          kF32, on(x), on(ids), y.data(), rows, width, c.headDim,
          static_cast<float>(params.theta),
          static_cast<float>(params.llama3Factor),
          static_cast<float>(params.llama3Low),
          static_cast<float>(params.llama3High),
          static_cast<float>(params.llama3Original)));
      expectConforms(y, ref64, ref32);
    }
  }
}
TEST_F(KernelConformance, RopeI32) { checkRope<int32_t>(); }
TEST_F(KernelConformance, RopeI64) { checkRope<int64_t>(); }

struct CrossEntropyCase {
  Shape labels;
  int64_t classes;
  double scale, offset; // of the logits
};
// Logits of spread 30 and logits around 1000 check the max-subtracted
// log-sum-exp; one class makes every loss 0.
const CrossEntropyCase kCrossEntropyCases[] = {
    {{1}, 1, 1.0, 0.0},    {{3}, 2, 1.0, 0.0},   {{17}, 17, 3.0, 0.0},
    {{2, 4}, 100, 1.0, 0.0}, {{5}, 9, 30.0, 0.0}, {{6}, 33, 3.0, 1000.0},
};

template <typename I> void checkCrossEntropy() {
  std::mt19937_64 rng(21);
  for (const CrossEntropyCase &c : kCrossEntropyCases) {
    SCOPED_TRACE(describe(c.labels) + " classes " + std::to_string(c.classes) +
                 " offset " + std::to_string(c.offset));
    Shape logitShape = c.labels;
    logitShape.push_back(c.classes);
    Tensor logits = randomF32(logitShape, rng, c.scale, c.offset);
    Tensor labels = randomIndices(c.labels, c.classes, rng);
    std::string error;
    Tensor ref64 = unwrap(k::crossEntropy(in(logits, F64), labels, -100, error));
    Tensor ref32 = unwrap(k::crossEntropy(logits, labels, -100, error));
    std::vector<I> ids = indicesAs<I>(labels);
    Buffer loss(1);
    run(device().crossEntropy(kF32, on(logits), on(ids), loss.data(),
                              labels.numElements(), c.classes, kIgnoreNone));
    expectConforms(loss, ref64, ref32);
  }
}
TEST_F(KernelConformance, CrossEntropyI32) { checkCrossEntropy<int32_t>(); }
TEST_F(KernelConformance, CrossEntropyI64) { checkCrossEntropy<int64_t>(); }

template <typename I> void checkCrossEntropyGrad() {
  std::mt19937_64 rng(22);
  for (const CrossEntropyCase &c : kCrossEntropyCases) {
    SCOPED_TRACE(describe(c.labels) + " classes " + std::to_string(c.classes) +
                 " offset " + std::to_string(c.offset));
    Shape logitShape = c.labels;
    logitShape.push_back(c.classes);
    Tensor logits = randomF32(logitShape, rng, c.scale, c.offset);
    Tensor labels = randomIndices(c.labels, c.classes, rng);
    Tensor dloss = Tensor::scalar(0.7, F32);
    std::string error;
    Tensor ref64 = unwrap(
        k::crossEntropyGrad(in(logits, F64), labels, in(dloss, F64), -100, error));
    Tensor ref32 = unwrap(k::crossEntropyGrad(logits, labels, dloss, -100, error));
    std::vector<I> ids = indicesAs<I>(labels);
    Buffer dlogits(logits.numElements());
    run(device().crossEntropyGrad(kF32, on(logits), on(ids), on(dloss),
                                  dlogits.data(), labels.numElements(),
                                  c.classes, kIgnoreNone));
    expectConforms(dlogits, ref64, ref32);
  }
}
TEST_F(KernelConformance, CrossEntropyGradI32) {
  checkCrossEntropyGrad<int32_t>();
}
TEST_F(KernelConformance, CrossEntropyGradI64) {
  checkCrossEntropyGrad<int64_t>();
}

//===----------------------------------------------------------------------===//
// The output layer over vocabulary shards
//===----------------------------------------------------------------------===//
//
// Note [Softmax over vocabulary shards]: each shard's statistics, the loss
// from the merged ones (zb.reduce softmax: the oracle's vocabMerge) and
// each shard's logits gradient, against the oracle, over splits that do
// and do not divide the vocabulary, with ignored labels (-100) among them;
// and the oracle's sharded loss against its unsplit zb.cross_entropy.

/// Columns [first, first + n) of `logits` [rows, V].
Tensor columnsOf(const Tensor &logits, int64_t first, int64_t n) {
  int64_t vocab = logits.shape().back(), rows = logits.numElements() / vocab;
  Tensor part = Tensor::zeros({rows, n}, F32);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      part.set(r * n + c, logits.get(r * vocab + first + c));
  return part;
}

template <typename I> void checkVocabShards() {
  std::mt19937_64 rng(31);
  struct Case {
    int64_t rows, vocab, ranks;
    double scale;
  };
  for (const Case &c : {Case{6, 12, 3, 3.0}, Case{5, 17, 4, 30.0},
                        Case{4, 3, 3, 1.0}}) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + " vocab " +
                 std::to_string(c.vocab) + " over " + std::to_string(c.ranks));
    Tensor logits = randomF32({c.rows, c.vocab}, rng, c.scale);
    Tensor labels = randomIndices({c.rows}, c.vocab, rng);
    std::vector<int64_t> ids64(c.rows);
    for (int64_t r = 0; r < c.rows; ++r)
      ids64[r] = r % 3 == 1 ? kIgnoreNone : labels.getInt(r);
    labels = Tensor::fromInts({c.rows}, ids64);
    std::vector<I> ids = indicesAs<I>(labels);
    Tensor dloss = Tensor::scalar(0.7, F32);
    std::string error;
    std::vector<Tensor> shards, stats64, stats32;
    for (int64_t k = 0; k < c.ranks; ++k) {
      zbc::VocabRows rows = zbc::vocabRowsOf(c.vocab, c.ranks, k);
      Tensor shard = columnsOf(logits, rows.first, rows.rows);
      stats64.push_back(unwrap(k::vocabStats(in(shard, F64), labels,
                                             rows.first, c.vocab, -100,
                                             error)));
      stats32.push_back(unwrap(
          k::vocabStats(shard, labels, rows.first, c.vocab, -100, error)));
      Buffer stats(4 * c.rows);
      run(device().vocabStats(kF32, on(shard), on(ids), stats.data(), c.rows,
                              rows.rows, rows.first, c.vocab, -100));
      expectConforms(stats, stats64.back(), stats32.back());
      shards.push_back(std::move(shard));
    }
    std::vector<Tensor> merged64 = k::vocabMerge(stats64),
                        merged32 = k::vocabMerge(stats32);
    Tensor loss64 = unwrap(k::vocabLoss(merged64[0], labels, c.vocab, -100,
                                        error));
    // The oracle's sharded loss is its unsplit one.
    EXPECT_NEAR(loss64.get(0),
                unwrap(k::crossEntropy(in(logits, F64), labels, -100, error))
                    .get(0),
                1e-12);
    Buffer loss(1);
    run(device().vocabLoss(kF32, on(merged32[0]), on(ids), loss.data(), c.rows,
                           c.vocab, -100));
    expectConforms(loss, loss64,
                   unwrap(k::vocabLoss(merged32[0], labels, c.vocab, -100,
                                       error)));
    for (int64_t k = 0; k < c.ranks; ++k) {
      zbc::VocabRows rows = zbc::vocabRowsOf(c.vocab, c.ranks, k);
      Tensor ref64 = unwrap(k::vocabGrad(in(shards[k], F64), labels,
                                         merged64[k], in(dloss, F64),
                                         rows.first, c.vocab, -100, error));
      Tensor ref32 = unwrap(k::vocabGrad(shards[k], labels, merged32[k], dloss,
                                         rows.first, c.vocab, -100, error));
      Buffer dlogits(shards[k].numElements());
      run(device().vocabGrad(kF32, on(shards[k]), on(ids), on(merged32[k]),
                             on(dloss), dlogits.data(), c.rows, rows.rows,
                             rows.first, c.vocab, -100));
      expectConforms(dlogits, ref64, ref32);
    }
  }
}
TEST_F(KernelConformance, VocabShardsI32) { checkVocabShards<int32_t>(); }
TEST_F(KernelConformance, VocabShardsI64) { checkVocabShards<int64_t>(); }

//===----------------------------------------------------------------------===//
// ignore_index
//===----------------------------------------------------------------------===//
//
// The oracle knows no ignore_index either: the loss over labels some of
// which are ignored must be the oracle's loss over the counted rows alone
// (their mean), and the gradient's counted rows the oracle's gradient of
// those rows alone (scaled by dloss / counted); the ignored rows' gradient
// is exactly 0, and with every label ignored the loss is exactly 0 too.

/// Which labels a case ignores, and the ignore_index it passes.
enum class Ignored {
  EveryThird, // -100 at rows 0, 3, 6, ...
  AClass,     // ignore_index = the first row's label, a valid class
  All,        // every label -100
};

const char *describe(Ignored ignored) {
  switch (ignored) {
  case Ignored::EveryThird:
    return "every third label ignored";
  case Ignored::AClass:
    return "ignore_index a class";
  case Ignored::All:
    return "every label ignored";
  }
  return "";
}

/// The labels of a case with its ignored ones, and its ignore_index.
std::pair<std::vector<int64_t>, int64_t> withIgnored(const Tensor &labels,
                                                     Ignored ignored) {
  std::vector<int64_t> values(labels.numElements());
  for (int64_t r = 0; r < labels.numElements(); ++r)
    values[r] = labels.getInt(r);
  constexpr int64_t kIgnore = -100;
  switch (ignored) {
  case Ignored::EveryThird:
    for (size_t r = 0; r < values.size(); r += 3)
      values[r] = kIgnore;
    return {values, kIgnore};
  case Ignored::AClass:
    return {values, values[0]};
  case Ignored::All:
    std::fill(values.begin(), values.end(), kIgnore);
    return {values, kIgnore};
  }
  return {values, kIgnore};
}

/// Calls fn(ignored) for the three ways of ignoring labels.
template <typename Fn> void forEachIgnored(Fn fn) {
  for (Ignored ignored : {Ignored::EveryThird, Ignored::AClass, Ignored::All}) {
    SCOPED_TRACE(describe(ignored));
    fn(ignored);
  }
}

/// The counted rows of logits [rows, classes] and their labels.
struct Counted {
  std::vector<int64_t> rows;
  Tensor logits, labels;
};
Counted countedRows(const Tensor &logits, const std::vector<int64_t> &labels,
                    int64_t ignoreIndex, int64_t classes) {
  Counted counted;
  for (int64_t r = 0; r < static_cast<int64_t>(labels.size()); ++r)
    if (labels[r] != ignoreIndex)
      counted.rows.push_back(r);
  const int64_t n = static_cast<int64_t>(counted.rows.size());
  if (n == 0)
    return counted;
  counted.logits = Tensor::zeros({n, classes}, F32);
  std::vector<int64_t> kept;
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t c = 0; c < classes; ++c)
      counted.logits.set(k * classes + c,
                         logits.get(counted.rows[k] * classes + c));
    kept.push_back(labels[counted.rows[k]]);
  }
  counted.labels = Tensor::fromInts({n}, kept);
  return counted;
}

template <typename I> void checkCrossEntropyIgnoreIndex() {
  std::mt19937_64 rng(33);
  for (const CrossEntropyCase &c : kCrossEntropyCases)
    forEachIgnored([&](Ignored ignored) {
      SCOPED_TRACE(describe(c.labels) + " classes " +
                   std::to_string(c.classes));
      const int64_t rows = product(c.labels);
      Tensor logits = randomF32({rows, c.classes}, rng, c.scale, c.offset);
      auto [labels, ignoreIndex] =
          withIgnored(randomIndices(c.labels, c.classes, rng), ignored);
      Counted counted = countedRows(logits, labels, ignoreIndex, c.classes);
      std::vector<I> ids(labels.begin(), labels.end());
      Buffer loss(1);
      run(device().crossEntropy(kF32, on(logits), on(ids), loss.data(), rows,
                                c.classes, ignoreIndex));
      if (counted.rows.empty()) {
        EXPECT_TRUE(loss.guardsIntact());
        EXPECT_EQ(loss[0], 0.0f) << "no label counts: the loss is 0";
        return;
      }
      std::string error;
      Tensor ref64 =
          unwrap(k::crossEntropy(in(counted.logits, F64), counted.labels, -100, error));
      Tensor ref32 = unwrap(k::crossEntropy(counted.logits, counted.labels, -100, error));
      expectConforms(loss, ref64, ref32);
    });
}
TEST_F(KernelConformance, CrossEntropyIgnoreIndexI32) {
  checkCrossEntropyIgnoreIndex<int32_t>();
}
TEST_F(KernelConformance, CrossEntropyIgnoreIndexI64) {
  checkCrossEntropyIgnoreIndex<int64_t>();
}

template <typename I> void checkCrossEntropyGradIgnoreIndex() {
  std::mt19937_64 rng(34);
  for (const CrossEntropyCase &c : kCrossEntropyCases)
    forEachIgnored([&](Ignored ignored) {
      SCOPED_TRACE(describe(c.labels) + " classes " +
                   std::to_string(c.classes));
      const int64_t rows = product(c.labels);
      Tensor logits = randomF32({rows, c.classes}, rng, c.scale, c.offset);
      auto [labels, ignoreIndex] =
          withIgnored(randomIndices(c.labels, c.classes, rng), ignored);
      Counted counted = countedRows(logits, labels, ignoreIndex, c.classes);
      Tensor dloss = Tensor::scalar(0.7, F32);
      std::vector<I> ids(labels.begin(), labels.end());
      Buffer dlogits(rows * c.classes);
      run(device().crossEntropyGrad(kF32, on(logits), on(ids), on(dloss),
                                    dlogits.data(), rows, c.classes,
                                    ignoreIndex));
      // The ignored rows: exactly 0 (a NaN start left unwritten fails).
      std::vector<bool> isCounted(rows, false);
      for (int64_t r : counted.rows)
        isCounted[r] = true;
      EXPECT_TRUE(dlogits.guardsIntact());
      for (int64_t r = 0; r < rows; ++r) {
        if (isCounted[r])
          continue;
        for (int64_t k = 0; k < c.classes; ++k) {
          ASSERT_EQ(dlogits[r * c.classes + k], 0.0f)
              << "ignored row " << r << " class " << k;
        }
      }
      if (counted.rows.empty())
        return;
      // The counted rows: the oracle's gradient of them alone, whose mean
      // is over them alone.
      std::string error;
      Tensor part64 = unwrap(k::crossEntropyGrad(
          in(counted.logits, F64), counted.labels, in(dloss, F64), -100, error));
      Tensor part32 = unwrap(
          k::crossEntropyGrad(counted.logits, counted.labels, dloss, -100, error));
      Tensor ref64 = Tensor::zeros({rows, c.classes}, F64),
             ref32 = Tensor::zeros({rows, c.classes}, F32);
      for (size_t n = 0; n < counted.rows.size(); ++n)
        for (int64_t k = 0; k < c.classes; ++k) {
          const int64_t to = counted.rows[n] * c.classes + k,
                        from = static_cast<int64_t>(n) * c.classes + k;
          ref64.set(to, part64.get(from));
          ref32.set(to, part32.get(from));
        }
      expectConforms(dlogits, ref64, ref32);
    });
}
TEST_F(KernelConformance, CrossEntropyGradIgnoreIndexI32) {
  checkCrossEntropyGradIgnoreIndex<int32_t>();
}
TEST_F(KernelConformance, CrossEntropyGradIgnoreIndexI64) {
  checkCrossEntropyGradIgnoreIndex<int64_t>();
}

//===----------------------------------------------------------------------===//
// Index errors
//===----------------------------------------------------------------------===//

/// One bad index at `position` among good ones in [0, bound).
struct BadIndexCase {
  int64_t position, value;
};

template <typename I> std::vector<BadIndexCase> badIndexCases(int64_t bound) {
  std::vector<BadIndexCase> cases = {
      {0, -1}, {2, bound}, {4, bound + 7}};
  // A value that does not fit 32 bits must not be truncated into range.
  if constexpr (sizeof(I) == 8)
    cases.push_back({3, (int64_t{1} << 32) + 1});
  else
    cases.push_back({3, std::numeric_limits<int32_t>::min()});
  return cases;
}

/// Indices 0, 1, ... (mod bound), five of them, with the bad one planted.
Tensor indicesWithBad(int64_t bound, const BadIndexCase &bad) {
  std::vector<int64_t> values(5);
  for (int64_t i = 0; i < 5; ++i)
    values[i] = i % bound;
  values[bad.position] = bad.value;
  return Tensor::fromInts({5}, values);
}

/// The call failed naming `bad` (its value, position and the bound), and
/// wrote nothing.
void expectIndexError(const std::string &error, const BadIndexCase &bad,
                      int64_t bound, const Buffer &out) {
  EXPECT_NE(error.find(std::to_string(bad.value)), std::string::npos) << error;
  EXPECT_NE(error.find("position " + std::to_string(bad.position)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("[0, " + std::to_string(bound) + ")"),
            std::string::npos)
      << error;
  EXPECT_TRUE(out.guardsIntact());
  for (int64_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], 7.0f) << "output element " << i << " was written";
}

/// Skips the test on a device whose index errors end its run
/// (DeviceTraits::indexErrorsRecoverable).
#define SKIP_UNLESS_INDEX_ERRORS_RECOVER()                                     \
  if (!traits().indexErrorsRecoverable)                                        \
  GTEST_SKIP() << "this device's first index error is sticky (a rank stops "   \
                  "at it); bench/gpu/kernel-check checks its recording"

template <typename I> void checkIndexErrors() {
  constexpr int64_t kVocab = 4, kHidden = 3;
  std::mt19937_64 rng(23);
  Tensor table = randomF32({kVocab, kHidden}, rng);
  Tensor dy = randomF32({5, kHidden}, rng);
  Tensor logits = randomF32({5, kVocab}, rng);
  Tensor dloss = Tensor::scalar(1.0, F32);
  for (const BadIndexCase &bad : badIndexCases<I>(kVocab)) {
    SCOPED_TRACE("value " + std::to_string(bad.value) + " at " +
                 std::to_string(bad.position));
    Tensor indices = indicesWithBad(kVocab, bad);
    std::vector<I> ids = indicesAs<I>(indices);
    ASSERT_EQ(static_cast<int64_t>(ids[bad.position]), bad.value);
    std::string message;
    {
      EXPECT_TRUE(zbc::failed(k::embedding(indices, table, message)));
      Buffer y(5 * kHidden, 7.0f);
      expectIndexError(failureOf(device().embedding(kF32, on(ids), on(table),
                                                    y.data(), 5, kVocab,
                                                    kHidden)),
                       bad, kVocab, y);
    }
    {
      EXPECT_TRUE(
          zbc::failed(k::embeddingGrad(indices, dy, kVocab, message)));
      Buffer dtable(kVocab * kHidden, 7.0f);
      expectIndexError(failureOf(device().embeddingGrad(
                           kF32, on(ids), on(dy), dtable.data(), 5, kVocab,
                           kHidden)),
                       bad, kVocab, dtable);
    }
    {
      EXPECT_TRUE(zbc::failed(k::crossEntropy(logits, indices, -100, message)));
      Buffer loss(1, 7.0f);
      expectIndexError(failureOf(device().crossEntropy(
                           kF32, on(logits), on(ids), loss.data(), 5, kVocab,
                           kIgnoreNone)),
                       bad, kVocab, loss);
    }
    {
      EXPECT_TRUE(zbc::failed(
          k::crossEntropyGrad(logits, indices, dloss, -100, message)));
      Buffer dlogits(5 * kVocab, 7.0f);
      expectIndexError(failureOf(device().crossEntropyGrad(
                           kF32, on(logits), on(ids), on(dloss),
                           dlogits.data(), 5, kVocab, kIgnoreNone)),
                       bad, kVocab, dlogits);
    }
  }
}
TEST_F(KernelConformance, IndexErrorsI32) {
  SKIP_UNLESS_INDEX_ERRORS_RECOVER();
  checkIndexErrors<int32_t>();
}
TEST_F(KernelConformance, IndexErrorsI64) {
  SKIP_UNLESS_INDEX_ERRORS_RECOVER();
  checkIndexErrors<int64_t>();
}

/// The first bad index is the one reported.
TEST_F(KernelConformance, IndexErrorReportsTheFirst) {
  SKIP_UNLESS_INDEX_ERRORS_RECOVER();
  std::vector<int64_t> ids = {1, 9, 0, -3};
  Tensor table = Tensor::zeros({2, 2}, F32);
  Buffer y(4 * 2, 7.0f);
  expectIndexError(failureOf(device().embedding(kF32, on(ids), on(table),
                                                y.data(), 4, 2, 2)),
                   {1, 9}, 2, y);
}

} // namespace
