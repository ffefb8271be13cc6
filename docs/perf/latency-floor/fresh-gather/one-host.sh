#!/bin/bash
# BEFORE_INSTALL=... AFTER_INSTALL=... one-host.sh NP GROUP BYTES ROUNDS: main (BEFORE) / lead (AFTER) / tuned, interleaved separate jobs
# one host, topoar_comm_churn np NP groups G at M bytes: main (base) / lead / tuned, interleaved
np=$1; g=$2; m=$3; rounds=$4
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
base="mpirun --allow-run-as-root -np $np"
if [ $np -le 2 ]; then base="$base --bind-to core"; else base="$base --oversubscribe --bind-to none --mca mpi_yield_when_idle 1"; fi
B=${AFTER_INSTALL:?}/bin/topoar_comm_churn
for r in $(seq $rounds); do for job in main lead tuned; do
  case $job in
    main) a="--mca mca_base_component_path $sys:${BEFORE_INSTALL:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self";;
    lead) a="--mca mca_base_component_path $sys:${AFTER_INSTALL:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self";;
    tuned) a="--mca coll tuned,libnbc,basic,self";;
  esac
  out=$(timeout 120 $base $a $B -g $g -m $m -n 200 -c 4 2>&1)
  echo "$r g=$g m=$m $job $(echo "$out" | awk '$1=="first"||$1=="second"||$1=="later"||$1=="split"{printf "%s=%.2f ", $1, $3*1e6}') $(echo "$out" | grep -c WRONG)"
done; done
