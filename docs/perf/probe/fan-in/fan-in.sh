#!/bin/bash
# (The paths are those of the session that ran it: the build before in
# /tmp/22p-before/install, built from git archive a9400db; the build after
# in /work/wt/22p/_install.)
# fan-in.sh osu|info NAME OUTDIR ROUNDS UPARGS... -- RUNARGS...
# Run under flock /tmp/topoar-bench.lock: brings up cluster NAME, then per
# round the build before and the build after in separate jobs (no file):
#   osu:  topoar_osu_allreduce -m 8388608:8388608 -i 3 -x 1, verbose 10
#         (the measured links and auto's table are printed)
#   info: topoar_info (the measured links)
# and takes the cluster down.
set -u
mode=$1 name=$2 out=$3 rounds=$4; shift 4
up=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do up+=("$1"); shift; done; shift
runargs=("$@")
tc=/work/wt/22p/tests/cluster/topoar-cluster
ompi=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
mkdir -p "$out"
"$tc" up --name "$name" "${up[@]}" >"$out/up.log" 2>&1 || { echo "up failed"; cat "$out/up.log"; exit 1; }
trap '"$tc" down --name "$name" >/dev/null 2>&1' EXIT
for r in $(seq 1 "$rounds"); do
  for b in before after; do
    if [ "$b" = before ]; then inst=/tmp/22p-before/install; else inst=/work/wt/22p/_install; fi
    if [ "$mode" = osu ]; then
      prog=(--mca coll_topoar_verbose 10 "$inst/bin/topoar_osu_allreduce" -m 8388608:8388608 -i 3 -x 1)
    else
      prog=("$inst/bin/topoar_info")
    fi
    timeout -k 10 240 "$tc" run --name "$name" "${runargs[@]}" -- --mca mca_base_component_path "$ompi:$inst/lib/openmpi" \
      --mca coll topoar,tuned,libnbc,basic,self "${prog[@]}" >"$out/$b-$r.log" 2>&1
    echo "$b round $r rc $?: $(grep -E '^ *8388608' "$out/$b-$r.log" | head -1)"
    sed -n '/links between hosts: measured/,/^auto/p' "$out/$b-$r.log" | grep -v '^auto'
  done
done
