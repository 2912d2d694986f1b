//===- RecomputePlan.h - what a stage's R rebuilds and runs -------*- C++ -*-===//
//
// Note [Selective recomputation]
// A stage's R rebuilds the stash (F.I) of a microbatch whose F did not keep
// it (Note [Recomputation in the IR] in ProgramMemory.h). Which of the F.I
// it rebuilds is the stage's policy, its `rebuilt` attribute: absent, every
// F.I (full recomputation: the F keeps only its inputs); present, the keys
// it lists (selective: the F keeps the other F.I as it would without the
// R). The R runs only what those keys need: the ops of F's body on a path
// from the stage's inputs or a kept F.I to a rebuilt key, each value
// yielded under a kept F.I read from that buffer instead of computed again.
// So a selective R is cheap when what it rebuilds is cheap, and it reads
// inputs only where its ops do.
//
// RecomputePlan is that reading of the policy, the one every consumer asks:
// the program memory and the memory plan (which buffers a recomputed F and
// an R write, what the R reads until it runs, its temporaries), the stage
// analysis (M_keep, and R's cost), and the code generator (the R's
// function).
//
// selectiveRebuiltKeys is the policy `--recompute selective` writes: the
// F.I whose rebuilding costs no matmul-class FLOPs (CostModel.h), that is,
// element-wise and normalisation results rebuilt from the stage's inputs and
// the F.I it keeps: what a matmul or an attention produced stays.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_RECOMPUTEPLAN_H
#define ZBC_ANALYSIS_RECOMPUTEPLAN_H

#include "zbc/Dialect/ZB/ZBOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

namespace zbc {

struct RecomputePlan {
  /// The F.I keys an R writes; a recomputed F writes the others.
  llvm::StringSet<> rebuilt;
  /// The ops of F's body (its yield excluded) an R runs.
  llvm::SmallPtrSet<mlir::Operation *, 16> runs;
  /// Values an R reads from the buffer of a kept F.I instead of computing
  /// them, with that key.
  llvm::DenseMap<mlir::Value, std::string> readFromKept;
  /// The arguments of F's body (inputs, data, parameters) it reads.
  llvm::DenseSet<mlir::Value> readArguments;

  bool rebuilds(llvm::StringRef key) const { return rebuilt.contains(key); }
  /// Whether an R reads `value` (an argument of F's body, or a kept value)
  /// where it runs: so what holds it lives until the R.
  bool reads(mlir::Value value) const;
};

/// The plan of `stage`'s `rebuilt` policy (the verifier has checked it).
RecomputePlan recomputePlanOf(zb::StageOp stage);

/// The selective policy for `stage`: its F.I keys whose rebuilding needs no
/// matmul-class FLOPs, in F's yield order (empty: nothing cheap to rebuild).
std::vector<std::string> selectiveRebuiltKeys(zb::StageOp stage);

} // namespace zbc

#endif // ZBC_ANALYSIS_RECOMPUTEPLAN_H
