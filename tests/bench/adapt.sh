#!/bin/bash
# adapt.sh: the online-adaptation benchmark of docs/performance.md.  Not CI
# (about 3 minutes).
#
#   tests/bench/adapt.sh [-o DIR] [-n CALLS] [--at SECONDS] [--rate RATE]
#
# On the racks scenario s2 (1+2 | 2+3 ranks, 1 Gbit/s hosts, 200 Mbit/s
# between the racks, --map-by node), no rack file (links measured at
# set-up):
#   1. adapting job: CALLS allreduces of 8 MiB; after SECONDS the link
#      between the racks is throttled from outside the job (tc change, both
#      directions) to RATE (default 50mbit);
#   2. the same job with coll_topoar_adapt 0 under the same throttling;
#   3. a job started on the degraded network.
# Each prints per-call times (tests/bench/adapt_loop.c); the summary gives
# the calls from the throttle to the re-plan and the medians of the last 15
# calls of each job.  Results in DIR (default docs/perf/adapt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
prefix=${PREFIX:-$src/_install}
cluster="$src/tests/cluster/topoar-cluster"
out="$src/docs/perf/adapt" calls=70 at=12 rate=50mbit
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=${2:?}; shift 2 ;;
        -n) calls=${2:?}; shift 2 ;;
        --at) at=${2:?}; shift 2 ;;
        --rate) rate=${2:?}; shift 2 ;;
        *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
mkdir -p "$out"
path="$(ls -d /usr/lib/*/openmpi/lib/openmpi3 2>/dev/null | head -n1):$prefix/lib/openmpi"
name=adapt$$; name=${name:0:12}
tmp=$(mktemp -d /tmp/topoar-adapt.XXXXXX)
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT INT TERM
mpicc -O2 -o "$tmp/adapt_loop" "$here/adapt_loop.c"
"$cluster" up --name "$name" --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit >/dev/null
shape() {  # the link between the two racks, both directions
    for dev in up0 up1; do
        ip netns exec "topoar-$name-fab" tc qdisc change dev "$dev" root tbf rate "$1" burst 131072 latency 100ms
    done
}
job() {  # job LOG [mpirun args...]
    local log=$1; shift
    "$cluster" run --name "$name" --map-by node -- --mca mca_base_component_path "$path" \
        --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 "$@" \
        "$tmp/adapt_loop" -n "$calls" -k 15 >"$log" 2>&1
}
for mode in adapt noadapt; do
    shape 200mbit
    extra=(); [ $mode = noadapt ] && extra=(--mca coll_topoar_adapt 0)
    ( sleep "$at"; shape "$rate"; date +%s.%N >"$tmp/throttled-$mode" ) &
    start=$(date +%s.%N)
    job "$out/$mode.log" "${extra[@]}"
    wait
    awk -v s="$start" '{print $1 - s}' "$tmp/throttled-$mode" >"$out/$mode.throttled_at"
done
job "$out/degraded.log"   # still at $rate
shape 200mbit

summary="$out/summary.txt"
{
    echo "racks s2, no rack file, 8 MiB float sum; link between the racks 200 Mbit/s -> $rate after ${at} s"
    for mode in adapt noadapt degraded; do
        printf '%-9s %s\n' "$mode" "$(grep -h '^median' "$out/$mode.log")"
    done
    # The call during which the re-plan happened: the notice is printed
    # inside that call, before its "call N" line.
    replan=$(awk '/online adaptation/ {hit=1} hit && /^call / {print $2; exit}' "$out/adapt.log")
    # The first call clearly slower (1.5x) than calls 1-10.
    first_slow=$(awk '/^call / { t[$2] = $4 } END {
        for (i = 1; i <= 10; i++) b += t[i]; b /= 10
        for (i = 11; i in t; i++) if (t[i] > 1.5 * b) { print i; exit } }' "$out/adapt.log")
    echo "first slow call: ${first_slow:-?}; re-plan at the end of call ${replan:-none}"
    if [ -n "$first_slow" ] && [ -n "$replan" ]; then
        echo "calls from the first slow one to the re-plan: $((replan - first_slow + 1))"
    fi
    a=$(grep -h '^median' "$out/adapt.log" | awk '{print $(NF-1)}')
    d=$(grep -h '^median' "$out/degraded.log" | awk '{print $(NF-1)}')
    awk -v a="$a" -v d="$d" 'BEGIN { printf "after adaptation / started degraded: %.3f\n", a / d }'
} | tee "$summary"
