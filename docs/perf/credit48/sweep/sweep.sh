#!/bin/bash
# acceptance-like: OSU defaults (sizes to 1 MiB, OSU's iterations), on/tuned/han, 2 rounds, per cluster
cd /work/main
out=/tmp/s48/sweep2; mkdir -p $out
one() { local name=$1; shift; JOBS="on tuned han" ITERS=0 timeout 1500 bash docs/perf/barrier/cmp.sh $name 2 1:1048576 -- "$@" > $out/$name.txt 2>&1; echo "== $name $*"; python3 docs/perf/barrier/tab.py $out/$name.txt | awk -F'|' 'NR>2 && $(NF-1)+0 > 1.10 {print}'; }
one g222 --nodes 2,2,2 --node-rate 1gbit
one g111s --nodes 1,1,1 --node-rate 200mbit
one g31 --nodes 3,1 --node-rate 1gbit,100mbit
one g22r --racks "2;2" --node-rate 1gbit --rack-rate 200mbit
