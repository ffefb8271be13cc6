#!/bin/bash
# run.sh SIZE ITERS -- UPARGS : OSU's loop (allreduce timed, then a
# barrier) with each rank's mean allreduce and barrier time, jobs on, han
# and tuned (JOBS; ../barrier/jobs.sh) in 2 rounds.  Build per_rank first:
#   mpicc -O2 -o /tmp/per_rank docs/perf/osu-accounting/per_rank.c
# s1: bash docs/perf/osu-accounting/run.sh 65536 1000 -- --nodes 2,3 --node-rate 200mbit
size=${1:-65536}; iters=${2:-1000}; shift 3
name=accp
. "$(dirname "$0")/../barrier/jobs.sh"
for r in 1 2; do for job in ${JOBS:-on han tuned}; do comp_for $job
  echo "== $r $job"
  timeout 300 $tc run --name $name ${MAP:-} -- "${comp[@]}" ${PER_RANK:-/tmp/per_rank} $size $iters 2>&1 | grep '^rank'
done; done
