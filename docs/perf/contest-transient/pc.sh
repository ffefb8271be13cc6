#!/bin/bash
name=$1; spec=$2; rounds=$3; map=""; case "$spec" in *racks*) map="--map-by node";; esac
tc=/work/wt/24c/tests/cluster/topoar-cluster
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
D=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in after before tuned tuned-ring han; do
  case $job in
    after) comp=(--mca mca_base_component_path "$D:/work/wt/24c/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    before) comp=(--mca mca_base_component_path "$D:/tmp/24c-before/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
    tuned-ring) comp=(--mca coll tuned,libnbc,basic,self --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4);;
  esac
  echo "$r $job $($tc run --name $name $map -- "${comp[@]}" /tmp/24c-meas/pc/percall 2>&1 | grep -E '^[0-9.]+ ' | tail -1)"
 done
done
