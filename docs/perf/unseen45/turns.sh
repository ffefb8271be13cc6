#!/bin/bash
# turns.sh: one verbose OSU job (MIN-MAX, default 1-8 MiB, 20 calls after 3, auto, no file)
# per cluster; prints each model check outcome, to see where the previous
# module's turn (ModelCheck::kLost) is taken.  ONLY="s2 4+1-unshaped": those.
T=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
job() {  # tag burst map np -- upargs
  local tag=$1 burst=$2 map=$3 np=$4; shift 5
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $tag "* ]] && return
  TOPOAR_CLUSTER_BURST=$burst $T up --name t45 "$@" >/dev/null 2>&1 || { echo "$tag: up failed"; return; }
  echo "== $tag"
  timeout 900 $T run --name t45 $map -- -np $np --mca mca_base_component_path $P:/work/main/_install/lib/openmpi \
    --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 -x TOPOAR_OSU_REPORT=1 \
    $O -m ${MIN:-1048576}:${MAX:-8388608} -i ${ITERS:-20} -x 3 -T mpi_float 2>&1 |
    grep -E "from now on|turn next|^[0-9]+ " | sed 's/.*model check, //'
  $T down --name t45 >/dev/null 2>&1
}
job s1 "" "" 5 -- --nodes 2,3 --node-rate 200mbit
job s3 "" "" 6 -- --nodes 3,3 --node-rate 200mbit
job s2 "" "--map-by node" 8 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
job 2+2+2-500m-1ms 62500 "" 6 -- --nodes 2,2,2 --node-rate 500mbit
job 2+3-1g-64k 65536 "" 5 -- --nodes 2,3 --node-rate 1gbit
job 2+3-unshaped "" "" 5 -- --nodes 2,3
job 4+1-unshaped "" "" 5 -- --nodes 4,1
