//===- VocabPasses.h - vocabulary passes in any schedule's order --*- C++ -*-===//
//
// Note [Placing the vocabulary passes]
// Vocabulary parallelism adds, on every rank, an S and a T pass of each
// microbatch (Note [Vocabulary passes], Problem.h). Any schedule's order
// takes them by one rule, so that every registered schedule (and one's
// own) runs with them: the order is simulated without them, then on each
// rank S(r, j) goes before the first action that started at or after the
// end of the last stage's F of j (when the hidden states it needs exist).
// T(r, j) goes, with two barriers, before the first action that started at
// or after the start of the last stage's backward of j (which waits for
// every T); with one, nothing waits for it, so it goes one microbatch
// later, beside S(r, j + 1) (the last at the end): its barrier has had a
// microbatch's work to complete, and a rank holds at most two logits
// shards (each from its S to its T). Every rank's order is then a
// subsequence of one order of all actions by those times, in which every
// dependence goes forward (ties: the passes before the pipeline's own
// actions, by microbatch, S before T), so the placed order cannot
// deadlock; the simulation that follows checks it anyway, with the
// barriers' times.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_VOCABPASSES_H
#define ZBC_SCHEDULE_VOCABPASSES_H

#include "zbc/Schedule/ScheduleTable.h"

namespace zbc::sched {

/// Puts `problem.vocab`'s S and T passes into `table`, which has none (Note
/// [Placing the vocabulary passes]); the error says why they do not fit
/// (the simulation's deadlock or activation budget).
llvm::Error placeVocabularyPasses(const Problem &problem, ScheduleTable &table);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_VOCABPASSES_H
