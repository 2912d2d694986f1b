// Tests zb-schedule's cost-file option: measured costs replace the cost
// model's. With unit F, B and W on the example MLP's two stages, ZB-H1 at
// two microbatches takes 7 units with a 1/7 bubble (the figures zbc
// schedule prints for the same unit costs); a file with a list of the wrong length, or one that
// cannot be read, is an error on the pipeline.
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%S/Inputs/unit-costs-2.json" --zb-schedule="schedule=zb-h1 microbatches=2 report=true" -o /dev/null 2>&1 | FileCheck %s
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%S/Inputs/three-stage-costs.json" --zb-schedule="schedule=zb-h1 microbatches=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LENGTH
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%t.missing.json" --zb-schedule="schedule=zb-h1 microbatches=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK: remark: schedule 'zb-h1': makespan 7, bubble rate 0.1429, activation budget none
// LENGTH: error: 'zb.pipeline' op cost file '{{.*}}three-stage-costs.json' gives 3 F values; the pipeline has 2 stages (give one for all, or one per stage)
// MISSING: error: 'zb.pipeline' op cannot read the cost file: cannot open input file '{{.*}}missing.json'
