# shellcheck shell=bash
# The verdicts and the table of tools/gpu_check.sh, kept apart so that they run against canned logs
# on a machine without a GPU (tests/tools/test_gpu_check.sh). Sourced, never run:
#
#   . tools/gpu_check_lib.sh
#   gc_ctest_verdict LOG GPUS      "RESULT<TAB>DETAIL" for a `ctest` log (G3 of the GPU review)
#   gc_sanitizer_verdict LOG RC    "RESULT<TAB>DETAIL" for a compute-sanitizer run
#   gc_version_at_least A B        true when version A (major.minor...) >= B
#   gc_row_add FILE IDX STAGE CHECK RESULT SECS DETAIL    one row of the table
#   gc_rows_clear FILE STAGE       drops a stage's rows (a stage run again replaces them)
#   gc_table FILE                  the rows, in stage order, under a column header
#
# Rows live in a tab-separated file (stage index, stage, check, result, seconds, detail) so that
# stages run by separate invocations make one table. Results: ok, FAIL, skipped (not run, with
# the reason), info.

# gc_ctest_verdict LOG GPUS: reads ctest's per-test lines ("1/9 Test #1: name .... Passed") and its
# "The following tests did not run" list. ok only when every test listed passed and nothing was
# skipped; "did not run" (exit 77, SKIP_RETURN_CODE) counts as not run, never as passed, so a
# summary cannot read green with nothing run. The one skip that is not a failure: an nccl entry
# named *_npN with N greater than GPUS (nccl needs a GPU per rank), reported as "needs N GPUs".
# "Not Run" (no executable), Timeout and every other status count as failed. No test at all: FAIL.
gc_ctest_verdict() {
  local log=$1 gpus=$2
  [ -r "$log" ] || { printf 'FAIL\tno ctest log at %s\n' "$log"; return; }
  awk -v gpus="$gpus" '
    function note(name, status) {
      if (name in st) return
      st[name] = status; order[++n] = name
    }
    # 3/9 Test #3: name ......***Skipped   0.01 sec
    /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
      line = $0
      sub(/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: /, "", line)
      name = line; sub(/ .*/, "", name)
      status = line; sub(/^[^ ]+ \.*/, "", status); sub(/^ *(\*\*\*)?/, "", status)
      sub(/ +[0-9.]+ +sec.*$/, "", status)
      note(name, status)
      next
    }
    /^The following tests did not run:/ { in_dnr = 1; next }
    /^The following tests FAILED:/ { in_dnr = 0; next }
    in_dnr && /^[ \t]+[0-9]+ - [^ ]+ \(/ {
      name = $3; note(name, "Skipped"); next
    }
    in_dnr && !/^[ \t]/ { in_dnr = 0 }
    /No tests were found/ { none = 1 }
    END {
      p = f = s = x = 0; sk = ""; xs = ""; fl = ""
      for (i = 1; i <= n; i++) {
        name = order[i]; status = st[name]
        if (status == "Passed") { p++; continue }
        if (status == "Skipped" || status == "Disabled") {
          need = 0
          if (name ~ /nccl/ && match(name, /_np[0-9]+$/)) need = substr(name, RSTART + 3) + 0
          if (need > gpus) { x++; xs = xs (xs == "" ? "" : ", ") name }
          else { s++; sk = sk (sk == "" ? "" : ", ") name }
          continue
        }
        f++; fl = fl (fl == "" ? "" : ", ") name " (" status ")"
      }
      detail = p " passed, " f " failed, " (s + x) " not run"
      paren = ""
      if (s) paren = "skipped with a GPU present: " sk
      if (x) paren = paren (paren == "" ? "" : "; ") "need more GPUs than the " gpus " here: " xs
      if (paren != "") detail = detail " (" paren ")"
      if (f) detail = detail "; failed: " fl
      if (n == 0) { print "FAIL\tno test ran" (none ? " (ctest: No tests were found)" : ""); exit }
      print ((f || s) ? "FAIL" : "ok") "\t" detail
    }' "$log"
}

# gc_sanitizer_verdict LOG RC: compute-sanitizer's "ERROR SUMMARY: N errors" (memcheck) or
# "RACECHECK SUMMARY: ..." line with the program's exit status (--error-exitcode 1). Exit 77 is
# the test's "skipped": FAIL, since this runs only where a GPU is present.
gc_sanitizer_verdict() {
  local log=$1 rc=$2 summary first
  summary=$(grep -m1 -oE '(ERROR|RACECHECK) SUMMARY: .*' "$log" 2>/dev/null | tail -n1)
  first=$(grep -m1 -E '^========= +(Invalid|Race|Error|Program hit|Uninitialized|Leaked|Warning)' "$log" 2>/dev/null |
          sed 's/^========= *//' | cut -c1-120)
  if [ "$rc" -eq 77 ]; then
    printf 'FAIL\tthe test skipped (exit 77) although a GPU is present: %s\n' \
      "$(grep -m1 -i 'skipped' "$log" | cut -c1-120)"
  elif [ "$rc" -eq 0 ] && [ -n "$summary" ]; then
    printf 'ok\t%s\n' "$summary"
  elif [ "$rc" -eq 0 ]; then
    printf 'FAIL\texit 0 but no sanitizer summary in the log (did compute-sanitizer run?)\n'
  else
    printf 'FAIL\texit %s; %s%s\n' "$rc" "${summary:-no sanitizer summary}" "${first:+; first: $first}"
  fi
}

gc_version_at_least() {  # A B: numeric, field by field (13.0 >= 12.8; 12.10 >= 12.9)
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, x, "."); nb = split(b, y, "."); m = na > nb ? na : nb
    for (i = 1; i <= m; i++) { if (x[i] + 0 > y[i] + 0) exit 0; if (x[i] + 0 < y[i] + 0) exit 1 }
    exit 0 }'
}

gc_row_add() {  # FILE IDX STAGE CHECK RESULT SECS DETAIL (tabs and newlines in DETAIL become spaces)
  local file=$1 idx=$2 stage=$3 check=$4 result=$5 secs=$6 detail
  detail=$(printf '%s' "$7" | tr '\t\n' '  ')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$idx" "$stage" "$check" "$result" "$secs" "$detail" >>"$file"
}

gc_rows_clear() {  # FILE STAGE
  local file=$1 stage=$2
  [ -f "$file" ] || return 0
  awk -F'\t' -v s="$stage" '$2 != s' "$file" >"$file.tmp" && mv "$file.tmp" "$file"
}

gc_table() {  # FILE: rows sorted by stage index (stable: a stage's rows keep their order)
  local file=$1
  printf '%-9s %-34s %-8s %5s  %s\n' stage check result s detail
  [ -f "$file" ] || return 0
  sort -s -t$'\t' -k1,1n "$file" |
    awk -F'\t' '{ printf "%-9s %-34s %-8s %5s  %s\n", $2, $3, $4, $5, $6 }'
}
