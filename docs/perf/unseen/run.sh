#!/bin/bash
# run.sh OUTDIR ROUNDS: osu_allreduce on emulated clusters the benches of
# docs/performance.md do not use (shapes, rates, token buckets), topoar
# auto with no file against tuned and han, separate jobs interleaved per
# round (docs/perf/barrier/cmp.sh).  One line per job: "round job size:us ...".
out=${1:?outdir}; rounds=${2:-3}
mkdir -p "$out"
. "$(dirname "$0")/one.sh"
# four one-rank hosts, 1 Gbit/s, 1 ms bucket (125 KB)
one 1x4-1g-1ms 125000 small -- --nodes 1,1,1,1 --node-rate 1gbit
one 1x4-1g-1ms 125000 large -- --nodes 1,1,1,1 --node-rate 1gbit
# even: two hosts of two ranks, 200 Mbit/s, the tool's bucket
one 2+2-200m "" small -- --nodes 2,2 --node-rate 200mbit
one 2+2-200m "" large -- --nodes 2,2 --node-rate 200mbit
# uneven ranks, 1 Gbit/s, 64 KiB bucket
one 1+3-1g-64k 65536 small -- --nodes 1,3 --node-rate 1gbit
one 1+3-1g-64k 65536 large -- --nodes 1,3 --node-rate 1gbit
