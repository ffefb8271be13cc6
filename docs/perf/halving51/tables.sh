#!/bin/bash
# print auto's discovered table on a cluster (one verbose job)
cd /work/main; tc=tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
name=$1; map=$2; shift 2
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
for k in 1 2; do
timeout 300 $tc run --name $name $map -- --mca mca_base_component_path "$P:$PWD/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 --mca coll_topoar_trial_calls 0 $O -m 8:8 -i 5 -x 1 2>&1 | grep "^allreduce  size" | awk '{printf "%s %s | ", $2, $NF}' | sed 's/alg=//g'; echo
done
$tc down --name $name >/dev/null 2>&1
