#!/usr/bin/env bash
# Fails on misspelled FileCheck/verify-diagnostics directives under the given
# folder. FileCheck 22 silently ignores e.g. `CHECK-LABLE:`, so such a line
# would check nothing while the test still passes.
set -euo pipefail
root=${1:-$(dirname "$0")}
pattern='(CHECK|expected)-?(LABLE|LABE|LABL|NXT|NEXTT|SMAE|SAM|SAEM|NTO|DAGG|EMPTYY|EROR|ERRROR|eror|errror|notee|warnign)\b|CHEKC|CEHCK|CHCEK|\bCHEK\b|CHECK-(NEXT|SAME|LABEL|NOT|DAG|EMPTY|COUNT-[0-9]+)[^:]|\bCHECK [A-Z]+:'
# fuzz/ holds fuzzer seeds and reproducers (mutated text, no lit tests).
if grep -rnE --include='*.mlir' --include='*.test' --exclude-dir=fuzz "$pattern" "$root"; then
  echo "error: misspelled or malformed FileCheck directive(s) above" >&2
  exit 1
fi
# Every RUN line that pipes into FileCheck must have at least one CHECK.
status=0
while IFS= read -r f; do
  # One awk, no pipe: with pipefail, `grep | grep -q` fails at random when
  # the second grep exits before the first has written everything.
  if grep -q 'FileCheck' "$f" &&
     ! awk '!/RUN:/ && /[A-Z][A-Z0-9_]*(-[A-Z]+)?:/ { found = 1 } END { exit !found }' "$f"; then
    echo "error: $f runs FileCheck but has no CHECK lines" >&2
    status=1
  fi
done < <(grep -rlE --include='*.mlir' --include='*.test' --exclude-dir=fuzz 'RUN:' "$root")
exit $status
