#!/bin/bash
# churnab.sh NP GROUP BYTES ROUNDS: interleaved jobs of base (/work/base/_install), new (/work/main/_install), tuned
np=$1; g=$2; m=$3; rounds=$4
extra=""; [ $np -gt 2 ] && extra="--oversubscribe --mca mpi_yield_when_idle 1" || extra="--bind-to core"
for r in $(seq $rounds); do for j in ${JOBS:-base new tuned}; do
 case $j in base) I=/work/base/_install; c="topoar,tuned,libnbc,basic,self";; new) I=/work/main/_install; c="topoar,tuned,libnbc,basic,self";; tuned) I=/work/main/_install; c="tuned,libnbc,basic,self";; esac
 echo "$r np=$np g=$g m=$m $j $(OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$I/lib/openmpi mpirun --allow-run-as-root -np $np $extra --mca coll $c $I/bin/topoar_comm_churn -g $g -m $m -n ${ITERS:-400} -c 2 2>&1 | grep -E "^(first|second|split)" | awk '{printf "%s %.2f ", $1, $3*1e6}')"
done; done
