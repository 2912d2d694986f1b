//===- KernelCalls.cpp - the C ABI's kernel calls, on the rank's device ---===//
//
// Each zbc_rt_<op> resolves its buffer ids (frame slots included), checks
// that each buffer has the element type and size the op's shape says (a
// disagreement between the generated code and its tables is a compiler
// bug, reported rather than run), tells the ledger what the kernel reads
// and writes (Note [Ledger]), and calls the kernel on the rank's device
// (Device.h: the CPU's, or a GPU's). The float tensors of one call share
// one element type, f32 or bf16 (Note [bf16]); gradient accumulators and
// the loss accumulator are f32.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Rank.h"

#include "zbc/contracts/Shards.h"

#include <fmt/format.h>

#include <cstring>

using namespace zbc::rt;

namespace {

/// The buffers of one kernel call, checked and recorded.
class Call {
public:
  Call(zbc_rt_rank *rank, const char *kernel) : rank_(rank), kernel_(kernel) {}

  /// The elements `buffer` holds for a tensor of `elements`: a parameter
  /// or a gradient of a sharded program is padded to whole shards (Note
  /// [Sharded optimizer]), its elements first; the kernel reads those.
  static int64_t heldElements(const zbc_rt_program &p,
                              const zbc_rt_buffer &buffer, int64_t elements) {
    bool shardable = buffer.kind == ZBC_RT_PARAM || buffer.kind == ZBC_RT_GRAD ||
                     buffer.kind == ZBC_RT_STEP_GRAD;
    return shardable && p.zero > 0 ? zbc::paddedElements(elements, p.replicas)
                                   : elements;
  }

  /// A float buffer of `elements` the kernel reads: f32 or bf16, the type
  /// of the call's other float buffers.
  const void *in(int32_t id, int64_t elements) {
    return access(id, elements, floatElement(id), false);
  }
  /// A float buffer of `elements` the kernel writes.
  void *out(int32_t id, int64_t elements) {
    return access(id, elements, floatElement(id), true);
  }
  /// An f32 buffer (an accumulator) the kernel reads and writes, of
  /// `elements` or, sharded, padded to whole shards (Note [Sharded
  /// optimizer]). A whole gradient of the step (zero 2) is zeroed by the
  /// step's first add (Note [Sharded gradients]).
  float *accumulator(int32_t id, int64_t elements) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return static_cast<float *>(fail());
    const zbc_rt_program &p = *rank_->program;
    const zbc_rt_buffer &buffer = p.buffers[b];
    int64_t held = heldElements(p, buffer, elements);
    if (buffer.element != ZBC_RT_F32 || buffer.bytes != held * 4)
      return static_cast<float *>(
          mismatch(b, fmt::format("{} f32 elements", held)));
    char *place = rank_->device->arena() + buffer.offset;
    if (buffer.kind != ZBC_RT_STEP_GRAD) {
      record(rank_->ledger.write(b, Ledger::Writer::Kernel));
      return reinterpret_cast<float *>(place);
    }
    bool first = false;
    record(rank_->ledger.accumulate(b, first));
    if (first && ok_)
      record(rank_->device->zero(place, buffer.bytes));
    return ok_ ? reinterpret_cast<float *>(place) : nullptr;
  }
  /// An index buffer (int32 or int64) the kernel reads.
  Indices indices(int32_t id, int64_t elements) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return {fail(), ZBC_RT_I64};
    int32_t element = rank_->program->buffers[b].element;
    if (element != ZBC_RT_I32 && element != ZBC_RT_I64)
      return {mismatch(b, "integer indices"), element};
    return {access(id, elements, element, false), element};
  }
  /// The workspace the kernel needs, `bytes` at least; its size.
  void *workspace(int32_t id, int64_t bytes, int64_t &size) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    if (buffer.bytes < bytes)
      return mismatch(b, "a large enough workspace");
    record(rank_->ledger.write(b, Ledger::Writer::Kernel));
    record(rank_->ledger.read(b));
    size = buffer.bytes;
    return rank_->device->arena() + buffer.offset;
  }
  /// The element type of the call's float buffers (f32 until one is seen).
  int32_t element() const { return element_; }
  int64_t elementBytes() const { return zbc_rt_element_bytes(element_); }

  bool ok() const { return ok_; }
  /// The checks are done; the kernel runs (its time is the profile's).
  void kernelBegins() { kernelBegin_ = Profile::now(); }
  /// After the kernel ran (or was queued): its result.
  zbc_rt_status done(const std::string &error = {}) {
    if (kernelBegin_ > 0)
      rank_->profile.kernelSeconds += Profile::now() - kernelBegin_;
    kernelBegin_ = 0;
    rank_->ledger.tick();
    if (!error.empty() && ok_) {
      ok_ = false;
      zbc::rt::fail(rank_, fmt::format("{}: {}", kernel_, error));
    }
    return ok_ ? ZBC_RT_OK : ZBC_RT_ERROR;
  }

private:
  /// The element type buffer `id` must have as a float operand: the first
  /// one's (f32 or bf16) decides the call's.
  int32_t floatElement(int32_t id) {
    if (!floatSeen_) {
      int32_t b = resolve(rank_, id);
      if (b >= 0 && rank_->program->buffers[b].element == ZBC_RT_BF16)
        element_ = ZBC_RT_BF16;
      floatSeen_ = true;
    }
    return element_;
  }
  void *access(int32_t id, int64_t elements, int32_t element, bool write) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    const zbc_rt_program &p = *rank_->program;
    const zbc_rt_buffer &buffer = p.buffers[b];
    int64_t held = heldElements(p, buffer, elements);
    if (buffer.element != element ||
        buffer.bytes != held * zbc_rt_element_bytes(element))
      return mismatch(b, fmt::format("{} elements of type {}", held,
                                     element));
    record(write ? rank_->ledger.write(b, Ledger::Writer::Kernel)
                 : rank_->ledger.read(b));
    return rank_->device->arena() + buffer.offset;
  }
  void record(const std::string &error) {
    if (!error.empty() && ok_) {
      ok_ = false;
      zbc::rt::fail(rank_, fmt::format("{}: {}", kernel_, error));
    }
  }
  void *mismatch(int32_t b, const std::string &expected) {
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    record(fmt::format("buffer {} ({} bytes, element type {}) is not {} (the "
                       "generated code disagrees with its tables)",
                       buffer.name, buffer.bytes, buffer.element, expected));
    return nullptr;
  }
  void *fail() {
    ok_ = false;
    return nullptr;
  }

  zbc_rt_rank *rank_;
  const char *kernel_;
  bool ok_ = true;
  bool floatSeen_ = false;
  int32_t element_ = ZBC_RT_F32;
  double kernelBegin_ = 0;
};

} // namespace

#define ZBC_RT_KERNEL(name) Call call(rank, #name)
#define ZBC_RT_RETURN_IF_BAD()                                                 \
  if (!call.ok())                                                              \
    return call.done();                                                        \
  call.kernelBegins()

extern "C" {

zbc_rt_status zbc_rt_load(zbc_rt_rank *rank, int32_t dst, int32_t dataIndex) {
  const zbc_rt_program &p = *rank->program;
  if (dataIndex < 0 || dataIndex >= p.data_count)
    return fail(rank, fmt::format("zbc_rt_load: no data tensor {}", dataIndex));
  int32_t b = resolve(rank, dst);
  if (b < 0)
    return ZBC_RT_ERROR;
  const zbc_rt_buffer &buffer = p.buffers[b];
  if (std::string error = rank->ledger.write(b, Ledger::Writer::Data);
      !error.empty())
    return fail(rank, "zbc_rt_load: " + error);
  rank->data.fill(dataIndex, batchPosition(rank, p.ops[rank->op].microbatch),
                  rank->device->dataStaging(b), buffer.bytes);
  if (std::string error = rank->device->dataStaged(b); !error.empty())
    return fail(rank, "zbc_rt_load: " + error);
  rank->ledger.tick();
  return ZBC_RT_OK;
}

zbc_rt_status zbc_rt_accumulate(zbc_rt_rank *rank, int32_t grad, int32_t value) {
  ZBC_RT_KERNEL(zbc_rt_accumulate);
  // The value's elements: a gradient padded to whole shards (Note [Sharded
  // optimizer]) keeps its padding 0.
  int32_t b = resolve(rank, value);
  if (b < 0)
    return ZBC_RT_ERROR;
  const zbc_rt_buffer &of = rank->program->buffers[b];
  int64_t n = of.bytes / zbc_rt_element_bytes(of.element);
  const void *v = call.in(value, n);
  float *acc = call.accumulator(grad, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->accumulate(acc, call.element(), v, n));
}

zbc_rt_status zbc_rt_copy(zbc_rt_rank *rank, int32_t x, int32_t y,
                          int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_copy);
  const void *from = call.in(x, n);
  void *to = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->copy(to, from, n * call.elementBytes()));
}

zbc_rt_status zbc_rt_add_loss(zbc_rt_rank *rank, int32_t loss) {
  ZBC_RT_KERNEL(zbc_rt_add_loss);
  const void *v = call.in(loss, 1);
  const zbc_rt_program &p = *rank->program;
  ZBC_RT_RETURN_IF_BAD();
  // The accumulator is the rank's own (persistent, outside the ledger's
  // per-step checks), as the loss the progress lines print.
  float discarded = 0; // a rank without the accumulator (never generated)
  float *sum = p.loss >= 0 ? reinterpret_cast<float *>(
                                 rank->device->arena() +
                                 p.buffers[p.loss].offset)
                           : &discarded;
  if (rank->evaluating) {
    // The last evaluation batch's microbatches past the held-out ones
    // (Note [Token data]) read wrapped windows: they count for nothing.
    BatchPosition at = batchPosition(rank, p.ops[rank->op].microbatch);
    if (at.batch * at.microbatches + at.microbatch >= rank->evalMicrobatches)
      return call.done("");
  }
  double weight = 1.0;
  if (std::string error =
          lossWeightOf(rank, p.ops[rank->op].microbatch, weight);
      !error.empty())
    return call.done(error);
  return call.done(rank->device->addLoss(call.element(), v,
                                         static_cast<float>(weight), sum));
}

zbc_rt_status zbc_rt_loss_seed(zbc_rt_rank *rank, int32_t seed) {
  ZBC_RT_KERNEL(zbc_rt_loss_seed);
  void *y = call.out(seed, 1);
  ZBC_RT_RETURN_IF_BAD();
  double weight = 1.0;
  if (std::string error = lossWeightOf(
          rank, rank->program->ops[rank->op].microbatch, weight);
      !error.empty())
    return call.done(error);
  return call.done(
      rank->device->fill(call.element(), y, 1, static_cast<float>(weight)));
}

//===----------------------------------------------------------------------===//
// The zb ops' kernels: one wrapper per row of the kernel table (Note [Kernel
// table] in zbc/runtime/KernelTable.h), each resolving and checking its
// buffers in the row's order (the first float buffer decides the call's
// element type), then calling the device's method of the row.
//===----------------------------------------------------------------------===//

#define ZBC_RT_CHECK_BUF(role, id, elements) ZBC_RT_CHECK_##role(id, elements)
#define ZBC_RT_CHECK_In(id, elements) const void *p_##id = call.in(id, elements);
#define ZBC_RT_CHECK_Out(id, elements) void *p_##id = call.out(id, elements);
#define ZBC_RT_CHECK_Indices(id, elements)                                     \
  Indices p_##id = call.indices(id, elements);
#define ZBC_RT_CHECK_OptIndices(id, elements)                                  \
  Indices p_##id = id == ZBC_RT_ABSENT ? Indices{nullptr, ZBC_RT_I64}          \
                                       : call.indices(id, elements);
#define ZBC_RT_CHECK_Workspace(id, bytes)                                      \
  int64_t id##_bytes = 0;                                                      \
  void *p_##id = call.workspace(id, bytes, id##_bytes);
#define ZBC_RT_NOTHING(name)
#define ZBC_RT_PASS_BUF(role, id, elements) ZBC_RT_PASS_##role(id)
#define ZBC_RT_PASS_In(id) , p_##id
#define ZBC_RT_PASS_Out(id) , p_##id
#define ZBC_RT_PASS_Indices(id) , p_##id
#define ZBC_RT_PASS_OptIndices(id) , p_##id
#define ZBC_RT_PASS_Workspace(id) , p_##id, id##_bytes
#define ZBC_RT_PASS_DIM(name) , name
#define ZBC_RT_PASS_REAL(name) , static_cast<float>(name)

#define ZBC_RT_WRAPPER(name, method, op, signature)                            \
  zbc_rt_status zbc_rt_##name(                                                 \
      zbc_rt_rank *rank signature(ZBC_RT_ABI_BUF, ZBC_RT_ABI_DIM,              \
                                  ZBC_RT_ABI_REAL)) {                          \
    ZBC_RT_KERNEL(zbc_rt_##name);                                              \
    signature(ZBC_RT_CHECK_BUF, ZBC_RT_NOTHING, ZBC_RT_NOTHING)                \
    ZBC_RT_RETURN_IF_BAD();                                                    \
    return call.done(rank->device->method(                                     \
        call.element() signature(ZBC_RT_PASS_BUF, ZBC_RT_PASS_DIM,             \
                                 ZBC_RT_PASS_REAL)));                          \
  }
ZBC_RT_KERNELS(ZBC_RT_WRAPPER)

} // extern "C"
