# zbc args: exit 1 without error: llvm::cl's message for a bad option (no 'error')
# rc 1; seed input: test/fuzz/corpus/args/list.args
# | zbc: for the --list option: '5' is invalid value for boolean argument! Try 0 or 1
zbc schedule --list=5
