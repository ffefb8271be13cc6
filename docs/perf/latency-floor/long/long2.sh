#!/bin/bash
# long2.sh "SPEC" ROUNDS [--map-by node]: OSU 8 B-64 KiB, 2000 calls after 300 warm-up; after (main) auto, tuned, han.
spec=$1; rounds=$2; map=$3
tc=/work/main/tests/cluster/topoar-cluster; name=lj$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do
 for job in after tuned han; do
  case $job in
    after) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  v=$($tc run --name $name $map -- "${comp[@]}" $O -m 8:65536 -i 2000 -x 300 -T mpi_float 2>&1 | awk '$1+0>=4{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
 done
done
