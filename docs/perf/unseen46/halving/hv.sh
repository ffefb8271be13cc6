#!/bin/bash
# hv.sh NAME ROUNDS SIZES -- UPARGS: main's auto (on), the prototype's halving forced (hv), tuned.
# The prototype is built first, beside main: git worktree add /tmp/rh proto/halving && (cd /tmp/rh && ./setup.sh build)
# HVARGS: extra settings for hv (the whole-transfer runs: --mca coll_topoar_segment_size 0
# --mca coll_topoar_pipeline_size 0 --mca coll_topoar_flight_size 0 --mca coll_topoar_unit_time 0)
name=$1; rounds=$2; sizes=$3; shift 4
tc=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
for r in $(seq $rounds); do for job in on hv tuned; do
  case $job in
   on) comp=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
   hv) comp=(--mca mca_base_component_path "$P:/tmp/rh/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm halving ${HVARGS:-});;
   tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- "${comp[@]}" $O -m $sizes -i ${ITERS:-100} -x ${WARM:-10} -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
done; done
