#!/bin/bash
# btv.sh NAME ROUNDS -- UPARGS: like btrun.sh, and the auto job's decision (verbose 20)
name=$1; rounds=$2; shift 3
. "$(dirname "$0")/jobs.sh"
for r in $(seq $rounds); do
 for job in ${JOBS:-on tuned}; do
  comp_for $job
  out=$(timeout 300 $tc run --name $name ${MAP:-} -- "${comp[@]}" --mca coll_topoar_verbose 20 /work/exp/bar/bt ${N:-3000} 2>&1)
  v=$(echo "$out" | grep "^barrier"); d=$(echo "$out" | grep -o "MPI_COMM_WORLD: MPI_Barrier timed.*" | head -1 | sed 's/.*best block): //')
  echo "$r $job $v ${d:+[$d]}"
 done
done
