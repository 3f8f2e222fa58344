#!/usr/bin/env bash
# The test suite under the sanitizers (CI runs this from .ci/run):
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (preset asan, build-asan/): every ctest entry
#      except those listed in ASAN_SKIP below (and the GPU ones, which skip without a GPU);
#   2. ThreadSanitizer (preset tsan, build-tsan/): the collectives (shm, ucx, store, conformance,
#      failures) and the data loader, the code with threads of its own.
# Any report fails the run (halt_on_error / -fno-sanitize-recover). Prints each part's time.
#
#   tools/sanitize.sh [asan|tsan]...     (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(asan tsan)

# Left out under ASan, with the reason: the launcher tests start real Slurm daemons, torchrun and
# network namespaces (minutes each; they test launchers, and the programs they start are the same
# ones the other entries check under ASan); launch_restart runs eight 2- and 3-rank training jobs
# (about 2 minutes, several times that under ASan) whose checkpoint and resume code train_unit
# runs under ASan in seconds, and whose cohortrun restarts cohortrun_tests runs; launch_elastic
# runs thirteen 2- to 4-rank jobs with timing bounds (a recovery within 3 s, a 1.5 s settle time)
# that ASan's slowdown would turn into false failures (its loader regrouping and membership log
# run under ASan in data_unit and cohort_parallel_tests), so its light set runs instead, below;
# launch_elastic_netns and comm_ucx_keepalive_netns are namespace tests like launch_netns_hosts
# (the latter also holds live ranks to a 2 s keep-alive under load, which ASan's slowdown would
# break for no fault of the code).
ASAN_SKIP='^(launch_slurm|launch_torchrun|launch_netns_hosts|launch_hier_netns|launch_restart|launch_elastic|launch_elastic_netns|comm_ucx_keepalive_netns)$'
# Under TSan (5-15x slower): the collectives' unit suites (store, shm with ranks as threads,
# self, ucx with ranks as threads), the data loader, conformance at 1-3 processes on every
# backend (hier also on 2 + 1 simulated hosts, 65 s) and the failure cases at 2 (hier also on 2
# simulated hosts: its worker thread hands errors to the waiting thread). Left out: 4 processes (over its 150 s limit under TSan on 2
# cores; the same code paths as 3) and the failure cases at 3.
TSAN_TESTS='^(collectives_.*|data_unit|conformance_(self|shm|ucx|hier)_np[123]|conformance_hier_uneven_np3|comm_failures_(shm|ucx|hier)_np2|comm_failures_hier_2hosts_np3)$'
# Code under test that TSan cannot see into (not instrumented): UCX's own libraries, and the
# destructor of libucs, which unlocks a mutex TSan never saw locked, at exit.
tsan_supp=$(mktemp)
trap 'rm -f "$tsan_supp"' EXIT
cat >"$tsan_supp" <<'SUPP'
called_from_lib:libucs.so
called_from_lib:libucp.so
called_from_lib:libuct.so
mutex:_dl_call_fini
SUPP

for part in "${parts[@]}"; do
  t0=$(date +%s)
  case "$part" in
    asan)
      cmake --preset asan >/dev/null
      cmake --build --preset asan
      ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --preset asan -j2 -E "$ASAN_SKIP"
      # Elastic training's fault paths (a rank killed over shm and ucx, a rejoin, per-rank, a
      # poison batch: the Trainer's recovery, the membership protocol, the state's transfer)
      # under ASan + UBSan with leak checks, without launch_elastic's time bounds.
      ELASTIC_LIGHT=1 ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        bash tests/launch/test_elastic.sh build-asan/bin
      ;;
    tsan)
      cmake --preset tsan >/dev/null
      cmake --build --preset tsan --target cohort_collectives_tests cohort_conformance \
        test_collectives_ucx test_data cohortrun
      # UCX's memory hooks (libucm intercepts madvise/mmap) crash inside TSan's own interceptors
      # at thread exit; cohort does not need them (host memory only).
      UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no \
      TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$tsan_supp" \
        ctest --preset tsan -j2 -R "$TSAN_TESTS"
      ;;
    *) echo "sanitize.sh: unknown part '$part' (asan, tsan)" >&2; exit 2 ;;
  esac
  echo "sanitize.sh: $part passed in $(( $(date +%s) - t0 )) s"
done
