#!/bin/bash
# Long jobs: OSU 2,000 calls after 300 warm-up, 8 B - 64 KiB, separate jobs, interleaved rounds.
name=$1; spec=$2; rounds=$3; map=""; case "$spec" in *racks*) map="--map-by node";; esac
tc=/work/wt/24c/tests/cluster/topoar-cluster
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
D=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in after before; do
  case $job in
    after) comp=(--mca mca_base_component_path "$D:/work/wt/24c/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    before) comp=(--mca mca_base_component_path "$D:/tmp/24c-before/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
  esac
  $tc run --name $name $map -- "${comp[@]}" $O -m 8:65536 -i 2000 -x 300 -T mpi_float 2>&1 | awk -v r=$r -v j=$job '$1 ~ /^[0-9]+$/ {print r, j, $1, $2}'
 done
done
