#!/bin/bash
# usage: 24m-diag.sh NAME OUTDIR [up args]: verbose OSU of new and base (what the contest chose)
name=$1; out=$2; shift 2
cd /work/wt/24m; mkdir -p "$out"
osu=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
tests/cluster/topoar-cluster up --name "$name" --nodes 2,3 "$@" > "$out/up.log" 2>&1 || exit 1
trap 'tests/cluster/topoar-cluster down --name "$name" > /dev/null 2>&1' EXIT
for r in $(seq 1 ${ROUNDS:-2}); do for cfg in new base; do
  case $cfg in new) p=/work/wt/24m/_install ;; base) p=/tmp/24m-base/_install ;; esac
  tests/cluster/topoar-cluster run --name "$name" -- --mca mca_base_component_path "$sys:$p/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 $osu -m 8:65536 -i 2000 -x 300 > "$out/$cfg.$r.txt" 2>&1
  echo "$cfg $r rc=$?"
done; done
