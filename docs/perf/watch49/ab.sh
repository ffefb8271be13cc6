#!/bin/bash
# The contest's winner watched (coll_topoar_trial_watch), stop 49: this
# build with the watch (on) and without it (x1), tuned and han, interleaved
# separate jobs per round, OSU 7.4 osu_allreduce float.
#   ab.sh OUTDIR  -- every cluster below, one after the other
# g* clusters: OSU's own iterations (as the stop-48 sweep); s1-s3: 2,000
# calls after 300 (issue 24's measure).  Tables: docs/perf/barrier/tab.py FILE.
out=${1:?outdir}; mkdir -p "$out"
cd "$(dirname "$0")/../../.." || exit 1
cmp=docs/perf/barrier/cmp.sh
export XARGS1="--mca coll_topoar_trial_watch 0"
g() { local n=$1; shift; JOBS="on x1 tuned han" ITERS=0 timeout 2400 bash $cmp $n 3 8:65536 -- "$@" > "$out/$n.txt" 2>&1; }
s() { local n=$1; shift; JOBS="on x1 tuned han" timeout 2400 bash $cmp $n 3 8:65536 -- "$@" > "$out/$n.txt" 2>&1; }
g g222 --nodes 2,2,2 --node-rate 1gbit
g g111s --nodes 1,1,1 --node-rate 200mbit
s s1 --nodes 2,3 --node-rate 200mbit
s s3 --nodes 3,3 --node-rate 200mbit
MAP="--map-by node" s s2 --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
g u22 --nodes 2,2
echo all done > "$out/done"
