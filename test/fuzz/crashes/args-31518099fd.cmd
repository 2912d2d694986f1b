# zbc args: abort: no stack
# rc -6; seed input: test/fuzz/corpus/args/zb-auto-limits.args
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build/bin/zbc schedule --schedule=zb-auto --ranks=0x10 --microbatches 8 --cost comm=4.5,W=1e308,B=4.5,F=1e308 --mem=B=2,W=1 --mem-limit=8 --format json
# | double free or corruption (out)
zbc schedule --schedule=zb-auto --ranks=0x10 --microbatches 8 --cost comm=4.5,W=1e308,B=4.5,F=1e308 --mem=B=2,W=1 --activation-budget=8 --format json
