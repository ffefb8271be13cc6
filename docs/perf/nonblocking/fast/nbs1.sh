#!/bin/bash
# nbs1.sh ROUNDS: s1 (2+3 ranks, 200 Mbit/s, --map-by node), osu_iallreduce -m 8:16384 -i 500 -x 50, libnbc/main/lead
rounds=$1; tc=/work/lead/tests/cluster/topoar-cluster; name=nbs1$$
OSUI=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_iallreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
$tc up --name $name --nodes 2,3 --node-rate 200mbit >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
for r in $(seq $rounds); do
 for c in "libnbc:--mca coll tuned,libnbc,basic,self" "main:--mca mca_base_component_path $sys:${MAIN:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self" "lead:--mca mca_base_component_path $sys:${LEAD:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self"; do
  l=${c%%:*}; a=${c#*:}
  timeout 300 $tc run --name $name --map-by node -- $a $OSUI -m 8:16384 -i 500 -x 50 2>/dev/null | awk -v r=$r -v l=$l '$1+0>0{print r, l, $1, $2, $3, $4, $5}'
 done
done
