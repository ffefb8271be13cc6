#!/bin/bash
# churn.sh ROUNDS: topoar_comm_churn -g 5 -m 8 -c 4 -n 20 on 2+3 unshaped with
# coll_topoar_allreduce_algorithm tree (no contest): the build before
# ($BASE, default /tmp/topoar-base), which times the barriers on every new
# communicator there, against this tree's, which keeps the kind per shape;
# and with coll_topoar_barrier never.  Prints each job's summary lines.
rounds=${1:-3}
tc=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
$tc up --name churn --nodes 2,3 --node-rate none >/dev/null 2>&1 || exit 1
trap "$tc down --name churn >/dev/null 2>&1" EXIT
for r in $(seq $rounds); do
  for v in new base never; do
    d=/work/main/_install; [ $v = base ] && d=${BASE:-/tmp/topoar-base}
    extra=(); [ $v = never ] && extra=(--mca coll_topoar_barrier never)
    out=$(timeout 300 $tc run --name churn -- --mca mca_base_component_path "$P:$d/lib/openmpi" \
      --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm tree "${extra[@]}" \
      /work/main/_install/bin/topoar_comm_churn -g 5 -m 8 -c 4 -n 20 2>&1 | grep -iE "median|first|second|later" | tr '\n' ' ')
    echo "$r $v $out"
  done
done
