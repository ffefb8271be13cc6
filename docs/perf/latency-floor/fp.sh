#!/bin/bash
# fp.sh NP ROUNDS : one host, 8 B osu_allreduce, tuned vs topoar before (a9400db) vs after (main), interleaved
np=$1; rounds=$2
OSU=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
base="mpirun --allow-run-as-root -np $np"
if [ $np -le 2 ]; then base="$base --bind-to core"; else base="$base --oversubscribe --bind-to none --mca mpi_yield_when_idle 1"; fi
for r in $(seq 1 $rounds); do
  for c in tuned before after; do
    case $c in
      tuned) a="--mca coll tuned,libnbc,basic,self";;
      before) a="--mca mca_base_component_path $sys:/work/wt/base/_install/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0";;
      after) a="--mca mca_base_component_path $sys:/work/main/_install/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0";;
    esac
    v=$($base $a $OSU -m 8:8 -i 20000 -x 2000 2>/dev/null | awk '$1==8{print $2}')
    echo "np=$np round=$r $c $v"
  done
done
