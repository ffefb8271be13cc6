#!/bin/bash
# s123.sh OUTDIR ROUNDS: the probe changes of stop 43 against the build
# before them (job base, $BASE, default /tmp/topoar-base) on s1-s3,
# 64 KiB-8 MiB (issue 22: "64 KiB-8 MiB on s1-s3 unchanged or better"),
# OSU 7.4 osu_allreduce through docs/perf/barrier/cmp.sh (which brings the
# cluster up and down).
out=${1:?outdir}; rounds=${2:-3}
mkdir -p "$out"
cmp=$(dirname "$0")/../barrier/cmp.sh
export JOBS=${JOBS:-"on base"} ITERS=${ITERS:-10} WARM=${WARM:-3}
run() { local tag=$1; shift 2; echo "== $tag $(date +%T)" >&2
  bash "$cmp" "$(echo f$tag | tr -cd a-z0-9 | cut -c1-16)" "$rounds" ${SIZES:-65536:8388608} -- "$@" > "$out/$tag.txt"; }
MAP="--map-by node" run s2 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
run s1 -- --nodes 2,3 --node-rate 200mbit
run s3 -- --nodes 3,3 --node-rate 200mbit
