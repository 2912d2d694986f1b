//===- Actions.h - the papers' action shorthands for schedule tests -*- C++ -*-===//
//
// F(s, j), B(s, j), ... build the Action of that kind on stage s for
// microbatch j, so that tests write orders as the papers draw them.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TEST_UNIT_SCHEDULE_ACTIONS_H
#define ZBC_TEST_UNIT_SCHEDULE_ACTIONS_H

#include "zbc/Schedule/ScheduleTable.h"

namespace zbc::sched::test_actions {

inline Action F(int s, int j) { return {Kind::F, s, j}; }
inline Action B(int s, int j) { return {Kind::B, s, j}; }
inline Action W(int s, int j) { return {Kind::W, s, j}; }
inline Action BW(int s, int j) { return {Kind::BW, s, j}; }
inline Action R(int s, int j) { return {Kind::R, s, j}; }
inline Action O(int s, int j) { return {Kind::O, s, j}; }
inline Action L(int s, int j) { return {Kind::L, s, j}; }
/// The vocabulary passes of rank r (its shard) for microbatch j.
inline Action S(int r, int j) { return {Kind::S, r, j}; }
inline Action T(int r, int j) { return {Kind::T, r, j}; }

} // namespace zbc::sched::test_actions

#endif // ZBC_TEST_UNIT_SCHEDULE_ACTIONS_H
