#!/bin/bash
# scenarios.sh: the benchmark scenarios of docs/performance.md, one command
# each.  Not part of CI (15-25 minutes per scenario on the 2-core machine).
#
#   tests/bench/scenarios.sh SCENARIO [-r REPEATS] [-o DIR] [--sizes LO:HI]
#
#   s1     2 hosts (2 + 3 ranks), 200 Mbit/s host links
#   s2     2 racks (1+2 | 2+3 ranks), 1 Gbit/s hosts, 200 Mbit/s between
#          racks, --map-by node
#   s3     2 hosts (3 + 3 ranks), 200 Mbit/s
#   node4  one host, 4 ranks (no emulation)
#
# For each: brings the emulated cluster up (root), runs topoar_tune on it to
# write a rules file, then tests/bench/compare.py with auto (the cost-model
# table), auto with the tuner's rules file, every topoar algorithm forced,
# tuned and han, interleaved; brings the cluster down (also on error).
# Results: DIR (default docs/perf/SCENARIO): runs.csv, summary.csv,
# latency.png, tuned.rules, tune.log, commands.txt, logs/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
prefix=${PREFIX:-$src/_install}
cluster="$src/tests/cluster/topoar-cluster"
py=/usr/bin/python3  # has matplotlib

scenario=${1:-}
[ -n "$scenario" ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
shift
repeats=3 out="" sizes=8:32M
while [ $# -gt 0 ]; do
    case $1 in
        -r) repeats=${2:?}; shift 2 ;;
        -o) out=${2:?}; shift 2 ;;
        --sizes) sizes=${2:?}; shift 2 ;;
        *) echo "scenarios.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
out=${out:-$src/docs/perf/$scenario}
mkdir -p "$out"
rules="$out/tuned.rules"
[ -d "$prefix/lib/openmpi" ] || { echo "scenarios.sh: no topoar install under $prefix (./setup.sh build)" >&2; exit 1; }
path="$(ls -d /usr/lib/*/openmpi/lib/openmpi3 2>/dev/null | head -n1):$prefix/lib/openmpi"

topo_configs=topoar-auto,topoar-rules,topoar-rd,topoar-tree,topoar-flexreduce,topoar-hring
case $scenario in
    s1) spec=(--nodes 2,3 --node-rate 200mbit); map=() ;;
    s2) spec=(--racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit); map=(--map-by node) ;;
    s3) spec=(--nodes 3,3 --node-rate 200mbit); map=() ;;
    node4) spec=(); map=() ;;
    *) echo "scenarios.sh: unknown scenario '$scenario' (s1 s2 s3 node4)" >&2; exit 2 ;;
esac

tune_args=(-m "$sizes" -s 4 -i 200 -r 5 -o "$rules")
if [ "$scenario" = node4 ]; then
    # One host: auto hands the calls to tuned; topoar-model is topoar's own
    # table kept on (single_node_fallback 0).
    mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np 4 \
        --mca mca_base_component_path "$path" --mca coll topoar,tuned,libnbc,basic,self \
        "$prefix/bin/topoar_tune" "${tune_args[@]}" >"$out/tune.log" 2>&1
    extra=(--config "topoar-model={topoar} --mca coll_topoar_single_node_fallback 0"
           --config "topoar-rules={topoar} --mca coll_topoar_rules_file $rules")
    configs=topoar-auto,topoar-model,topoar-rules,topoar-rd,topoar-ring,topoar-tree,topoar-flexreduce,topoar-hring,tuned-default,tuned-ring,tuned-rabenseifner
    "$py" "$here/compare.py" --scenario node4 --np 4 -r "$repeats" --sizes "$sizes" -i 200 -x 20 -b 0.3 -I 3 \
        "${extra[@]}" --configs "$configs" -o "$out"
    exit 0
fi

name=bench$scenario
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT INT TERM
"$cluster" up --name "$name" "${spec[@]}"
"$cluster" run --name "$name" "${map[@]}" -- --mca mca_base_component_path "$path" \
    --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_rack_file @RACKFILE@ \
    "$prefix/bin/topoar_tune" "${tune_args[@]}" >"$out/tune.log" 2>&1
extra=(--config "topoar-rules={topoar} --mca coll_topoar_rules_file $rules")
"$py" "$here/compare.py" --scenario "$scenario" --cluster "$name" "${map[@]}" -r "$repeats" \
    --sizes "$sizes" -i 200 -x 20 -b 0.3 -I 3 "${extra[@]}" --configs "$topo_configs,tuned-default,han" -o "$out"
