// Tests zb-stage-costs (Note [Costs in the IR]): the costs a schedule plans
// with are written on the IR, the cost model's or a cost file's over them,
// and zb-schedule plans with what the IR says: a stage's F edited in the IR
// (3 instead of the file's 1) gives the makespan `zbc schedule` computes for
// the same costs (F = [3, 1], B = W = 1, comm 0.5: 11).
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs | FileCheck %s --check-prefix=MODEL
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%S/Inputs/unit-costs-2.json comm=0.5" -o %t.mlir
// RUN: FileCheck %s --check-prefix=FILE < %t.mlir
// RUN: sed -e '/zb.stage 0/s/F = 1 : i64/F = 3 : i64/' %t.mlir | zbc-opt --zb-schedule="schedule=zb-h1 microbatches=2 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EDITED
// RUN: zbc schedule --schedule zb-h1 --ranks 2 --microbatches 2 --cost-file %S/Inputs/f31-costs.json | FileCheck %s --check-prefix=SAME

// MODEL: zb.pipeline @mlp attributes {costs = {comm = 0 : i64, copy_bandwidth = 0 : i64, unit = "FLOPs"}}
// MODEL: zb.stage 0 attributes {costs = {B = 0 : i64, F = 83968 : i64, M_B = 6656 : i64, M_W = 8704 : i64, M_keep = 512 : i64, M_offload = 6144 : i64, R = 83456 : i64, W = 149504 : i64}}
// MODEL: zb.stage 1 attributes {costs = {B = 74624 : i64, F = 75136 : i64, M_B = 6464 : i64, M_W = 6400 : i64, M_keep = 2112 : i64, M_offload = 4352 : i64, R = 74816 : i64, W = 74304 : i64}}

// FILE: zb.pipeline @mlp attributes {costs = {comm = 5.000000e-01 : f64, copy_bandwidth = 0 : i64, cost_file = "{{.*}}unit-costs-2.json", unit = "ms"}}
// The file gives no R: R is the stage's recomputed FLOPs at the rate its F
// ran at (Note [Measured costs]), 83456 / 83968 of F's 1 ms, never FLOPs
// beside milliseconds; the figures as measured and the model's of that
// moment stay on the stage for a rewrite to start from.
// FILE: zb.stage 0 attributes {costs = {B = 1 : i64, F = 1 : i64, M_B = 6656 : i64, M_W = 8704 : i64, M_keep = 512 : i64, M_offload = 6144 : i64, R = 0.99390243902439{{[0-9]*}} : f64, W = 1 : i64, measured = {B = 1 : i64, F = 1 : i64,
// FILE-SAME: measured_model = {B = 0 : i64, F = 83968 : i64,

// Times without F have no unit to meet the model's in.
// RUN: echo '{"B": [1, 1], "W": 1}' > %t-nof.json
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%t-nof.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOF
// NOF: error: 'zb.pipeline' op cost file '{{.*}}-nof.json' gives times but no F: each stage's F sets the unit its other times are read and derived in (Note [Measured costs]); give F for every stage

// EDITED: remark: schedule 'zb-h1': makespan 11, bubble rate 0.0909
// SAME: makespan 11 (longest rank span)
