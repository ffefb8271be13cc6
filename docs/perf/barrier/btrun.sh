#!/bin/bash
# btrun.sh NAME ROUNDS -- UPARGS: MPI_Barrier latency (bt.c built as /work/exp/bar/bt), jobs on off tuned han
name=$1; rounds=$2; shift 3
. "$(dirname "$0")/jobs.sh"
for r in $(seq $rounds); do
 for job in ${JOBS:-on off tuned han}; do
  comp_for $job
  v=$(timeout 300 $tc run --name $name ${MAP:-} -- "${comp[@]}" /work/exp/bar/bt ${N:-3000} 2>&1 | grep "^barrier")
  echo "$r $job $v"
 done
done
