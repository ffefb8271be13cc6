#!/bin/bash
# usage: 24m-tables.sh NAME ROUNDS OUTDIR [cluster up args...]: topoar_info base/new alternately
name=$1; rounds=$2; out=$3; shift 3
cd /work/wt/24m
mkdir -p "$out"
sys=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
tests/cluster/topoar-cluster up --name "$name" ${SPEC:---nodes 2,3} "$@" > "$out/up.log" 2>&1 || exit 1
trap 'tests/cluster/topoar-cluster down --name "$name" > /dev/null 2>&1' EXIT
for r in $(seq 1 $rounds); do
  for cfg in new base; do
    case $cfg in
      new) p=/work/wt/24m/_install ;;
      base) p=/tmp/24m-base/_install ;;
    esac
    TOPOAR_PROBE_DEBUG=1 tests/cluster/topoar-cluster run --name "$name" $RUNARGS -- -x TOPOAR_PROBE_DEBUG --mca mca_base_component_path "$sys:$p/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self $p/bin/topoar_info > "$out/$cfg.$r.txt" 2>&1
    echo "$cfg round $r rc=$?"
  done
done
