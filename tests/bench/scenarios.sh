#!/bin/bash
# scenarios.sh: the benchmark scenarios of docs/performance.md, one command
# each.  Not part of CI (tune + compare 15-30 minutes per scenario on the
# 2-core machine, osu 15-25 more).
#
#   tests/bench/scenarios.sh SCENARIO [-r REPEATS] [-o DIR] [--sizes LO:HI]
#                            [--parts tune,compare,osu]
#
#   s1     2 hosts (2 + 3 ranks), 200 Mbit/s host links
#   s2     2 racks (1+2 | 2+3 ranks), 1 Gbit/s hosts, 200 Mbit/s between
#          racks, --map-by node
#   s3     2 hosts (3 + 3 ranks), 200 Mbit/s
#   node4  one host, 4 ranks (no emulation)
#
# For each: brings the emulated cluster up (root), then the parts (default
# all three):
#   tune     topoar_tune writes a rules file (tuned.rules, tune.log)
#   compare  topoar_tune --compare, twice: auto (the cost-model table), then
#            auto with the tuner's rules file, each side by side with every
#            algorithm forced in one job, 7 interleaved rounds (21 up to 64 KiB)
#            (compare-model.log/.csv, compare-rules.log/.csv; node4 also
#            measures the module topoar hands its calls to, --previous,
#            and once more auto against it alone with 81/21 rounds:
#            compare-previous.log/.csv)
#   osu      tests/bench/compare.py: auto, auto with the rules, every topoar
#            algorithm forced, tuned and han, one job each, interleaved
#            (runs.csv, summary.csv, latency.png, commands.txt, logs/)
# and brings the cluster down (also on error).  Results in DIR (default
# docs/perf/SCENARIO).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
prefix=${PREFIX:-$src/_install}
cluster="$src/tests/cluster/topoar-cluster"
py=/usr/bin/python3  # has matplotlib

scenario=${1:-}
[ -n "$scenario" ] || { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
shift
repeats=3 out="" sizes=8:32M parts=tune,compare,osu
while [ $# -gt 0 ]; do
    case $1 in
        -r) repeats=${2:?}; shift 2 ;;
        -o) out=${2:?}; shift 2 ;;
        --sizes) sizes=${2:?}; shift 2 ;;
        --parts) parts=${2:?}; shift 2 ;;
        *) echo "scenarios.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
for p in ${parts//,/ }; do
    case $p in tune|compare|osu) ;; *) echo "scenarios.sh: unknown part '$p' (tune compare osu)" >&2; exit 2 ;; esac
done
has() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
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
if has compare && ! has tune && [ ! -f "$rules" ]; then
    echo "scenarios.sh: compare needs $rules (run the tune part first)" >&2; exit 1
fi

tune_args=(-m "$sizes" -s 2 -i 200 -r 5 -R 15 -o "$rules")
# The comparisons: the latency algorithm and the node-aware ones (the flat
# ring, never close on these machines, only on one host); 7 rounds, 21 up
# to 64 KiB (cheap there, and noisiest).
cmp_args=(--compare -m "$sizes" -s 2 -i 200 -r 7 -R 21)
topo_mca=(--mca mca_base_component_path "$path" --mca coll topoar,tuned,libnbc,basic,self)

if [ "$scenario" = node4 ]; then
    # One host: auto hands the calls to tuned; topoar-model is topoar's own
    # table kept on (single_node_fallback 0).
    launch() { mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np 4 "${topo_mca[@]}" "$@"; }
    cmp_args+=(--previous)
else
    name=bench$scenario
    trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT INT TERM
    "$cluster" up --name "$name" "${spec[@]}"
    launch() { "$cluster" run --name "$name" "${map[@]}" -- "${topo_mca[@]}" --mca coll_topoar_rack_file @RACKFILE@ "$@"; }
    cmp_args+=(--algorithms recursive_doubling,tree,flexreduce,hring)
fi

if has tune; then
    launch "$prefix/bin/topoar_tune" "${tune_args[@]}" >"$out/tune.log" 2>&1
fi
if has compare; then
    launch "$prefix/bin/topoar_tune" "${cmp_args[@]}" --csv "$out/compare-model.csv" >"$out/compare-model.log" 2>&1
    launch --mca coll_topoar_rules_file "$rules" "$prefix/bin/topoar_tune" "${cmp_args[@]}" \
        --csv "$out/compare-rules.csv" >"$out/compare-rules.log" 2>&1
    if [ "$scenario" = node4 ]; then
        # auto (handed down) against tuned itself: fewer entries, more
        # rounds, for the 5 % target on one host.
        launch "$prefix/bin/topoar_tune" --compare --previous --algorithms tree -m "$sizes" -s 2 -i 200 -r 21 -R 81 \
            --csv "$out/compare-previous.csv" >"$out/compare-previous.log" 2>&1
    fi
fi
has osu || exit 0

extra=(--config "topoar-rules={topoar} --mca coll_topoar_rules_file $rules")
if [ "$scenario" = node4 ]; then
    extra+=(--config "topoar-model={topoar} --mca coll_topoar_single_node_fallback 0")
    configs=topoar-auto,topoar-model,topoar-rules,topoar-rd,topoar-ring,topoar-tree,topoar-flexreduce,topoar-hring,tuned-default,tuned-ring,tuned-rabenseifner
    "$py" "$here/compare.py" --scenario node4 --np 4 -r "$repeats" --sizes "$sizes" -i 200 -x 20 -b 0.3 -I 3 \
        "${extra[@]}" --configs "$configs" -o "$out"
    exit 0
fi
"$py" "$here/compare.py" --scenario "$scenario" --cluster "$name" "${map[@]}" -r "$repeats" \
    --sizes "$sizes" -i 200 -x 20 -b 0.3 -I 3 "${extra[@]}" --configs "$topo_configs,tuned-default,han" -o "$out"
