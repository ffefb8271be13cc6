#!/bin/bash
# cmp.sh NAME ROUNDS SIZES -- UPARGS : on, off (coll_topoar_barrier 0), tuned, han interleaved
name=$1; rounds=$2; sizes=$3; shift 4
top=/work/main; tc=$top/tests/cluster/topoar-cluster
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in ${JOBS:-on off tuned han}; do
  case $job in
    on) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    off) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_barrier 0);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
    ring) comp=(--mca coll tuned,libnbc,basic,self --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4);;
  esac
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- "${comp[@]}" $O -m $sizes -i ${ITERS:-2000} -x ${WARM:-300} -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
 done
done
