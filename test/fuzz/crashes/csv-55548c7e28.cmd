# zbc csv: exit 1 without error: llvm::cl's message for a bad option (no 'error')
# rc 1; seed input: test/fuzz/corpus/csv/zb-h2__p3_m6.csv
# | zbc: for the --ranks option: '2147483648' value invalid for integer argument!
zbc schedule --import @INPUT@ --ranks=2147483648 --microbatches 6
