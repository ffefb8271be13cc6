#!/bin/bash
# probe.sh JOB SIZE ITERS : one job on c64 (must be up); tc stats delta and ss samples on n0
job=$1; size=$2; it=$3
tc=/work/main/tests/cluster/topoar-cluster
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
P=(--mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/work/main/_install/lib/openmpi")
case $job in
 han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
 tuned) comp=(--mca coll tuned,libnbc,basic,self);;
 tree1) comp=("${P[@]}" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm tree --mca coll_topoar_num_trees 1);;
 *) comp=("${P[@]}" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $job);;
esac
ns=topoar-c64-r0-n0
tc -n $ns -s qdisc show dev eth0 | grep -o 'Sent [0-9]* bytes [0-9]* pkt (dropped [0-9]*, overlimits [0-9]*' > /tmp/q0
( while sleep 0.25; do ip netns exec $ns ss -tinH state established 2>/dev/null > /tmp/ss.cur; [ -s /tmp/ss.cur ] && cp /tmp/ss.cur /tmp/ss.last; done ) & sp=$!
$tc run --name c64 -- "${comp[@]}" $EXTRA $O -m $size:$size -i $it -x 1 -T mpi_float 2>&1 | awk '$1+0>=1024'
kill $sp
tc -n $ns -s qdisc show dev eth0 | grep -o 'Sent [0-9]* bytes [0-9]* pkt (dropped [0-9]*, overlimits [0-9]*' > /tmp/q1
paste /tmp/q0 /tmp/q1
# connections across hosts: local:port peer:port bytes_sent bytes_received retrans
awk '/^ESTAB|^[0-9]/{}{print}' /tmp/ss.last | paste - - | grep -v ':22 ' | awk '{ls=$4; pr=$5; bs=""; br=""; rt=""; for(i=1;i<=NF;i++){if($i~/^bytes_sent:/)bs=$i; if($i~/^bytes_received:/)br=$i; if($i~/^retrans:/)rt=$i; if($i~/^rtt:/)rtt=$i; if($i~/^cwnd:/)cw=$i} print ls, pr, bs, br, rt, rtt, cw}'
