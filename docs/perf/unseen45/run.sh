#!/bin/bash
# run.sh OUTDIR ROUNDS: osu_allreduce on emulated clusters no earlier bench
# used (stop 45), topoar auto with no file against tuned and han, separate
# jobs interleaved per round (docs/perf/barrier/cmp.sh).  Small part: 8 B-64
# KiB, 1,000 calls after 100; large part: 128 KiB-4 MiB, 20 calls after 3.
out=${1:?outdir}; rounds=${2:-3}
mkdir -p "$out"
. "$(dirname "$0")/../unseen/one.sh"
for part in ${PARTS:-small large}; do
# even, three hosts of two ranks, 500 Mbit/s, 1 ms bucket (62.5 KB)
one 2+2+2-500m-1ms 62500 $part -- --nodes 2,2,2 --node-rate 500mbit
# two one-rank hosts, 100 Mbit/s, the tool's bucket
one 1+1-100m "" $part -- --nodes 1,1 --node-rate 100mbit
# uneven ranks and rates, four hosts, 1 ms bucket at the slower rate
one 2+1+2+1-1g300m-1ms 37500 $part -- --nodes 2,1,2,1 --node-rate 1000mbit,300mbit,1000mbit,300mbit
# uneven ranks, two hosts, unshaped veth
one 4+1-unshaped "" $part -- --nodes 4,1
done
