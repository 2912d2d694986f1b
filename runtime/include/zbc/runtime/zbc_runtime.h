/*===- zbc_runtime.h - the C ABI that generated rank programs call -*- C -*-===//
 *
 * What convert-zb-to-emitc's C++ calls, and nothing else: a rank program is
 * a set of static tables (its program: buffers of its arena, ops in the
 * verified order, per-compute frames, parameters, data) and functions (one
 * per stage phase, and `step`, the rank's order), handed to zbc_rt_main.
 *
 * Conventions:
 *  - Handles are opaque (zbc_rt_rank); every call returns a zbc_rt_status,
 *    ZBC_RT_OK or ZBC_RT_ERROR, whose message the rank keeps (the rank, the
 *    op in its order, what went wrong) and zbc_rt_main prints. No exception
 *    crosses this header.
 *  - Tensors are buffers of the rank's one arena, named by id: an index
 *    into the program's buffer table, or ZBC_RT_FRAME(k), slot k of the
 *    frame of the compute that runs (its microbatch's buffers and its
 *    temporaries), so that one phase function serves every microbatch.
 *  - Every kernel call goes through the rank's ledger (Note [Ledger] in
 *    runtime/src/Ledger.h): it checks that what a kernel reads holds what
 *    was last written there and that no transfer is in flight on it, and it
 *    measures each rank's live bytes the way Note [Program memory] counts
 *    them, so the measured peak can be set beside the verifier's.
 *
 * The runtime links no LLVM or MLIR. Backends (runtime/src/Device.h): CPU
 * (libzbc_runtime: OpenBLAS, MPI) and CUDA (libzbc_runtime_cuda: cuBLASLt,
 * NCCL over MPI); the same generated program links either.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ZBC_RUNTIME_ZBC_RUNTIME_H
#define ZBC_RUNTIME_ZBC_RUNTIME_H

#include <stdint.h>

#include "zbc/runtime/KernelTable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zbc_rt_rank zbc_rt_rank;
typedef int32_t zbc_rt_status;
#define ZBC_RT_OK 0
#define ZBC_RT_ERROR 1

/* Slot k of the running compute's frame. */
#define ZBC_RT_FRAME(k) (-1 - (k))

/* Calls fn(...) and returns its status from the calling function if it
 * fails: the one statement generated code writes per runtime call. */
#define ZBC_RT_CALL(fn, ...)                                                  \
  do {                                                                        \
    zbc_rt_status zbc_rt_call_status_ = fn(__VA_ARGS__);                      \
    if (zbc_rt_call_status_ != ZBC_RT_OK)                                     \
      return zbc_rt_call_status_;                                             \
  } while (0)

/*===----------------------------------------------------------------------===
 * The program's tables (written by convert-zb-to-emitc)
 *===----------------------------------------------------------------------===*/

/* Note [ABI enums]
 * Each enum of the ABI is one table, X(NAME, Name, value, ...): the C
 * constants below, the code generator's enums (codegen/lib/RankTables.h)
 * and the runtime's (SyntheticData.h's InitKind, DataSource's dtype names)
 * are all expanded from it, so a kind is added in one place. */

/* What a buffer holds; it decides how the ledger counts it. */
#define ZBC_RT_BUFFER_KINDS(X)                                                 \
  X(PARAM, Param, 0)       /* persistent: a parameter */                      \
  X(GRAD, Grad, 1)         /* persistent: a gradient accumulator */           \
  X(STATE, State, 2)       /* persistent: optimizer state */                  \
  X(LOSS, Loss, 3)         /* persistent: the loss accumulator */             \
  X(RECEIVED, Received, 4) /* per microbatch, written by its recv */          \
  X(DATA, Data, 5)         /* per microbatch, written by the data source */   \
  X(YIELDED, Yielded, 6)   /* per microbatch, yielded by a phase (F.I, B.I,   \
                              a sent out.I or d_in.I, a same-rank in.I) */    \
  X(TEMP, Temp, 7)         /* a value of a phase body, in its scratch */      \
  X(WORKSPACE, Workspace, 8) /* a kernel's workspace, in its scratch */     \
  X(RELOADED, Reloaded, 9) /* per microbatch, F.I back from the host:      \
                              written by its reload */                        \
  X(HOST, Host, 10)        /* per microbatch, F.I's copy in the HOST arena \
                              (offset there): written by its offload */     \
  X(STEP_GRAD, StepGrad, 11) /* zero 2, a buffer of the step: a whole      \
                              gradient (zeroed by its first W, read by its  \
                              sum) or its shard (written by the sum, read   \
                              by the update): Note [Sharded gradients] */

/* Element types (bf16: Note [bf16] in zbc/contracts/BFloat16.h), with their
 * bytes and their safetensors dtype. */
#define ZBC_RT_ELEMENTS(X)                                                     \
  X(F32, F32, 0, 4, "F32")                                                     \
  X(I32, I32, 1, 4, "I32")                                                     \
  X(I64, I64, 2, 8, "I64")                                                     \
  X(BF16, BF16, 3, 2, "BF16")

/* What an op of the order is: the computes first (zbc_rt_op_is_compute). */
#define ZBC_RT_OP_KINDS(X)                                                     \
  X(OP_F, F, 0)                                                                \
  X(OP_B, B, 1)                                                                \
  X(OP_W, W, 2)                                                                \
  X(OP_BW, BW, 3)                                                              \
  X(OP_R, R, 4) /* F again, restoring what a recomputed F did not keep */      \
  X(OP_SEND, Send, 5)                                                          \
  X(OP_RECV, Recv, 6)                                                          \
  X(OP_GROUP, Group, 7)                                                        \
  X(OP_OFFLOAD, Offload, 8) /* the stash of (stage, mb) to the host arena */   \
  X(OP_RELOAD, Reload, 9)   /* and back, into its reloaded buffers */       \
  X(OP_ALL_REDUCE, AllReduce, 10) /* gradients summed over a group */       \
  X(OP_REDUCE_SCATTER, ReduceScatter, 11) /* summed, each keeps its shard */ \
  X(OP_ALL_GATHER, AllGather, 12) /* parameters' shards gathered whole */

/* The number of compute kinds (F..R), which the profile counts per stage. */
#define ZBC_RT_COMPUTE_KIND_COUNT 5

/* How a parameter starts (SyntheticData.h draws the values). */
#define ZBC_RT_INIT_KINDS(X)                                                   \
  X(INIT_ZEROS, Zeros, 0)                                                      \
  X(INIT_ONES, Ones, 1)                                                        \
  X(INIT_NORMAL, Normal, 2)   /* scale: sigma */                               \
  X(INIT_UNIFORM, Uniform, 3) /* scale: the bound */

#define ZBC_RT_ENUMERATOR(NAME, Name, value) ZBC_RT_##NAME = value,
#define ZBC_RT_ELEMENT_ENUMERATOR(NAME, Name, value, bytes, dtype)             \
  ZBC_RT_##NAME = value,
enum { ZBC_RT_BUFFER_KINDS(ZBC_RT_ENUMERATOR) };
enum { ZBC_RT_ELEMENTS(ZBC_RT_ELEMENT_ENUMERATOR) };
enum { ZBC_RT_OP_KINDS(ZBC_RT_ENUMERATOR) };
enum { ZBC_RT_INIT_KINDS(ZBC_RT_ENUMERATOR) };
#undef ZBC_RT_ENUMERATOR
#undef ZBC_RT_ELEMENT_ENUMERATOR

/* Bytes of one element of `element` (ZBC_RT_F32, ...). */
static inline int64_t zbc_rt_element_bytes(int32_t element) {
#define ZBC_RT_ELEMENT_BYTES(NAME, Name, value, bytes, dtype)                  \
  if (element == value)                                                        \
    return bytes;
  ZBC_RT_ELEMENTS(ZBC_RT_ELEMENT_BYTES)
#undef ZBC_RT_ELEMENT_BYTES
  return 4;
}

/* Whether an op of the order is a compute (F, B, W, BW or R). */
static inline int zbc_rt_op_is_compute(int32_t what) {
  return what >= ZBC_RT_OP_F && what <= ZBC_RT_OP_R;
}

/* Whether an op of the order is a copy of a stash (offload or reload),
 * which runs on the rank's copy queue (Note [Offload in the IR]). */
static inline int zbc_rt_op_is_copy(int32_t what) {
  return what == ZBC_RT_OP_OFFLOAD || what == ZBC_RT_OP_RELOAD;
}

/* How reports and traces spell an op kind: "F", ..., "R", "send", "recv",
   "group", "offload", "reload", "all-reduce", "reduce-scatter",
   "all-gather". */
static inline const char *zbc_rt_op_spelling(int32_t what) {
  static const char *const spellings[] = {
      "F",    "B",     "W",       "BW",     "R",          "send",
      "recv", "group", "offload", "reload", "all-reduce", "reduce-scatter",
      "all-gather"};
  return what >= 0 && what <= ZBC_RT_OP_ALL_GATHER ? spellings[what] : "?";
}

/* Whether `what` is a collective (ZBC_RT_OP_ALL_REDUCE ...). */
static inline int zbc_rt_op_is_collective(int32_t what) {
  return what >= ZBC_RT_OP_ALL_REDUCE && what <= ZBC_RT_OP_ALL_GATHER;
}

/* The group an all-reduce runs over (Note [Collective groups] in
   zbc/Support/CollectiveGroups.h), in its op's `peer`: a tied parameter's
   holders by its index in the program's `tied`, or one of these. */
#define ZBC_RT_GROUP_REPLICAS (-1)
#define ZBC_RT_GROUP_PIPELINE (-2)

typedef struct zbc_rt_buffer {
  const char *name; /* "param.fc0.weight", "F.0 of stage 1 mb 3", ... */
  int64_t offset;   /* in the arena */
  int64_t bytes;
  int32_t kind;     /* ZBC_RT_PARAM, ... */
  int32_t element;  /* ZBC_RT_F32, ... */
} zbc_rt_buffer;

typedef struct zbc_rt_op {
  int32_t what;          /* ZBC_RT_OP_* */
  int32_t stage;         /* compute; transfer: the producing stage */
  int32_t microbatch;
  int32_t position;      /* in the rank's top-level order (a group's
                            members share the group's) */
  int32_t frame;         /* compute: first slot in `frames`; a copy: its
                            (from, to) buffer pairs there, one per F.I */
  int32_t frame_size;
  int32_t second_frame;  /* a fused BW of a split stage: W's frame (B's is
                            `frame`); -1 otherwise */
  int32_t second_frame_size;
  int32_t buffer;        /* transfer: the buffer it sends or fills */
  int32_t peer;          /* transfer: the other rank; all-reduce: its group
                            (ZBC_RT_GROUP_*, or a tied index) */
  int32_t first_member;  /* group: its members, consecutive ops; all-reduce:
                            its parameters, collective_params[first ...] */
  int32_t member_count;
  int32_t gradient;      /* transfer: 1 if it carries a gradient (B's
                            d_in), 0 an activation; evaluation skips it */
  const char *name;      /* "F(1,3)", "send act stage 0 mb 3 to 1", ... */
} zbc_rt_op;

/* A parameter and what its optimizer step touches. */
typedef struct zbc_rt_param {
  const char *name;      /* as in the model: "fc0.weight" */
  int32_t param, grad;   /* buffer ids */
  int32_t state0, state1; /* optimizer state (-1 if none) */
  int32_t master;        /* a bf16 parameter's fp32 master weights, which
                            the optimizer steps (param is their bf16
                            working copy); -1 for an fp32 parameter */
  int32_t init;          /* ZBC_RT_INIT_* */
  double scale;          /* normal's sigma, uniform's bound */
  int32_t rank_of_shape; /* dims in `shape` */
  int64_t shape[8];
  int32_t tied;          /* index into the program's `tied`, or -1 */
  int32_t grad_shard;    /* zero 2: the replica's shard of the summed
                            gradient, it and `grad` (the whole) being
                            STEP_GRAD buffers (Note [Sharded gradients]);
                            else -1 */
} zbc_rt_param;

/* A parameter that stages on several ranks use (tied): each of those ranks
 * holds a copy, all start equal, and before each update their gradients
 * are summed, so the copies stay equal. Every rank's program lists every
 * tied parameter of the pipeline, in one order (the ranks set up one
 * communicator per entry together). */
typedef struct zbc_rt_tied {
  const char *name;
  int32_t first_rank;    /* its holders: tied_ranks[first_rank ...], */
  int32_t rank_count;    /* ascending */
} zbc_rt_tied;

/* A data tensor of one microbatch (an input or a label). */
typedef struct zbc_rt_data {
  const char *key;       /* "input.tokens", "label.targets" */
  int32_t element;
  int64_t bound;         /* integer data lies in [0, bound) */
  int32_t rank_of_shape;
  int64_t shape[8];
} zbc_rt_data;

typedef struct zbc_rt_program {
  int32_t rank, ranks, stages, microbatches;
  const char *model;
  const char *model_hash; /* of the model's IR: checkpoints name it */
  const char *schedule, *optimizer; /* optimizer: "sgd", "adamw" */
  int64_t arena_bytes;
  int64_t peak_bytes;    /* the verifier's figure */
  const zbc_rt_buffer *buffers;
  int32_t buffer_count;
  const zbc_rt_op *ops;
  int32_t op_count;
  int32_t position_count; /* top-level ops */
  const int32_t *frames;  /* buffer ids, per compute a run of them */
  int32_t frame_slots;
  const zbc_rt_param *params;
  int32_t param_count;
  const zbc_rt_data *data;
  int32_t data_count;
  int32_t loss;           /* buffer id of the loss accumulator, or -1 */
  int64_t tokens_per_microbatch; /* label elements: the throughput unit */
  int32_t max_kernel_calls; /* per compute, for the ledger's sweep */
  const zbc_rt_tied *tied; /* every tied parameter of the pipeline */
  int32_t tied_count;
  const int32_t *tied_ranks;
  /* The Hugging Face config.json the model was imported from, or "":
   * --save and checkpoints write it as the metadata "hf_config", for
   * `zbc export-hf`. */
  const char *hf_config;
  /* Offloaded stashes (Note [Offload in the IR]): the host arena their
   * ZBC_RT_HOST buffers lie in, and the verifier's peak of its live bytes
   * (0 and 0 without offload). */
  int64_t host_arena_bytes;
  int64_t host_peak_bytes;
  /* Note [Loss over real tokens] (zbc/contracts/LossWeights.h): the data
   * index of the labels the loss counts, on the rank that computes the loss
   * (-1 elsewhere, or when every microbatch weighs 1), and the label value
   * that is not counted. */
  int32_t counted_labels;
  int64_t ignore_index;
  /* Data-parallel replicas the program runs as (the job has ranks x
   * replicas processes), and the parameters (indices into `params`) of
   * each all-reduce op. */
  int32_t replicas;
  const int32_t *collective_params;
  int32_t collective_param_count;
  /* Note [Sharded optimizer] (zbc/contracts/Shards.h): 1 when the
   * optimizer state and masters are sharded over the replicas, 2 when the
   * gradients are too (Note [Sharded gradients]), 0: whole. */
  int32_t zero;
} zbc_rt_program;

typedef zbc_rt_status (*zbc_rt_phase_fn)(zbc_rt_rank *rank);
typedef zbc_rt_status (*zbc_rt_step_fn)(zbc_rt_rank *rank);

/* Parses the command line (--steps, --seed, --lr, ..., see --help),
 * starts MPI, checks that this executable runs as rank `program->rank` of
 * `program->ranks`, allocates the arena, initialises the parameters, runs
 * `step` once per training step, reports and shuts down. Returns the exit
 * code: 0, or 1 after printing the error (and aborting the other ranks when
 * the failure is this rank's alone). */
int zbc_rt_main(int argc, char **argv, const zbc_rt_program *program,
                zbc_rt_step_fn step);

/*===----------------------------------------------------------------------===
 * The order (called by `step`)
 *===----------------------------------------------------------------------===*/

/* Runs `phase` as op `op` (a compute). A fused BW of a split stage runs B,
 * then W, as two calls with the same op. */
zbc_rt_status zbc_rt_compute(zbc_rt_rank *rank, int32_t op,
                             zbc_rt_phase_fn phase);
/* Issues a send, a recv, or a group (all its members as one unit). */
zbc_rt_status zbc_rt_send(zbc_rt_rank *rank, int32_t op);
zbc_rt_status zbc_rt_recv(zbc_rt_rank *rank, int32_t op);
zbc_rt_status zbc_rt_group(zbc_rt_rank *rank, int32_t op);
/* Starts collective `op` over its group: an all-reduce or reduce-scatter of
   its parameters' gradients, in place, or an all-gather of their shards;
   zbc_rt_wait, or the step's end, completes it. */
zbc_rt_status zbc_rt_collective(zbc_rt_rank *rank, int32_t op);
/* Issues a copy of a stash on the rank's copy queue, after every compute
 * called so far: an offload (device to host arena) or a reload (back). */
zbc_rt_status zbc_rt_offload(zbc_rt_rank *rank, int32_t op);
zbc_rt_status zbc_rt_reload(zbc_rt_rank *rank, int32_t op);
/* Waits for a transfer, group or copy issued earlier: the op that follows
 * needs it (its recv or reload has landed, or its send or offload no longer
 * reads its buffer). */
zbc_rt_status zbc_rt_wait(zbc_rt_rank *rank, int32_t op);
/* The optimizer step of parameter `param` (an index into the program's
 * params), after its last gradient of the step. */
zbc_rt_status zbc_rt_update(zbc_rt_rank *rank, int32_t param);

/*===----------------------------------------------------------------------===
 * Inside a phase: data, accumulation, kernels. Shapes are the op's; `rows`
 * is the product of the leading dims.
 *===----------------------------------------------------------------------===*/

/* Fills `dst` with data tensor `data` of this compute's microbatch. */
zbc_rt_status zbc_rt_load(zbc_rt_rank *rank, int32_t dst, int32_t data);
/* grad[param] += value; the loss accumulator += loss. */
zbc_rt_status zbc_rt_accumulate(zbc_rt_rank *rank, int32_t grad, int32_t value);
zbc_rt_status zbc_rt_add_loss(zbc_rt_rank *rank, int32_t loss);
/* seed = the weight of this compute's microbatch in its step's loss, the
 * gradient zb.loss_seed stands for (Note [Loss over real tokens]). */
zbc_rt_status zbc_rt_loss_seed(zbc_rt_rank *rank, int32_t seed);
/* y = x, n float elements: a value a phase yields under two keys that each
 * have a buffer is written once by its kernel, then copied. */
zbc_rt_status zbc_rt_copy(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n);

/* The zb ops' kernels, one per row of the kernel table (Note [Kernel
 * table] in zbc/runtime/KernelTable.h): zbc_rt_NAME(rank, buffer ids...,
 * dims..., reals...), e.g.
 *   zbc_rt_linear(rank, x, w, y, rows, in, out)   y [rows, out] = x w
 * (x [rows, in], w [in, out]); the table lists each kernel's buffers with
 * their element counts, its dims and its reals. */
#define ZBC_RT_PROTOTYPE(name, method, op, signature)                          \
  zbc_rt_status zbc_rt_##name(                                                 \
      zbc_rt_rank *rank signature(ZBC_RT_ABI_BUF, ZBC_RT_ABI_DIM,              \
                                  ZBC_RT_ABI_REAL));
ZBC_RT_KERNELS(ZBC_RT_PROTOTYPE)
#undef ZBC_RT_PROTOTYPE

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ZBC_RUNTIME_ZBC_RUNTIME_H */
