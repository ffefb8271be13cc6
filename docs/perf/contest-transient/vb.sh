#!/bin/bash
name=$1; spec=$2; rounds=$3; map=""; case "$spec" in *racks*) map="--map-by node";; esac
tc=/work/wt/24c/tests/cluster/topoar-cluster
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
D=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do for job in after before; do
  inst=/work/wt/24c/_install/lib/openmpi; [ $job = before ] && inst=/tmp/24c-before/_install/lib/openmpi
  out=$($tc run --name $name $map -- --mca mca_base_component_path "$D:$inst" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 /tmp/24c-meas/pc/percall 2>&1)
  echo "$r $job | $(echo "$out" | grep -o 'allreduce of 8-16: .*' | sed 's/allreduce of 8-16: measured per call//') | $(echo "$out" | grep -E '^[0-9.]+ ' | awk '{s=0; for(i=11;i<=50;i++) s+=$i; printf "avg10-49 %.0f us, last10 %s %s %s", s/40, int($46), int($48), int($50)}')"
done; done
