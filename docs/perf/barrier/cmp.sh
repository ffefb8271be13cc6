#!/bin/bash
# cmp.sh NAME ROUNDS SIZES -- UPARGS : osu_allreduce, jobs on off tuned han (JOBS; jobs.sh) interleaved
# env: ITERS (2000; 0: OSU's own iterations and warm-up), WARM (300), MAP (e.g. "--map-by node")
name=$1; rounds=$2; sizes=$3; shift 4
. "$(dirname "$0")/jobs.sh"
it=(-i ${ITERS:-2000} -x ${WARM:-300}); [ "${ITERS:-}" = 0 ] && it=()
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do
 for job in ${JOBS:-on off tuned han}; do
  comp_for $job
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- "${comp[@]}" $O -m $sizes "${it[@]}" -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
 done
done
