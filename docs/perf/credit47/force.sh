#!/bin/bash
# force.sh NAME SIZES ITERS JOB... : one OSU job each, with the packets the cluster dropped during it
# Drops: every qdisc of the cluster NAME (already up) summed before and after each job.
# JOB: han, tuned, auto, or a topoar algorithm, with ":MPIRUN-ARGS" after it for more settings.
name=$1; sizes=$2; iters=$3; shift 3
T=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
cnt() { local s=0; for ns in $(ip netns list | awk '{print $1}' | grep "^topoar-$name-"); do
  d=$(tc -n $ns -s qdisc show | grep -o "dropped [0-9]*" | awk '{s+=$2} END{print s+0}'); s=$((s + d)); done; echo $s; }
for job in "$@"; do
  case $job in
    han) c=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) c=(--mca coll tuned,libnbc,basic,self);;
    auto) c=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    *) c=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm ${job%%:*});
       [[ $job == *:* ]] && { read -r -a xa <<<"${job#*:}"; c+=("${xa[@]}"); };;
  esac
  d0=$(cnt)
  v=$(timeout 600 $T run --name $name -- "${c[@]}" $O -m $sizes -i $iters -x 3 -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  d1=$(cnt)
  echo "$job drops=$((d1-d0)) $v"
done
