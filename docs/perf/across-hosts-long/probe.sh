#!/bin/bash
# probe.sh "SPEC" ROUNDS "MAP" "MIN:MAX" CONFIG...: interleaved OSU jobs (2000 calls after 300 warm-up, MPI_FLOAT) in
# one cluster session; CONFIG as in bytes.sh (+ before = /work/main/_install); OSUX=-z50 adds the median call.
# The +rb suffix set TOPOAR_XCHG=r for a temporary build (not committed).
# probe.sh "SPEC" ROUNDS "MAP" "MRANGE" CONFIG... : interleaved OSU jobs on one cluster session.
# CONFIG: after | before | tuned | han | after:ALG (forced coll_topoar_allreduce_algorithm) | afterv (verbose 10)
spec=$1; rounds=$2; map=$3; mr=$4; shift 4
top=$(cd "$(dirname "$0")/../../.." && pwd)
tc=$top/tests/cluster/topoar-cluster; name=h24l$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in "$@"; do
  extra=()
  case $job in
    after*) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    before*) comp=(--mca mca_base_component_path "$P:/work/main/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    hantb) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100 --mca coll_han_barrier_dynamic_global_communicator_module 3);;
    ohan*) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,han,tuned,libnbc,basic,self --mca coll_han_priority 40);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  case $job in *:*) a=${job#*:}; extra=(--mca coll_topoar_allreduce_algorithm ${a%%+*});; esac
  case $job in *+rb*) extra+=(-x TOPOAR_XCHG=r);; esac
  case $job in *v) extra+=(--mca coll_topoar_verbose 10);; esac
  if [[ $job == *v ]]; then
    $tc run --name $name $map -- "${comp[@]}" "${extra[@]}" $O -m $mr -i 2000 -x 300 -T mpi_float $OSUX > /tmp/probe-verbose-$job-$r.txt 2>&1
    v=$(awk '$1+0>=4 && NF==2{printf "%s:%s ", $1, $2}' /tmp/probe-verbose-$job-$r.txt)
  else
    v=$($tc run --name $name $map -- "${comp[@]}" "${extra[@]}" $O -m $mr -i 2000 -x 300 -T mpi_float $OSUX 2>&1 | awk '$1+0>=4{printf "%s:%s/%s ", $1, $2, $NF}')
  fi
  echo "$r $job $v"
 done
done
