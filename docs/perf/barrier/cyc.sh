#!/bin/bash
# cyc.sh NAME ROUNDS LO HI -- UPARGS: cycle.c (OSU's number and the whole iteration) on/off/tuned/han
name=$1; rounds=$2; lo=$3; hi=$4; shift 5
top=/work/main; tc=$top/tests/cluster/topoar-cluster
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in ${JOBS:-on off tuned han}; do
  case $job in
    on) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    off) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_barrier 0);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- "${comp[@]}" /work/exp/bar/cycle $lo $hi 2>&1 | awk '$1+0>=1 && NF==3{printf "%s:%s/%s ", $1, $2, $3}')
  echo "$r $job $v"
 done
done
