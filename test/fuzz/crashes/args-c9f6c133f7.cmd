# zbc args: timeout: > 10 s
# rc -9 (timed out); seed input: test/fuzz/corpus/args/zb-v.args
zbc schedule --schedule=interleaved-1f1b --ranks=100000 --virtual=2 --microbatches=8
