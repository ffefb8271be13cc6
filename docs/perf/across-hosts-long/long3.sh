#!/bin/bash
# long3.sh "SPEC" ROUNDS [--map-by node]: the lead's long2.sh (OSU 7.4 8 B-64 KiB, 2000 calls after 300
# warm-up, MPI_FLOAT) with two more configurations, so topoar's and han's allreduce are each measured
# with both barriers that OSU runs between the calls:
#   after  topoar auto over tuned (this tree's _install; MPI_Barrier is tuned's)
#   ohan   topoar auto over han   (MPI_Barrier is han's; the contest's previous module is han)
#   tuned  tuned alone
#   han    han over tuned         (MPI_Barrier is han's)
#   hantb  han, its barrier handed to tuned (coll_han_barrier_dynamic_global_communicator_module 3)
# Run under flock /tmp/topoar-bench.lock.
spec=$1; rounds=$2; map=$3
top=$(cd "$(dirname "$0")/../../.." && pwd)
tc=$top/tests/cluster/topoar-cluster; name=lk$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for r in $(seq $rounds); do
 for job in after ohan tuned han hantb; do
  case $job in
    after) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    ohan) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,han,tuned,libnbc,basic,self --mca coll_han_priority 40);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    hantb) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100 --mca coll_han_barrier_dynamic_global_communicator_module 3);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  v=$($tc run --name $name $map -- "${comp[@]}" $O -m 8:65536 -i 2000 -x 300 -T mpi_float 2>&1 | awk '$1+0>=4{printf "%s:%s ", $1, $2}')
  echo "$r $job $v"
 done
done
