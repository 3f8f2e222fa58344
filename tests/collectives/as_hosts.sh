#!/bin/sh
# Runs PROGRAM as if its rank were on host h<RANK / N> (or, with N negative, h<RANK % -N>: the
# hosts interleave), through COHORT_HOSTID, so the hier backend sees several hosts on one machine.
#   as_hosts.sh N PROGRAM [ARGS...]      (cohortrun sets RANK)
n=$1
shift
if [ "$n" -lt 0 ]; then h=$(( RANK % -n )); else h=$(( RANK / n )); fi
COHORT_HOSTID="h$h" exec "$@"
