#!/bin/bash
rounds=$1; builds=$2; extra=$3
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
base="mpirun --allow-run-as-root -np 2 --bind-to core"
for r in $(seq 1 $rounds); do
  echo "$r tuned $($base --mca coll tuned,libnbc,basic,self ./lat 2>/dev/null)"
  for b in $builds; do l=${b%%=*}; p=${b#*=}
    echo "$r $l $($base --mca mca_base_component_path $sys:$p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0 $extra ./lat 2>/dev/null)"
  done
done
