#!/bin/bash
# Rotating groups on an emulated cluster: topoar_comm_churn -m 8, CALLS calls per group.
name=$1; spec=$2; rounds=$3; shift 3; map=""; case "$spec" in *racks*) map="--map-by node";; esac
tc=/work/wt/24c/tests/cluster/topoar-cluster
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
C=/work/wt/24c/_build/tools/topoar_comm_churn
D=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in after before; do
  inst=/work/wt/24c/_install/lib/openmpi; [ $job = before ] && inst=/tmp/24c-before/_install/lib/openmpi
  out=$($tc run --name $name $map -- --mca mca_base_component_path "$D:$inst" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 $C "$@" 2>&1)
  dec=$(echo "$out" | grep -c "start decided")
  settled=$(echo "$out" | grep -c "from now on")
  echo "$r $job start-decided-setups=$dec contests-settled=$settled $(echo "$out" | awk '$1=="first"||$1=="second"||$1=="later"{printf "%s %s ", $1, $3}') $(echo "$out" | grep -c WRONG)wrong"
  [ $r = 1 ] && [ $job = after ] && echo "$out" | grep "start decided" | sed 's/.*small-message/small-message/' | sort | uniq -c | head -5
 done
done
