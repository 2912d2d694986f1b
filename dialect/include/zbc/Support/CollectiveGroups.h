//===- CollectiveGroups.h - the groups a collective runs over ------*- C++ -*-===//
//
// Note [Collective groups]
// A collective (zb.all_reduce) names the group of processes it runs over,
// as a string every layer reads the same way: the dialect's verifier, the
// schedule library's proof (Program.h), the code generator and the runtime.
// - "replicas": one pipeline rank in each data-parallel replica. Every
//   replica runs the same program, so its members issue the same
//   collectives in the same order by construction; within one replica's
//   program the group is the rank alone.
// - "tied:NAME": the ranks that hold a stage with parameter NAME, in every
//   replica (a tied embedding and head). One all-reduce over it sums the
//   holders' gradients and the replicas' at once.
// - "pipeline": every rank of the replica.
// Plain C++, no MLIR: the bottom of the layering.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SUPPORT_COLLECTIVEGROUPS_H
#define ZBC_SUPPORT_COLLECTIVEGROUPS_H

#include <string>
#include <string_view>

namespace zbc {

inline constexpr const char *kReplicasGroup = "replicas";
inline constexpr const char *kPipelineGroup = "pipeline";
inline constexpr const char *kTiedGroupPrefix = "tied:";

/// The group of the holders of tied parameter `param`.
inline std::string tiedGroupOf(std::string_view param) {
  return std::string(kTiedGroupPrefix) + std::string(param);
}

/// The tied parameter a "tied:NAME" group names, or "" for another group.
inline std::string_view tiedParamOf(std::string_view group) {
  std::string_view prefix(kTiedGroupPrefix);
  return group.substr(0, prefix.size()) == prefix ? group.substr(prefix.size())
                                                  : std::string_view();
}

} // namespace zbc

#endif // ZBC_SUPPORT_COLLECTIVEGROUPS_H
