#!/bin/bash
# sweep.sh NAME SIZE ITERS ROUNDS "CONFIGS" -- UP-ARGS ; config = W:U:JOB (W window, U unit (0 default), JOB auto|han|tuned|ALG)
name=$1 size=$2 it=$3 rounds=$4 cfgs=$5; shift 6
tc=/work/main/tests/cluster/topoar-cluster
$tc up --name $name "$@" >/dev/null 2>&1 || { echo up failed; exit 1; }
trap "$tc down --name $name >/dev/null 2>&1" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
P=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/main/_install/lib/openmpi")
ns=$(ip netns list | awk '{print $1}' | grep "^topoar-$name-r0-n0$")
for r in $(seq $rounds); do for c in $cfgs; do
 IFS=: read w u job <<< "$c"
 case $job in
  han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
  tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  auto) comp=("${P[@]}" --mca coll topoar,tuned,libnbc,basic,self);;
  *) comp=("${P[@]}" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $job);;
 esac
 X=(-x TOPOAR_EXP_WINDOW=$w); [ "$u" != 0 ] && X+=(-x TOPOAR_EXP_UNIT=$u)
 ip netns exec $ns nstat -n
 t=$(timeout 600 $tc run --name $name -- "${comp[@]}" "${X[@]}" $O -m $size:$size -i $it -x 1 -T mpi_float 2>&1 | awk -v s=$size '$1==s{print $2/1e6}')
 re=$(ip netns exec $ns nstat | awk '/TcpExtTCPSACKReorder/{print $2}')
 echo "$name r$r $c ${t:-FAIL} reorder=${re:-0}"
done; done
