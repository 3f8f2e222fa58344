#!/usr/bin/env bash
# cohort-doctor from the user's side: on this machine every check passes (exit 0); each mistake
# below is one FAIL line naming what is wrong, with its fix, and exit 1.
set -u
doctor=$1
fails=0
expect() {  # expect LABEL WANT_RC PATTERN -- ENV... ARGS...
  local label=$1 want=$2 pattern=$3
  shift 3
  out=$(env "$@" 2>&1)
  rc=$?
  if { [ "$want" = nz ] && [ "$rc" -ne 0 ] || [ "$rc" = "$want" ]; } && grep -Eq -- "$pattern" <<<"$out"; then
    echo "ok    $label"
  else
    echo "FAIL  $label: exit $rc (want $want), output:"; echo "$out"; fails=$((fails + 1))
  fi
}
expect "this machine passes" 0 "^0 failure\(s\)" -u MASTER_ADDR -u MASTER_PORT "$doctor"
expect "the local ranks' threads fit the CPUs by default" 0 "^ok +threads" \
  -u OMP_NUM_THREADS "$doctor" --nproc-per-node 2
expect "an unresolvable MASTER_ADDR" 1 "FAIL +master +MASTER_ADDR 'no.such.host.invalid' does not resolve" \
  MASTER_ADDR=no.such.host.invalid MASTER_PORT=29500 "$doctor"
expect "rank 0 cannot serve on an address of another host" 1 "FAIL +master +rank 0 cannot serve the store on 192.0.2.1" \
  MASTER_ADDR=192.0.2.1 MASTER_PORT=29500 "$doctor" --rank 0
# A port some other process listens on.
python3 -c 'import socket,time,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"${TMPDIR:-/tmp}/doctor_port.$$" &
holder=$!
for _ in $(seq 50); do [ -s "${TMPDIR:-/tmp}/doctor_port.$$" ] && break; sleep 0.1; done
busy=$(cat "${TMPDIR:-/tmp}/doctor_port.$$")
expect "a port in use" 1 "choose a free MASTER_PORT" MASTER_ADDR=127.0.0.1 MASTER_PORT="$busy" "$doctor" --rank 0
expect "rank 1 reaches the store's port" 0 "ok +master +the store at 127.0.0.1 .* is reachable" \
  MASTER_ADDR=127.0.0.1 MASTER_PORT="$busy" "$doctor" --rank 1 --world 2
kill "$holder" 2>/dev/null; rm -f "${TMPDIR:-/tmp}/doctor_port.$$"
expect "/dev/shm too small for 128 local ranks with 64 MiB slots" 1 "FAIL +/dev/shm +[0-9]+ MiB free; the shm backend needs [0-9]+ MiB for 128" \
  -u MASTER_ADDR COHORT_SHM_SLOT_BYTES=67108864 "$doctor" --nproc-per-node 128
expect "the math modes are reported" 0 "^ok +math +TF32 off, deterministic algorithms on, cuDNN benchmark on" \
  -u MASTER_ADDR COHORT_ALLOW_TF32=0 COHORT_DETERMINISTIC=1 COHORT_CUDNN_BENCHMARK=1 "$doctor"
expect "a math-mode typo names the variable and value" 1 "FAIL +math +COHORT_CUDNN_BENCHMARK='yes' is not a math-mode setting: use 1 \(on\) or 0 \(off\)" \
  -u MASTER_ADDR COHORT_CUDNN_BENCHMARK=yes "$doctor"
expect "oversubscribed threads are a warning" 0 "WARN +threads .*oversubscribed" \
  -u MASTER_ADDR OMP_NUM_THREADS=4 "$doctor" --nproc-per-node 4
expect "--ops: the host routes convolutions to oneDNN" 0 "conv2d_forward +conv2d.hpp .*oneDNN primitive \(host/conv2d.cpp\)" "$doctor" --ops
# --ops prints one row per op of the op list (cohort-doctor's rows come from the enum, the count
# here from the X-macro lines of op_list.hpp itself), between the header and the first blank line.
op_list="$(dirname "$0")/../../core/include/cohort/backend/op_list.hpp"
ops=$(grep -cE '^ +X\([a-z0-9_]+, [A-Za-z0-9]+\)' "$op_list")
rows=$("$doctor" --ops | sed -n '2,/^$/p' | grep -c '\.hpp')
if [ "$ops" -lt 40 ] || [ "$rows" -ne "$ops" ]; then
  echo "FAIL --ops printed $rows op rows, op_list.hpp lists $ops"; fails=$((fails + 1))
fi
expect "a bad flag" nz "nproc-per-node" "$doctor" --nproc-per-node 0
[ $fails -eq 0 ] && echo "all cohort-doctor cases passed" || exit 1
