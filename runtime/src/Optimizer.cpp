//===- Optimizer.cpp - each parameter's optimizer step -------------------===//
//
// zbc_rt_update runs a parameter's step (SGD with momentum or AdamW, the
// program's) as soon as the order has produced its last gradient, unless
// gradients are clipped or summed over data-parallel replicas or a tied
// parameter's holders: the global norm needs every gradient of every rank,
// and a summed gradient the others'. Then the update is marked due, and
// finishOptimizerStep runs them all after the step's transfers, once the
// program's all-reduces (zbc_rt_all_reduce: placed by
// zb-insert-collectives, they overlap the rest of the order) and the
// norm's (one double per rank) have returned. Either way the learning rate is the step's
// (OptimizerSchedule.h) and each microbatch's gradient counts 1/m (Note
// [Mean over microbatches] in ZB.md). Evaluation updates nothing.
//
//===----------------------------------------------------------------------===//

#include "Rank.h"

#include "zbc/contracts/OptimizerConfig.h"
#include "zbc/contracts/OptimizerSchedule.h"
#include "zbc/contracts/BFloat16.h"
#include "zbc/contracts/Shards.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace zbc::rt {
namespace {

/// A buffer's address on the device (fp32 unless it is a working copy).
float *bufferAt(zbc_rt_rank *rank, int32_t id) {
  return reinterpret_cast<float *>(rank->device->arena() +
                                   rank->program->buffers[id].offset);
}

/// This replica's part of `param`'s summed gradient: its shard (Note
/// [Sharded gradients]), or its shard's place in the whole gradient.
float *summedGradientOf(zbc_rt_rank *rank, const zbc_rt_param &param) {
  if (param.grad_shard >= 0)
    return bufferAt(rank, param.grad_shard);
  return bufferAt(rank, param.grad) + shardOf(rank, param).begin;
}

/// The update reads the shards of the step's sums (Note [Sharded
/// gradients]): each must be complete; it lives until here.
std::string readShards(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  for (int32_t i = 0; i < p.param_count; ++i)
    if (int32_t shard = p.params[i].grad_shard; shard >= 0)
      if (std::string error = rank->ledger.read(shard); !error.empty())
        return fmt::format("the update of '{}': {}", p.params[i].name, error);
  return {};
}

double pick(double given, double fallback) {
  return std::isnan(given) ? fallback : given;
}

/// The optimizer step of parameter `index`: its fp32 weights (the master
/// of a bf16 parameter, whose working copy is refreshed), then its
/// gradient zeroed for the next step.
std::string applyUpdate(zbc_rt_rank *rank, int32_t index, float gradScale) {
  const zbc_rt_program &p = *rank->program;
  const zbc_rt_param &param = p.params[index];
  int64_t bytes = p.buffers[param.grad].bytes;
  const Options &o = rank->options;
  // This replica's shard (Note [Sharded optimizer]): the gradient and the
  // working copy at its place, the master and the state from their start.
  ParamShard shard = shardOf(rank, param);
  int32_t copyElement = p.buffers[param.param].element;
  float *weights = bufferAt(rank, weightsOf(param)) +
                   (param.master >= 0 ? 0 : shard.begin);
  float *grad = summedGradientOf(rank, param);
  void *copy = param.master >= 0
                   ? reinterpret_cast<char *>(bufferAt(rank, param.param)) +
                         shard.begin * zbc_rt_element_bytes(copyElement)
                   : nullptr;
  std::string error;
  if (!std::strcmp(p.optimizer, "adamw")) {
    AdamWConfig config;
    config.lr = rank->learningRate;
    config.beta1 = pick(o.beta1, config.beta1);
    config.beta2 = pick(o.beta2, config.beta2);
    config.epsilon = pick(o.epsilon, config.epsilon);
    config.weightDecay = pick(o.weightDecay, config.weightDecay);
    error = rank->device->adamw(weights, grad, bufferAt(rank, param.state0),
                                bufferAt(rank, param.state1), shard.length,
                                config, rank->step + 1, gradScale, copy,
                                copyElement);
  } else {
    SgdConfig config;
    config.lr = rank->learningRate;
    config.momentum = pick(o.momentum, config.momentum);
    config.weightDecay = pick(o.weightDecay, config.weightDecay);
    error = rank->device->sgdMomentum(weights, grad,
                                      bufferAt(rank, param.state0),
                                      shard.length, config, gradScale, copy,
                                      copyElement);
  }
  // Whole gradients of the step (zero 2) are zeroed by their first add.
  if (error.empty() && param.grad_shard < 0)
    error = rank->device->zero(bufferAt(rank, param.grad), bytes); // whole
  return error.empty() ? error
                       : fmt::format("the update of '{}': {}", param.name,
                                     error);
}

/// Its gradient is summed with other processes' before its update: over
/// the replicas, or over the holders of a tied parameter.
bool isShared(const zbc_rt_rank *rank, const zbc_rt_param &param) {
  return rank->transport->replicas() > 1 || param.tied >= 0;
}

/// Whether this rank counts the parameter in the global norm: a tied one
/// counts once, on its first holder (every holder has the summed gradient).
bool countsInNorm(const zbc_rt_rank *rank, const zbc_rt_param &param) {
  const zbc_rt_program &p = *rank->program;
  return param.tied < 0 ||
         p.tied_ranks[p.tied[param.tied].first_rank] == p.rank;
}

/// Each gradient is a sum over the job's microbatches, D m of them.
int64_t microbatchesOfJob(const zbc_rt_rank *rank) {
  return int64_t(rank->program->microbatches) * rank->transport->replicas();
}

} // namespace

ParamShard shardOf(const zbc_rt_rank *rank, const zbc_rt_param &param) {
  const zbc_rt_program &p = *rank->program;
  ParamShard shard;
  shard.elements = 1;
  for (int32_t d = 0; d < param.rank_of_shape; ++d)
    shard.elements *= param.shape[d];
  shard.length = shard.elements;
  shard.sharded = p.zero > 0 && p.replicas > 1;
  if (shard.sharded) {
    shard.begin = shardBegin(shard.elements, p.replicas,
                             rank->transport->replica());
    shard.length = shardLength(shard.elements, p.replicas,
                               rank->transport->replica());
  }
  return shard;
}

std::string readWholeWeights(zbc_rt_rank *rank, const zbc_rt_param &param,
                             std::vector<float> &out) {
  const zbc_rt_program &p = *rank->program;
  ParamShard shard = shardOf(rank, param);
  out.resize(static_cast<size_t>(shard.elements));
  if (!shard.sharded || param.master < 0)
    return rank->device->read(p.buffers[weightsOf(param)].offset, out.data(),
                              shard.elements * 4);
  const zbc_rt_buffer &copy = p.buffers[param.param];
  std::vector<uint16_t> bits(static_cast<size_t>(shard.elements));
  if (copy.element != ZBC_RT_BF16)
    return fmt::format("'{}': a sharded f32 master beside a working copy "
                       "that is not bf16 (element kind {})",
                       param.name, copy.element);
  if (std::string error =
          rank->device->read(copy.offset, bits.data(), shard.elements * 2);
      !error.empty())
    return error;
  for (size_t e = 0; e < bits.size(); ++e)
    out[e] = fromBFloat16(bits[e]);
  return {};
}

double baseLearningRate(const zbc_rt_rank *rank) {
  bool adamw = !std::strcmp(rank->program->optimizer, "adamw");
  return pick(rank->options.lr,
              adamw ? AdamWConfig().lr : SgdConfig().lr);
}

LearningRateSchedule learningRateSchedule(const zbc_rt_rank *rank) {
  const Options &o = rank->options;
  LearningRateSchedule schedule;
  schedule.warmup = o.warmupSteps;
  schedule.decaySteps = o.decaySteps;
  schedule.minLr = pick(o.minLr, baseLearningRate(rank) / 10);
  return schedule;
}

void initOptimizer(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  bool tied = false;
  for (int32_t i = 0; i < p.param_count; ++i)
    tied |= p.params[i].tied >= 0;
  rank->updatesAtStepEnd = rank->options.clipNorm > 0 ||
                           rank->transport->replicas() > 1 || tied;
  rank->updateDue.assign(static_cast<size_t>(p.param_count), 0);
  rank->reduced.assign(static_cast<size_t>(p.param_count), 0);
  rank->collectiveInFlight.assign(static_cast<size_t>(p.op_count), 0);
}

namespace {
/// Every collective of the pass of the order is complete, and the
/// transport's requests free for the next pass (an evaluation's gathers
/// too, each waited for by its reader already).
std::string finishPassCollectives(zbc_rt_rank *rank) {
  InsideMPI mpi(rank, "the program's collectives");
  if (std::string error = rank->transport->finishCollectives(); !error.empty())
    return error;
  for (int32_t op = 0; op < rank->program->op_count; ++op)
    if (std::string error = collectiveCompleted(rank, op); !error.empty())
      return error;
  return {};
}
} // namespace

zbc_rt_status finishOptimizerStep(zbc_rt_rank *rank) {
  if (rank->evaluating) {
    std::string error = finishPassCollectives(rank);
    return error.empty() ? ZBC_RT_OK : fail(rank, error);
  }
  if (!rank->updatesAtStepEnd)
    return ZBC_RT_OK;
  const zbc_rt_program &p = *rank->program;
  {
    double begin = Profile::now();
    if (std::string error = finishPassCollectives(rank); !error.empty())
      return fail(rank, error);
    if (std::string error = readShards(rank); !error.empty())
      return fail(rank, error);
    rank->profile.collectiveWaitSeconds += Profile::now() - begin;
  }
  bool sharded = false;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    if (!countsInNorm(rank, param))
      continue;
    ParamShard shard = shardOf(rank, param);
    sharded |= shard.sharded;
    if (std::string error = rank->device->addSumOfSquares(
            summedGradientOf(rank, param), shard.length);
        !error.empty())
      return fail(rank, error);
  }
  double sumOfSquares = rank->device->takeSumOfSquares();
  if (rank->options.clipNorm > 0) {
    InsideMPI mpi(rank, "the all-reduce of the gradient norm");
    sumOfSquares = rank->transport->sumOverPipeline(sumOfSquares);
    // Each replica holds its shards' squares (Note [Sharded optimizer]).
    if (sharded)
      sumOfSquares = rank->transport->sumOverReplicas(sumOfSquares);
  }
  // The gradients are sums over the microbatches; the norm is the mean's.
  double norm = std::sqrt(sumOfSquares) / double(microbatchesOfJob(rank));
  if (rank->options.clipNorm > 0)
    rank->gradNorm = norm;
  double coefficient = clipCoefficient(norm, rank->options.clipNorm);
  auto scale = static_cast<float>(coefficient / double(microbatchesOfJob(rank)));
  for (int32_t i = 0; i < p.param_count; ++i) {
    if (!rank->updateDue[i])
      return fail(rank, fmt::format("the order never updated parameter '{}'",
                                    p.params[i].name));
    rank->updateDue[i] = 0;
    if (isShared(rank, p.params[i]) && !rank->reduced[i])
      return fail(rank, fmt::format("the program sums the gradient of '{}' "
                                    "with no all-reduce ({} replicas{})",
                                    p.params[i].name,
                                    rank->transport->replicas(),
                                    p.params[i].tied >= 0 ? ", tied" : ""));
    rank->reduced[i] = 0;
    if (std::string error = applyUpdate(rank, i, scale); !error.empty())
      return fail(rank, error);
  }
  return ZBC_RT_OK;
}

std::string findNonFiniteParameter(zbc_rt_rank *rank, std::string &name) {
  const zbc_rt_program &p = *rank->program;
  name.clear();
  auto addSquaresOf = [&](int32_t i) {
    int32_t weights = weightsOf(p.params[i]);
    return rank->device->addSumOfSquares(bufferAt(rank, weights),
                                         p.buffers[weights].bytes / 4);
  };
  // One sum over all of them (in double: no finite fp32 squares overflow
  // it), and only when it is not finite, one per parameter to name it.
  for (int32_t i = 0; i < p.param_count; ++i)
    if (std::string error = addSquaresOf(i); !error.empty())
      return error;
  if (std::isfinite(rank->device->takeSumOfSquares()))
    return {};
  for (int32_t i = 0; i < p.param_count; ++i) {
    if (std::string error = addSquaresOf(i); !error.empty())
      return error;
    if (!std::isfinite(rank->device->takeSumOfSquares())) {
      name = p.params[i].name;
      return {};
    }
  }
  name = "(one of them)";
  return {};
}

std::string refreshWorkingCopies(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    if (param.master < 0)
      continue;
    // The master's shard into its place in the working copy (Note
    // [Sharded optimizer]); the gathers bring the rest.
    ParamShard shard = shardOf(rank, param);
    const zbc_rt_buffer &copy = p.buffers[param.param];
    if (std::string error = rank->device->convertFromF32(
            bufferAt(rank, param.master),
            reinterpret_cast<char *>(bufferAt(rank, param.param)) +
                shard.begin * zbc_rt_element_bytes(copy.element),
            copy.element, shard.length);
        !error.empty())
      return error;
  }
  return {};
}

std::string writeWholeWeights(zbc_rt_rank *rank, const zbc_rt_param &param,
                              std::vector<float> &whole) {
  const zbc_rt_program &p = *rank->program;
  ParamShard shard = shardOf(rank, param);
  const zbc_rt_buffer &weights = p.buffers[weightsOf(param)];
  if (param.master >= 0)
    return rank->device->write(weights.offset, whole.data() + shard.begin,
                               shard.length * 4);
  // The whole f32 parameter, its padding 0.
  whole.resize(static_cast<size_t>(weights.bytes / 4), 0.0f);
  return rank->device->write(weights.offset, whole.data(), weights.bytes);
}

zbc_rt_status gatherParameters(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  if (!(p.zero > 0 && p.replicas > 1))
    return ZBC_RT_OK;
  for (int32_t i = 0; i < p.op_count; ++i)
    if (p.ops[i].what == ZBC_RT_OP_ALL_GATHER &&
        zbc_rt_collective(rank, i) != ZBC_RT_OK)
      return ZBC_RT_ERROR;
  InsideMPI mpi(rank, "the gathers of the parameters' shards");
  if (std::string error = rank->transport->finishCollectives(); !error.empty())
    return fail(rank, error);
  return ZBC_RT_OK;
}

} // namespace zbc::rt

using namespace zbc::rt;

extern "C" zbc_rt_status zbc_rt_update(zbc_rt_rank *rank, int32_t index) {
  const zbc_rt_program &p = *rank->program;
  if (index < 0 || index >= p.param_count)
    return fail(rank, fmt::format("no parameter {}", index));
  if (rank->evaluating)
    return ZBC_RT_OK;
  if (rank->updatesAtStepEnd) {
    rank->updateDue[index] = 1;
    return ZBC_RT_OK;
  }
  if (std::string error =
          applyUpdate(rank, index, static_cast<float>(1.0 / p.microbatches));
      !error.empty())
    return fail(rank, error);
  return ZBC_RT_OK;
}

namespace {
/// A sum of op `op` starts reading `param`'s gradient: a whole gradient of
/// the step is read, and its shard written, until the sum completes
/// (collectiveCompleted).
std::string startedSum(zbc_rt_rank *rank, const zbc_rt_param &param) {
  if (param.grad_shard < 0)
    return {};
  std::string error = rank->ledger.sendStarted(param.grad);
  return error.empty() ? rank->ledger.recvStarted(param.grad_shard) : error;
}
} // namespace

std::string zbc::rt::collectiveCompleted(zbc_rt_rank *rank, int32_t op) {
  if (!rank->collectiveInFlight[static_cast<size_t>(op)])
    return {};
  rank->collectiveInFlight[static_cast<size_t>(op)] = 0;
  rank->timeline.end(op, Profile::now());
  const zbc_rt_program &p = *rank->program;
  const zbc_rt_op &o = p.ops[op];
  if (o.what == ZBC_RT_OP_ALL_GATHER)
    return {};
  for (int32_t k = 0; k < o.member_count; ++k) {
    const zbc_rt_param &param =
        p.params[p.collective_params[o.first_member + k]];
    if (param.grad_shard < 0)
      continue;
    // A tied parameter's sum was whole, in place: its shard is kept.
    if (o.what == ZBC_RT_OP_ALL_REDUCE) {
      ParamShard shard = shardOf(rank, param);
      if (std::string error = rank->device->copy(
              bufferAt(rank, param.grad_shard),
              bufferAt(rank, param.grad) + shard.begin, shard.length * 4);
          !error.empty())
        return fmt::format("{}: keeping the shard of '{}': {}", o.name,
                           param.name, error);
    }
    rank->ledger.sendCompleted(param.grad);
    rank->ledger.recvCompleted(param.grad_shard);
  }
  return {};
}

extern "C" zbc_rt_status zbc_rt_collective(zbc_rt_rank *rank, int32_t op) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || !zbc_rt_op_is_collective(p.ops[op].what))
    return fail(rank, fmt::format("zbc_rt_collective of op {}, which is not "
                                  "a collective",
                                  op));
  const zbc_rt_op &o = p.ops[op];
  // Evaluation sums no gradients; it gathers the parameters it reads.
  if (rank->evaluating && o.what != ZBC_RT_OP_ALL_GATHER)
    return ZBC_RT_OK;
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  rank->ledger.beginOp(o.position);
  double begin = Profile::now();
  std::string error;
  {
    InsideMPI mpi(rank);
    for (int32_t k = 0; k < o.member_count && error.empty(); ++k) {
      int32_t index = p.collective_params[o.first_member + k];
      const zbc_rt_param &param = p.params[index];
      int64_t elements = shardOf(rank, param).elements;
      int64_t shard = zbc::shardElements(elements, p.replicas);
      switch (o.what) {
      case ZBC_RT_OP_ALL_REDUCE:
        error = startedSum(rank, param);
        if (error.empty())
          error = rank->transport->startAllReduce(
              op, bufferAt(rank, param.grad), elements, o.peer);
        rank->reduced[index] = 1;
        break;
      case ZBC_RT_OP_REDUCE_SCATTER:
        // Into the shard of its own under zero 2, else in place.
        error = startedSum(rank, param);
        if (error.empty())
          error = rank->transport->startReduceScatter(
              op, bufferAt(rank, param.grad),
              param.grad_shard >= 0 ? bufferAt(rank, param.grad_shard)
                                    : nullptr,
              shard, o.peer);
        rank->reduced[index] = 1;
        break;
      default: // ZBC_RT_OP_ALL_GATHER
        error = rank->transport->startAllGather(
            op, reinterpret_cast<char *>(bufferAt(rank, param.param)),
            shard * zbc_rt_element_bytes(p.buffers[param.param].element),
            o.peer);
        break;
      }
    }
  }
  rank->timeline.begin(op, begin);
  rank->collectiveInFlight[static_cast<size_t>(op)] = 1;
  if (error.empty() && rank->options.waitCollectives) {
    InsideMPI mpi(rank, o.name);
    error = rank->transport->waitCollective(op);
    if (error.empty())
      error = collectiveCompleted(rank, op);
  }
  rank->profile.commSeconds += Profile::now() - begin;
  if (!error.empty())
    return fail(rank, fmt::format("{}: {}", o.name, error));
  return ZBC_RT_OK;
}
