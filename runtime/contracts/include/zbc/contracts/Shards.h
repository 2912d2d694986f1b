//===- Shards.h - each replica's shard of a parameter -------------*- C++ -*-===//
//
// Note [Sharded optimizer]
// With `zero` >= 1 (zbc compile --zero 1) a program of d data-parallel
// replicas shards each parameter's optimizer state, and a bf16
// parameter's f32 master weights, over the replicas: replica k of d keeps
// and updates only elements [k c, k c + its length) of a parameter of N
// elements, c = ceil(N / d) (its length: c, less for the last shards of a
// parameter that d does not divide, 0 for a shard past the end). So the
// bytes per parameter fall from 18 (bf16 weights, f32 gradient, f32
// master, AdamW's two f32 moments) to 6 + 12/d. The step:
// - after the stage's last W, a zb.reduce_scatter sums the gradients over
//   the replicas, each replica keeping its shard of the sum in place, at
//   [k c, (k + 1) c) of the gradient, which is padded to d c elements so
//   that every shard has c (NCCL's in-place reduce-scatter and all-gather
//   read and write that layout); a tied parameter's gradient is summed
//   whole by its zb.all_reduce over its holders and replicas, of which
//   each replica then takes its shard;
// - the global gradient norm sums the squares of each replica's shards
//   over the replicas and the pipeline ranks (each element once);
// - each replica updates its shard of the weights (the master and the
//   working copy's shard, for bf16) with its shard of the state;
// - before the next step's first compute of the stage reads them, a
//   zb.all_gather gathers the shards of the working copies, padded too.
// The padding stays 0 (nothing writes it but the gathers of zeros).
//
// Note [Sharded gradients]
// With `zero` 2 (zbc compile --zero 2) the replica keeps only its shard of
// each summed gradient, c f32 elements of its own ("grad_shard.NAME" in
// the memory plan), and the whole gradient, padded to d c, is a buffer of
// the step: the first W (or BW) of the step writing it zeroes it and adds
// in, the others add in, and its sum reads it: a zb.reduce_scatter puts
// the replica's shard of the sum into the shard (out of place), or, for a
// tied parameter, the zb.all_reduce over its holders sums it in place and
// the shard is copied out when it completes. From then on the whole buffer
// is free for what comes next in the rank's order. In a pipeline every W
// of a stage adds into its gradient, so the whole buffer lives from the
// stage's first W to its last W's sum: zero 2 lowers a rank's peak only
// where the peak falls outside that window (on a V or interleaved rank,
// after its first chunk is summed), and holds no gradient byte between
// steps (bf16 + AdamW: 2 + 12/d per parameter). The shard is a buffer of the step too,
// from its sum to the update. The memory plan places both like any other
// buffer of the rank's order, so the plan's peak says what zero 2 gains.
// zbc compile's bytes per parameter, the memory plan, the code generator
// and the runtime all size and index shards with these functions.
// Plain C++, no dependencies: the compiler and the rank programs share it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CONTRACTS_SHARDS_H
#define ZBC_CONTRACTS_SHARDS_H

#include <algorithm>
#include <cstdint>

namespace zbc {

/// The elements of a shard of a parameter of `elements` over `replicas`.
constexpr int64_t shardElements(int64_t elements, int64_t replicas) {
  return (elements + replicas - 1) / replicas;
}

/// The elements of the padded whole: `replicas` shards.
constexpr int64_t paddedElements(int64_t elements, int64_t replicas) {
  return shardElements(elements, replicas) * replicas;
}

/// Where replica `replica`'s shard starts, and how many of its elements
/// are the parameter's (not padding).
constexpr int64_t shardBegin(int64_t elements, int64_t replicas,
                             int64_t replica) {
  return shardElements(elements, replicas) * replica;
}
constexpr int64_t shardLength(int64_t elements, int64_t replicas,
                              int64_t replica) {
  return std::clamp<int64_t>(
      elements - shardBegin(elements, replicas, replica), 0,
      shardElements(elements, replicas));
}

} // namespace zbc

#endif // ZBC_CONTRACTS_SHARDS_H
