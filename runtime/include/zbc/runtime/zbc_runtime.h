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

/* What a buffer holds; it decides how the ledger counts it. */
enum {
  ZBC_RT_PARAM = 0,   /* persistent: a parameter */
  ZBC_RT_GRAD = 1,    /* persistent: a gradient accumulator */
  ZBC_RT_STATE = 2,   /* persistent: optimizer state */
  ZBC_RT_LOSS = 3,    /* persistent: the loss accumulator */
  ZBC_RT_RECEIVED = 4, /* per microbatch, written by its recv */
  ZBC_RT_DATA = 5,    /* per microbatch, written by the data source */
  ZBC_RT_YIELDED = 6, /* per microbatch, yielded by a phase (F.I, B.I, a
                         sent out.I or d_in.I, a same-rank in.I) */
  ZBC_RT_TEMP = 7,    /* a value of a phase body, in its compute's scratch */
  ZBC_RT_WORKSPACE = 8 /* a kernel's workspace, in its compute's scratch */
};

/* Element types (bf16: Note [bf16] in zbc/runtime/BFloat16.h). */
enum { ZBC_RT_F32 = 0, ZBC_RT_I32 = 1, ZBC_RT_I64 = 2, ZBC_RT_BF16 = 3 };

/* Bytes of one element of `element` (ZBC_RT_F32, ...). */
static inline int64_t zbc_rt_element_bytes(int32_t element) {
  return element == ZBC_RT_I64 ? 8 : element == ZBC_RT_BF16 ? 2 : 4;
}

typedef struct zbc_rt_buffer {
  const char *name; /* "param.fc0.weight", "F.0 of stage 1 mb 3", ... */
  int64_t offset;   /* in the arena */
  int64_t bytes;
  int32_t kind;     /* ZBC_RT_PARAM, ... */
  int32_t element;  /* ZBC_RT_F32, ... */
} zbc_rt_buffer;

/* What an op of the order is. */
enum {
  ZBC_RT_OP_F = 0,
  ZBC_RT_OP_B = 1,
  ZBC_RT_OP_W = 2,
  ZBC_RT_OP_BW = 3,
  ZBC_RT_OP_SEND = 4,
  ZBC_RT_OP_RECV = 5,
  ZBC_RT_OP_GROUP = 6
};

typedef struct zbc_rt_op {
  int32_t what;          /* ZBC_RT_OP_* */
  int32_t stage;         /* compute; transfer: the producing stage */
  int32_t microbatch;
  int32_t position;      /* in the rank's top-level order (a group's
                            members share the group's) */
  int32_t frame;         /* compute: first slot in `frames` */
  int32_t frame_size;
  int32_t second_frame;  /* a fused BW of a split stage: W's frame (B's is
                            `frame`); -1 otherwise */
  int32_t second_frame_size;
  int32_t buffer;        /* transfer: the buffer it sends or fills */
  int32_t peer;          /* transfer: the other rank */
  int32_t first_member;  /* group: its members, consecutive ops */
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
  int32_t init;          /* 0 zeros, 1 ones, 2 normal, 3 uniform */
  double scale;          /* normal's sigma, uniform's bound */
  int32_t rank_of_shape; /* dims in `shape` */
  int64_t shape[8];
  int32_t tied;          /* index into the program's `tied`, or -1 */
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
/* Waits for a transfer or group issued earlier: the op that follows needs
 * it (its recv has landed, or its send buffer is free). */
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
/* y = x, n float elements: a value a phase yields under two keys that each
 * have a buffer is written once by its kernel, then copied. */
zbc_rt_status zbc_rt_copy(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n);

zbc_rt_status zbc_rt_linear(zbc_rt_rank *rank, int32_t x, int32_t w,
                            int32_t y, int64_t rows, int64_t in, int64_t out);
zbc_rt_status zbc_rt_matmul(zbc_rt_rank *rank, int32_t a, int32_t b,
                            int32_t c, int64_t batch, int64_t m, int64_t k,
                            int64_t n);
zbc_rt_status zbc_rt_bias_add(zbc_rt_rank *rank, int32_t x, int32_t bias,
                              int32_t y, int64_t rows, int64_t n);
zbc_rt_status zbc_rt_add(zbc_rt_rank *rank, int32_t a, int32_t b, int32_t y,
                         int64_t n);
zbc_rt_status zbc_rt_relu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n);
/* y [cols, rows] = x [rows, cols] transposed. */
zbc_rt_status zbc_rt_transpose(zbc_rt_rank *rank, int32_t x, int32_t y,
                               int64_t rows, int64_t cols);
zbc_rt_status zbc_rt_gelu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n);
zbc_rt_status zbc_rt_layernorm(zbc_rt_rank *rank, int32_t x, int32_t gamma,
                               int32_t beta, int32_t y, int64_t rows,
                               int64_t n, double epsilon);
zbc_rt_status zbc_rt_embedding(zbc_rt_rank *rank, int32_t indices,
                               int32_t table, int32_t y, int64_t count,
                               int64_t vocab, int64_t h);
zbc_rt_status zbc_rt_causal_attention(zbc_rt_rank *rank, int32_t qkv,
                                      int32_t out, int32_t workspace,
                                      int64_t batch, int64_t seq,
                                      int64_t hidden, int64_t heads);
zbc_rt_status zbc_rt_cross_entropy(zbc_rt_rank *rank, int32_t logits,
                                   int32_t labels, int32_t loss, int64_t rows,
                                   int64_t classes);
zbc_rt_status zbc_rt_fill(zbc_rt_rank *rank, int32_t y, int64_t n,
                          double value);
zbc_rt_status zbc_rt_linear_grad_input(zbc_rt_rank *rank, int32_t dy,
                                       int32_t w, int32_t dx, int64_t rows,
                                       int64_t in, int64_t out);
zbc_rt_status zbc_rt_linear_grad_weight(zbc_rt_rank *rank, int32_t x,
                                        int32_t dy, int32_t dw, int64_t rows,
                                        int64_t in, int64_t out);
zbc_rt_status zbc_rt_matmul_grad_lhs(zbc_rt_rank *rank, int32_t dc, int32_t b,
                                     int32_t da, int64_t batch, int64_t m,
                                     int64_t k, int64_t n);
zbc_rt_status zbc_rt_matmul_grad_rhs(zbc_rt_rank *rank, int32_t a, int32_t dc,
                                     int32_t db, int64_t batch, int64_t m,
                                     int64_t k, int64_t n);
zbc_rt_status zbc_rt_bias_grad(zbc_rt_rank *rank, int32_t dy, int32_t db,
                               int64_t rows, int64_t n);
zbc_rt_status zbc_rt_relu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n);
zbc_rt_status zbc_rt_gelu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n);
zbc_rt_status zbc_rt_layernorm_grad_input(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t gamma,
                                          int32_t dx, int64_t rows, int64_t n,
                                          double epsilon);
zbc_rt_status zbc_rt_layernorm_grad_gamma(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t dgamma,
                                          int64_t rows, int64_t n,
                                          double epsilon);
zbc_rt_status zbc_rt_embedding_grad(zbc_rt_rank *rank, int32_t indices,
                                    int32_t dy, int32_t dtable, int64_t count,
                                    int64_t vocab, int64_t h);
zbc_rt_status zbc_rt_causal_attention_grad(zbc_rt_rank *rank, int32_t dout,
                                           int32_t qkv, int32_t dqkv,
                                           int32_t workspace, int64_t batch,
                                           int64_t seq, int64_t hidden,
                                           int64_t heads);
zbc_rt_status zbc_rt_cross_entropy_grad(zbc_rt_rank *rank, int32_t logits,
                                        int32_t labels, int32_t dloss,
                                        int32_t dlogits, int64_t rows,
                                        int64_t classes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ZBC_RUNTIME_ZBC_RUNTIME_H */
