#!/bin/bash
# Tried, not adopted (stop 49): the model check from 128 KiB, and the
# previous module's turn where the network looks flat.  The tried build
# (job on: it was this tree's _install then; its code is not on main)
# against the build before it ($ALT, 87ed97d), tuned and han; separate
# jobs interleaved per round,
# OSU 7.4 osu_allreduce float, 128 KiB-4 MiB.
#   ALT=/tmp/topoar-w49old ab.sh OUTDIR
# long: 200 calls after 20 (60 after 10 on the slow clusters); short: 10
# calls after 3 (13-call jobs).  Tables: docs/perf/barrier/tab.py FILE.
out=${1:?outdir}; mkdir -p "$out"
cd "$(dirname "$0")/../../.." || exit 1
cmp=docs/perf/barrier/cmp.sh
S=131072:4194304
run() { local f=$1 it=$2 wa=$3 r=$4 jobs=$5; shift 5
        JOBS="$jobs" ITERS=$it WARM=$wa timeout 3000 bash $cmp "$f" "$r" $S -- "$@" > "$out/$f.txt" 2>&1; }
run u22 200 20 3 "on alt tuned han" --nodes 2,2
run u23 200 20 3 "on alt tuned han" --nodes 2,3
run u41 200 20 3 "on alt tuned han" --nodes 4,1
run s1 60 10 3 "on alt tuned han" --nodes 2,3 --node-rate 200mbit
MAP="--map-by node" run s2 60 10 3 "on alt tuned han" --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
run s1short 10 3 4 "on alt" --nodes 2,3 --node-rate 200mbit
MAP="--map-by node" run s2short 10 3 4 "on alt" --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
run u23short 10 3 4 "on alt tuned" --nodes 2,3
echo all done > "$out/done"
