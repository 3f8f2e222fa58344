#!/usr/bin/env bash
# No `PRODUCER | grep -q` in a script that sets pipefail (tests/, tools/, bench/, .ci/). grep -q
# exits at its first match; a producer still writing (bash's echo writes line by line, tr, a
# program's --help) then dies of SIGPIPE, and pipefail turns the match into a failure. That made
# tools_cohort_swap fail once in CI (stop 62) on a table that held the line it looked for.
# Write `grep -q PATTERN <<<"$text"` or `grep -q PATTERN < <(producer)` instead.
# usage: test_script_pipes.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
files=$(grep -rlE --include='*.sh' 'set -[a-z]*o pipefail' tests tools bench .ci 2>/dev/null; ls .ci/run 2>/dev/null)
files=$(grep -v '^tests/tools/test_script_pipes.sh$' <<<"$files")  # its own sample line below
[ -n "$files" ] || { echo "FAIL: no pipefail scripts found under $1"; exit 1; }
pattern='(^|[^|])\|[[:space:]]*grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)'
hits=$(grep -nHE "$pattern" $files | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#')
if [ -n "$hits" ]; then
  echo "FAIL: a pipe into grep -q in a pipefail script (the producer can die of SIGPIPE):"
  echo "$hits"
  exit 1
fi
# The check finds the line that failed.
grep -qE "$pattern" <<<'echo "$out" | grep -qF "| varies |" || fail' || { echo "FAIL: the pattern misses its case"; exit 1; }
echo "checked $(wc -l <<<"$files") pipefail scripts: no pipe into grep -q"
