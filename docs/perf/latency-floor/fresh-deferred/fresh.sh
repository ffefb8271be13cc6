#!/bin/bash
# fresh.sh "SPEC" ROUNDS "GROUPS" "SIZES" [extra --mca for "lead"...]: tools/topoar_comm_churn (-n 20 -c 4) on
# an emulated cluster (--map-by node; ITERS=N for -n N), separate jobs interleaved per round: main (BEFORE_INSTALL: the build
# before the deferred set-up, 94f906c), lead (AFTER_INSTALL: with it), tuned, han.  JOBS="..." picks some.
# Set BEFORE_INSTALL / AFTER_INSTALL to two ./setup.sh build installs; run from the repository root as root.
# Each output line: round, group, bytes, job, then the medians over the iterations (us) of the first call,
# the second, the mean of the later ones, and the split; last, the count of WRONG results (0).
spec=$1; rounds=$2; groups=$3; sizes=$4; shift 4
BEFORE_INSTALL=${BEFORE_INSTALL:?}; AFTER_INSTALL=${AFTER_INSTALL:?}
tc=tests/cluster/topoar-cluster; name=lf$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
B=$AFTER_INSTALL/bin/topoar_comm_churn
for r in $(seq $rounds); do for g in $groups; do for m in $sizes; do
 for job in ${JOBS:-main lead tuned han}; do
  case $job in
   main) c=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$BEFORE_INSTALL/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
   lead) c=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$AFTER_INSTALL/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self "$@");;
   tuned) c=(--mca coll tuned,libnbc,basic,self);;
   han) c=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
  esac
  out=$(timeout 300 $tc run --name $name --map-by node -- "${c[@]}" $B -g $g -m $m -n ${ITERS:-20} -c 4 2>&1)
  echo "$r g=$g m=$m $job $(echo "$out" | awk '$1=="first"||$1=="second"||$1=="later"||$1=="split"{printf "%s=%.1f ", $1, $3*1e6}') $(echo "$out" | grep -c WRONG)"
 done; done; done; done
