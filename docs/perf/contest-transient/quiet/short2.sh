#!/bin/bash
# Short jobs: 50 calls of 8 B (float sum, OSU 7.4: 10 warm-up + 40 timed), separate jobs, interleaved rounds.
# usage: short2.sh "SPEC" ROUNDS [--map-by node]
spec=$1; rounds=$2; map=$3
tc=/work/main/tests/cluster/topoar-cluster; name=sj$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do
 for job in after before tuned tuned-ring han; do
  case $job in
    after) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    before) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/wt/base/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
    tuned-ring) comp=(--mca coll tuned,libnbc,basic,self --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4);;
  esac
  v=$($tc run --name $name $map -- "${comp[@]}" $O -m 8:8 -i 40 -x 10 -T mpi_float 2>&1 | awk '$1=="8"{print $2}')
  echo "$r $job $v"
 done
done
