#!/bin/bash
name=$1; spec=$2; rounds=$3; size=$4; map=""; case "$spec" in *racks*) map="--map-by node";; esac
tc=/work/wt/24c/tests/cluster/topoar-cluster
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
D=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do for job in after before; do
  inst=/work/wt/24c/_install/lib/openmpi; [ $job = before ] && inst=/tmp/24c-before/_install/lib/openmpi
  out=$($tc run --name $name $map -- --mca mca_base_component_path "$D:$inst" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 $O -m $size:$size -i 2000 -x 300 -T mpi_float 2>&1)
  echo "$r $job | $(echo "$out" | grep -o "allreduce of [0-9.]*[KM]*i*B*-[0-9.]*[KM]*i*B*: .*" | grep -v "^allreduce of 8-16\|^allreduce of 4-8" | sed 's/measured per call//' | cut -c1-260) | $(echo "$out" | awk -v s=$size '$1==s{print $2}')"
done; done
