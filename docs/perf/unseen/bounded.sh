#!/bin/bash
# bounded.sh OUTDIR ROUNDS [large13]: the flight-bound table rule (stop 42) against the
# build before it (job base, $BASE) and han, 128 KiB-4 MiB, on the network
# that showed the miss (1 + 3 ranks, 1 Gbit/s, 64 KiB bucket), the same with
# the tool's 5 ms bucket, and s1-s3.
out=${1:?outdir}; rounds=${2:-3}
mkdir -p "$out"
cmp=$(dirname "$0")/../barrier/cmp.sh
export JOBS=${JOBS:-"on base han"} ITERS=${ITERS:-20} WARM=${WARM:-3}
run() { local tag=$1 burst=$2; shift 3; echo "== $tag $(date +%T)" >&2
  TOPOAR_CLUSTER_BURST=$burst bash "$cmp" "$(echo b$tag | tr -cd a-z0-9 | cut -c1-16)" "$rounds" ${SIZES:-131072:4194304} -- "$@" > "$out/$tag.txt"; }
if [ "${3:-}" = large13 ]; then
  run 13-1g-64k-large 65536 -- --nodes 1,3 --node-rate 1gbit
  run 13-1g-5ms-large "" -- --nodes 1,3 --node-rate 1gbit
  exit 0
fi
run 13-1g-64k 65536 -- --nodes 1,3 --node-rate 1gbit
run 13-1g-5ms "" -- --nodes 1,3 --node-rate 1gbit
MAP="--map-by node" run s2 "" -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
run s1 "" -- --nodes 2,3 --node-rate 200mbit
run s3 "" -- --nodes 3,3 --node-rate 200mbit
# Larger calls on 1+3 (SIZES=16777216:67108864 ITERS=2 WARM=1 JOBS="on base han tuned"):
#   bash bounded.sh OUT 3 large13
