#!/bin/bash
# nbab.sh ROUNDS: one host np 2 --bind-to core, OSU 7.4 osu_iallreduce -m 8:65536 -i 5000 -x 500, tuned (libnbc) /
# main / lead interleaved; lines: round job size overall compute comm overlap
rounds=$1
OSUI=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_iallreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for c in "libnbc:--mca coll tuned,libnbc,basic,self" "main:--mca mca_base_component_path $sys:${MAIN:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self" "lead:--mca mca_base_component_path $sys:${LEAD:?}/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self"; do
  l=${c%%:*}; a=${c#*:}
  mpirun --allow-run-as-root -np 2 --bind-to core $a $OSUI -m 8:65536 -i 5000 -x 500 2>/dev/null | awk -v r=$r -v l=$l '$1+0>0{print r, l, $1, $2, $3, $4, $5}'
 done
done
