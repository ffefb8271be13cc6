#!/bin/bash
# ab.sh ROUNDS "label=prefix ..." [extra mca for topoar]: one host np2 8 B, tuned + each topoar build, interleaved
rounds=$1; builds=$2; extra=$3
OSU=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
base="mpirun --allow-run-as-root -np 2 --bind-to core"
for r in $(seq 1 $rounds); do
  v=$($base --mca coll tuned,libnbc,basic,self $OSU -m 8:8 -i 20000 -x 2000 2>/dev/null | awk '$1==8{print $2}'); echo "$r tuned $v"
  for b in $builds; do l=${b%%=*}; p=${b#*=}
    v=$($base --mca mca_base_component_path $sys:$p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0 $extra $OSU -m 8:8 -i 20000 -x 2000 2>/dev/null | awk '$1==8{print $2}'); echo "$r $l $v"
  done
done
