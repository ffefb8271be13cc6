#!/bin/bash
# stop 51: OSU 7.4 with its own iterations and sizes (1 B-1 MiB), on / tuned / han,
# 2 rounds, on five clusters no bench had used (rates, hosts, ranks per host,
# buckets, queues, racks varied).  Usage: bash sweep.sh OUTDIR [names...]
cd /work/main
out=${1:?outdir}; shift; mkdir -p $out
one() { local name=$1; shift; [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]] && return
  JOBS="${JOBS:-on tuned han}" ITERS=0 timeout 2400 bash docs/perf/barrier/cmp.sh $name ${ROUNDS:-2} 1:1048576 -- "$@" > $out/$name.txt 2>&1
  echo "== $name $*"; python3 docs/perf/barrier/tab.py $out/$name.txt; }
one h13 --nodes 1,3 --node-rate 500mbit --queue-latency 5ms
TOPOAR_CLUSTER_BURST=32768 one h2112 --nodes 2,1,1,2 --node-rate 300mbit,1gbit,1gbit,300mbit
one h34 --nodes 3,4 --node-rate 2gbit
one r112 --racks "1,1;2" --node-rate 400mbit --rack-rate 100mbit
one h32u --nodes 3,2
