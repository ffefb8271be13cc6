#!/bin/bash
# longlarge.sh NAME ROUNDS SIZES ITERS -- UP-ARGS... : OSU osu_allreduce long jobs at large sizes (float, -i ITERS -x ITERS/10),
# auto (no file), tuned default, han; interleaved rounds; WARM=N sets -x; prints "round job size:us ...".
# JOBS: auto off han tuned alg:X nt:K v:N base (auto from the build installed at BASE).
name=$1; rounds=$2; sizes=$3; iters=$4; shift 5
tc=/work/main/tests/cluster/topoar-cluster
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
x=$(( iters / 10 )); [ $x -lt 2 ] && x=2; x=${WARM:-$x}
for r in $(seq $rounds); do
 for job in ${JOBS:-auto tuned han}; do
  case $job in
    auto) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${PREFIX:-/work/main/_install}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
    alg:*) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${PREFIX:-/work/main/_install}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm ${job#alg:});;
    base) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${BASE:?BASE=prefix of the build to compare}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10);;
    off) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${PREFIX:-/work/main/_install}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_model_check 0 --mca coll_topoar_verbose 10);;
    nt:*) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${PREFIX:-/work/main/_install}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm tree --mca coll_topoar_num_trees ${job#nt:});;
    v:*) comp=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:${PREFIX:-/work/main/_install}/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose ${job#v:});;
  esac
  timeout 900 $tc run --name $name $RUNARGS -- "${comp[@]}" $O -m $sizes -i $iters -x $x -T mpi_float > ${LOGDIR:-/tmp}/ll-$name-$r-${job//[:/]/_}.log 2>&1; v=$(awk '$1+0>=1024{printf "%s:%s ", $1, $2}' ${LOGDIR:-/tmp}/ll-$name-$r-${job//[:/]/_}.log)
  echo "$r $job $v"
 done
done
