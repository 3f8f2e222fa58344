#!/usr/bin/env bash
# toy_network learns its synthetic task (chance is 10%) and draws its cost chart; a bad flag is
# one line and exit 2.
set -u
bin="$1"
out=$(timeout 120 "$bin" 2>&1) || { echo "$out"; echo "FAIL: toy_network exited non-zero"; exit 1; }
acc=$(echo "$out" | sed -n 's/^accuracy over the last 100 steps: \([0-9.]*\)%.*/\1/p')
echo "$out" | tail -4
grep -q "cost history" <<<"$out" || { echo "FAIL: no cost chart"; exit 1; }
awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 60) }' || { echo "FAIL: accuracy ${acc:-none}% < 60%"; exit 1; }
err=$("$bin" --steps 0 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && [ "$(echo "$err" | wc -l)" -eq 1 ] || { echo "FAIL: --steps 0 gave exit $rc: $err"; exit 1; }
echo "1 passed, 0 failed"
