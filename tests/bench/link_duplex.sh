#!/bin/bash
# link_duplex.sh RATE BUCKET MIB -- what one emulated host link carries for TCP, without MPI (issue 22, item 1).
# Two hosts of tests/cluster/topoar-cluster (one rank slot each) with tbf at RATE and a token bucket of
# BUCKET bytes ("default": the tool's 5 ms of traffic); prints the rate of one TCP stream one way, then of
# one stream each way at once (an all-reduce between two hosts moves its message each way at once).
# Root; the cluster is brought down on exit.  Example: tests/bench/link_duplex.sh 1gbit 65536 64
set -eu
rate=${1:?RATE}; bucket=${2:?BUCKET}; mib=${3:?MIB}
here=$(cd "$(dirname "$0")" && pwd)
tc=$here/../cluster/topoar-cluster
name=duplex
if [ "$bucket" != default ]; then export TOPOAR_CLUSTER_BURST=$bucket; fi
"$tc" up --name $name --nodes 1,1 --node-rate "$rate" >/dev/null
trap '"$tc" down --name $name >/dev/null 2>&1' EXIT
a=topoar-$name-r0-n0; b=topoar-$name-r0-n1
ipa=$(ip netns exec $a ip -4 -o addr show eth0 | awk '{sub("/.*","",$4); print $4}')
ipb=$(ip netns exec $b ip -4 -o addr show eth0 | awk '{sub("/.*","",$4); print $4}')
out=$(mktemp -d); trap 'rm -rf "$out"; "$tc" down --name $name >/dev/null 2>&1' EXIT
ip netns exec $b python3 "$here/tcp_stream.py" server 5001 > "$out/one" & sleep 0.3
ip netns exec $a python3 "$here/tcp_stream.py" client "$ipb" 5001 "$mib"; wait
ip netns exec $b python3 "$here/tcp_stream.py" server 5002 > "$out/ab" &
ip netns exec $a python3 "$here/tcp_stream.py" server 5003 > "$out/ba" & sleep 0.3
ip netns exec $a python3 "$here/tcp_stream.py" client "$ipb" 5002 "$mib" &
ip netns exec $b python3 "$here/tcp_stream.py" client "$ipa" 5003 "$mib" &
wait
r() { awk '{print $(NF-1)}' "$1"; }
echo "rate $rate, bucket $bucket, $mib MiB: one way $(r "$out/one") Mbit/s; each way at once $(r "$out/ab") + $(r "$out/ba") Mbit/s"
