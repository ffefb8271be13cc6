#!/bin/bash
# usage: 24m-osu.sh NAME ROUNDS OUTDIR [cluster up args...]
name=$1; rounds=$2; out=$3; shift 3
cd /work/wt/24m
mkdir -p "$out"
osu=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
tests/cluster/topoar-cluster up --name "$name" --nodes 2,3 "$@" > "$out/up.log" 2>&1 || exit 1
trap 'tests/cluster/topoar-cluster down --name "$name" > /dev/null 2>&1' EXIT
for r in $(seq 1 $rounds); do
  for cfg in new base tuned han; do
    case $cfg in
      new) mca=(--mca mca_base_component_path "$sys:/work/wt/24m/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self) ;;
      base) mca=(--mca mca_base_component_path "$sys:/tmp/24m-base/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self) ;;
      tuned) mca=(--mca coll tuned,libnbc,basic,self) ;;
      han) mca=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100) ;;
    esac
    tests/cluster/topoar-cluster run --name "$name" -- "${mca[@]}" $osu -m 8:65536 -i 2000 -x 300 > "$out/$cfg.$r.txt" 2>&1
    echo "$cfg round $r rc=$?"
  done
done
