#!/bin/bash
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C=tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/_install/lib/openmpi
run_s() {
  local name=$1; shift; local map=$1; shift
  $C up --name $name "$@" >/dev/null 2>&1
  for g in 2 4; do
    for mode in nofile file; do
      extra=(); [ $mode = file ] && extra=(--mca coll_topoar_rack_file @RACKFILE@)
      out=$($C run --name $name $map -- --mca mca_base_component_path $P --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 "${extra[@]}" _install/bin/topoar_comm_churn -g $g -m 8 -n 30 2>&1)
      echo "$name churn g=$g $mode measured=$(echo "$out" | grep -c 'measured at this set-up') reused=$(echo "$out" | grep -c 'measured earlier in this job') :: $(echo "$out" | grep '^first\|^second' | tr '\n' ' ')"
    done
  done
  $C down --name $name >/dev/null 2>&1
}
run_s cs1 "" --nodes 2,3 --node-rate 200mbit
run_s cs2 "--map-by node" --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit
run_s cs3 "" --nodes 3,3 --node-rate 200mbit
run_s cs4 "" --nodes 2,2,3 --node-rate 400mbit,400mbit,100mbit
