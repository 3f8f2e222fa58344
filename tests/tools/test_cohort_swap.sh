#!/usr/bin/env bash
# cohort-swap from the user's side. With a stand-in program (swap_fake_rank.sh) whose figures the
# test sets: alternating rounds, medians and spread, the digest column against the first backend
# (equal, differing, varying over rounds, ranks disagreeing), --expect-equal's status, the
# +VAR=VALUE and @HOSTS entries reaching the ranks, and every bad input as one clear error. Then
# the real thing: the zoo's CNN trained over shm, ucx and hier on 2 simulated hosts at 2 ranks,
# each row's digest equal to the digest the program itself printed, and a PNG plot.
# usage: test_cohort_swap.sh COHORT_SWAP [fake|zoo]   (fake: parts 1-5, zoo: part 6; default both)
set -uo pipefail
swap=$1
part=${2:-both}
here=$(cd "$(dirname "$0")" && pwd)
fake=$here/swap_fake_rank.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export FAKE_DIR=$work
if [ "$part" != zoo ]; then

# 1. Three rounds of two cells: the order alternates, medians and spread are the known ones.
out=$("$swap" --backends shm,ucx --nproc 2 --rounds 3 --out "$work/a" --no-plot -- "$fake" 2>&1) ||
  fail "fake swap exited $?: $out"
echo "$out"
order=$(echo "$out" | sed -n 's/^  round \([0-9]\)\/3  \([a-z]*\) .*/\1\2/p' | tr '\n' ' ')
[ "$order" = "1shm 1ucx 2ucx 2shm 3shm 3ucx " ] || fail "rounds do not alternate: $order"
# images/s 100, 200, 300 per cell: median 200, spread (300 - 100) / 200 = 100%.
grep -qF "| shm | 2 | 200.0 | 100.0% | 10.00 | 2.50 | 1.00 | 0.500000 | d1g3st | reference |" <<<"$out" ||
  fail "shm row"
grep -qF "| ucx | 2 | 200.0 | 100.0% | 10.00 | 2.50 | 1.00 | 0.500000 | d1g3st | yes |" <<<"$out" ||
  fail "ucx row"
[ "$(grep -c '^shm,shm,2,' "$work/a/swap.csv")" = 3 ] || fail "swap.csv: not 3 shm runs"
[ -f "$work/a/swap.md" ] && [ -f "$work/a/logs/ucx_np2_r3.log" ] && [ -f "$work/a/runs/shm_np2_r1.json" ] ||
  fail "missing swap.md, a log or a run report"

# 2. A differing digest (set for ucx's ranks only) is NO; --expect-equal makes it status 3.
"$swap" --backends shm,ucx+FAKE_DIGEST=other --rounds 1 --out "$work/b" --no-plot -- "$fake" \
  > "$work/b.out" 2>&1 || fail "without --expect-equal a differing digest is not an error"
grep -qF "| ucx+FAKE_DIGEST=other | 2 |" "$work/b.out" && grep -qE "\| other \| NO \|" "$work/b.out" ||
  fail "differing digest not marked NO: $(cat "$work/b.out")"
"$swap" --backends shm,ucx+FAKE_DIGEST=other --rounds 1 --out "$work/b" --no-plot --expect-equal \
  -- "$fake" > "$work/b2.out" 2>&1
[ $? = 3 ] || fail "--expect-equal with a differing digest: status not 3"
grep -q "expect-equal: the weights digests differ" "$work/b2.out" || fail "no --expect-equal message"
out=$("$swap" --backends shm+FAKE_VARY=1 --rounds 2 --out "$work/c" --no-plot -- "$fake" 2>&1)
grep -qF "| varies | NO: varies over rounds |" <<<"$out" || fail "digest varying over rounds: $out"
out=$("$swap" --backends shm+FAKE_SAME=false --rounds 1 --out "$work/c" --no-plot -- "$fake" 2>&1)
grep -qF "| NO: ranks differ |" <<<"$out" || fail "ranks that disagree: $out"

# 3. @HOSTS reaches the ranks as COHORT_HOSTID through cohortrun --simulate-hosts.
"$swap" --backends hier@2 --nproc 2 --rounds 1 --out "$work/d" --no-plot -- "$fake" >/dev/null 2>&1 ||
  fail "hier@2 run"
grep -q "\[rank 0\] host=node0-sim0 comm=hier" "$work/d/logs/hier_2_np2_r1.log" &&
  grep -q "\[rank 1\] host=node0-sim1 comm=hier" "$work/d/logs/hier_2_np2_r1.log" ||
  fail "simulated hosts: $(cat "$work/d/logs/hier_2_np2_r1.log")"

# 4. Runs that go wrong: status 1 naming the cell and why, the log's last lines shown.
expect() {  # expect STATUS TEXT ARGS...: cohort-swap ARGS exits STATUS and prints TEXT
  local want=$1 text=$2
  shift 2
  local got
  got=$("$swap" --out "$work/e" --no-plot --rounds 1 "$@" 2>&1)
  local rc=$?
  [ "$rc" = "$want" ] || fail "cohort-swap $*: status $rc, not $want: $got"
  grep -qF -- "$text" <<<"$got" || fail "cohort-swap $*: no '$text' in: $got"
  echo "ok ($rc): cohort-swap $* -> $text"
}
expect 1 "shm+FAKE_EXIT=4 at 2 ranks, round 1 exited with status 4" \
  --backends shm+FAKE_EXIT=4 -- "$fake"
expect 1 "failing on purpose" --backends shm+FAKE_EXIT=4 -- "$fake"
expect 1 "cannot open" --backends shm+FAKE_NO_REPORT=1 -- "$fake"
expect 1 "the program ran on ucx with 2 ranks" --backends shm+FAKE_BACKEND=ucx -- "$fake"
expect 1 "the program ran on shm with 3 ranks" --backends shm+FAKE_WORLD=3 -- "$fake"
expect 1 "timed out" --timeout 1 --backends shm -- /bin/sleep 30
# 5. Bad arguments: status 2, one line naming what is wrong.
expect 2 "no backend 'tcp' in this build" --backends shm,tcp -- "$fake"
expect 2 "'@x' is not a host count" --backends hier@x -- "$fake"
expect 2 "'+UCX_TLS' is not VAR=VALUE" --backends ucx+UCX_TLS -- "$fake"
expect 2 "2 simulated hosts need at least as many ranks" --backends hier@2 --nproc 1 -- "$fake"
expect 2 "--nproc: '0' is not a rank count" --nproc 0 -- "$fake"
expect 2 "no program" --backends shm
expect 2 "--comm would override it" --backends shm -- "$fake" --comm ucx

fi

if [ "$part" != fake ]; then
# 6. The real thing: the zoo's CNN over shm, ucx and hier on 2 simulated hosts, 2 ranks, 2 rounds.
out=$(OMP_NUM_THREADS=1 "$swap" --model cnn_a --backends shm,ucx,hier@2 --nproc 2 --rounds 2 \
  --out "$work/z" --expect-equal -- --synthetic --synthetic-size 256 --epochs 1 --max-steps 6 \
  --no-eval --deterministic 2>&1) || fail "zoo swap exited $?: $out"
echo "$out"
for log in "$work"/z/logs/*_np2_r*.log; do
  printed=$(sed -n 's/.*ranks hold identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$log")
  [ -n "$printed" ] || fail "$log: the program printed no digest"
  grep -qF "| $printed | " <<<"$out" || fail "$log: digest $printed not in the table"
done
[ "$(echo "$out" | grep -c '| yes |')" = 2 ] || fail "not 2 rows equal to the reference"
[ "$(head -c 8 "$work/z/swap.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "swap.png is not a PNG"
fi
echo "cohort-swap: all checks passed"
