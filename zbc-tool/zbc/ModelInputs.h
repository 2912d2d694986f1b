//===- ModelInputs.h - what the files a run reads must hold for a model -*- C++ -*-===//
//
// A model asks two things of the files a run reads: a data file (--data)
// must fill its data keys, and a Hugging Face checkpoint (--init) must hold
// each of its parameters, with its shape, in a dtype --init reads. This is
// the one home of those checks in zbc (ModelInputs.cpp): `zbc run` makes
// them before it compiles or launches anything, and `zbc inspect FILE
// --model M` makes the same ones. Each reads the file with the ranks' own
// readers (runtime/contracts), so that what they accept, the ranks accept.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_MODELINPUTS_H
#define ZBC_TOOL_MODELINPUTS_H

#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/HuggingFaceCheckpoint.h"
#include "zbc/contracts/TokenData.h"

#include "llvm/Support/Error.h"

#include <set>
#include <string>
#include <vector>

namespace zbc {
namespace zb {
class PipelineOp;
} // namespace zb

/// What a model's data and initial weights must be.
struct ModelInputs {
  std::string model; // the pipeline's name
  /// The data keys (inputs and labels) as the ranks read them.
  std::vector<rt::DataKey> dataKeys;
  /// Every zb.param, once each (a tied one is one parameter).
  std::vector<rt::InitParam> params;
  std::set<std::string> paramNames;
};

/// The inputs of `pipeline`.
ModelInputs modelInputsOf(zb::PipelineOp pipeline);

/// The inputs of the model (or pipeline) in `modelPath`, read and split as
/// `zbc compile` does; an error names the file.
llvm::Expected<ModelInputs> readModelInputs(const std::string &modelPath);

/// `path` as --data for a model reading `keys` (all of its data keys): a
/// safetensors file of samples (every key present, its dtype and shape,
/// paired sample counts, finite floats, indices in range, packed documents
/// for a model that reads documents and only for one: Note [Packed
/// documents] in DataFile.h), or a token stream long enough for the
/// sequence, its ids in the vocabulary; with `evaluates` (--eval-every), a
/// token stream with a held-out split. `binTokens`: a .bin file's ids.
llvm::Error checkDataFile(const std::string &path,
                          const std::vector<rt::DataKey> &keys,
                          rt::TokenType binTokens, bool evaluates);

/// `path` as --init for the model: every parameter's tensor there, with
/// its shape and a dtype --init reads (the ranks' rule, locateInitTensor),
/// and every tensor of the checkpoint a parameter of the model or one that
/// transformers itself ignores on load (GPT-2's masks, rotary frequencies:
/// skipped with a note on stderr unless `quiet`).
llvm::Error checkInitCheckpoint(const std::string &path,
                                const ModelInputs &inputs, bool quiet = false);

} // namespace zbc

#endif // ZBC_TOOL_MODELINPUTS_H
