#!/usr/bin/env bash
# expect_output.sh PATTERN COMMAND [ARGS...]: runs the command, passes its output through, and
# succeeds only when it exits 0 AND its output has a line matching PATTERN (grep -E).
# ctest's PASS_REGULAR_EXPRESSION alone ignores the exit code: a program that printed the line
# and then crashed would pass.
set -uo pipefail
pattern=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "expect_output: '$1' exited with status $rc" >&2
  exit "$rc"
fi
if ! grep -Eq -- "$pattern" "$out"; then
  echo "expect_output: no line of the output matches '$pattern'" >&2
  exit 1
fi
