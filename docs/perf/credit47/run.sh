#!/bin/bash
# The send credit (stop 47): auto with it ("on", this tree's _install)
# against the build before it ("base", $BASE, default /tmp/topoar-base:
# 6076584), tuned and han; OSU 7.4 through docs/perf/barrier/cmp.sh.
# Writes OUT/NAME.txt per cluster; ONLY="name ..." runs some.
# Tables: python3 docs/perf/barrier/tab.py OUT/NAME.txt
set -u
out=${1:?usage: run.sh OUTDIR [ROUNDS]}; rounds=${2:-3}
mkdir -p "$out"
cmp=$(dirname "$0")/../barrier/cmp.sh
one() {  # one NAME ITERS WARM SIZES [BURST] -- UPARGS
  local name=$1 iters=$2 warm=$3 sizes=$4 burst=$5; shift 6
  [[ -n ${ONLY:-} && " $ONLY " != *" $name "* ]] && return
  TOPOAR_CLUSTER_BURST=$burst JOBS="on base tuned han" ITERS=$iters WARM=$warm \
    bash "$cmp" "$name" "$rounds" "$sizes" -- "$@" > "$out/$name.txt" 2>&1
}
# Shallow queues: tbf holds 1 ms of traffic past its bucket.
one q23   20 3 65536:16777216 65536 -- --nodes 2,3 --node-rate 1gbit --queue-latency 1ms
one q221  20 3 65536:16777216 ""    -- --nodes 2,2,1 --node-rate 1gbit --queue-latency 1ms
one q13r  20 3 65536:16777216 65536 -- --racks "1,2;2,1" --node-rate 1gbit --rack-rate 500mbit --queue-latency 2ms
# The project's deep queues (100 ms), shaped and unshaped.
one s1    20 3 65536:16777216 ""    -- --nodes 2,3 --node-rate 200mbit
one u22  100 10 65536:8388608 ""    -- --nodes 2,2
one u41  100 10 65536:8388608 ""    -- --nodes 4,1
