#!/bin/bash
# ab.sh NAME SIZES ITERS ROUNDS JOB... ; JOB = build:alg[:extra mca args]; build = cur|base|tuned|han
name=$1; sizes=$2; iters=$3; rounds=$4; shift 4
T=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do for job in "$@"; do
  b=${job%%:*}; rest=${job#*:}; alg=${rest%%:*}; extra=""; [[ $rest == *:* ]] && extra=${rest#*:}
  case $b in
    han) c=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) c=(--mca coll tuned,libnbc,basic,self);;
    cur) c=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $alg);;
    base) c=(--mca mca_base_component_path "$P:${BASE:-/tmp/topoar-base}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $alg);;
    alt) c=(--mca mca_base_component_path "$P:${ALT:-/tmp/topoar-c4}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $alg);;
  esac
  read -r -a xa <<<"$extra"; c+=("${xa[@]}")
  v=$(timeout 600 $T run --name $name -- "${c[@]}" $O -m $sizes -i $iters -x 3 -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
done; done
