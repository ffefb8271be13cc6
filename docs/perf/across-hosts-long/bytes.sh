#!/bin/bash
# bytes.sh "SPEC" "MAP" SIZE CONFIG...: bytes and packets per OSU iteration (one allreduce and the
# barrier OSU runs after it) on every node link and rack uplink direction, from the tbf counters
# (tc -s qdisc), as the difference of a 2,100-call and a 100-call job (300 warm-up calls each), so
# the set-up, the link probes and the contest cancel.  SIZE 0 with BENCH=osu_barrier: the barrier
# alone.  CONFIG: after | ohan | han | hantb | tuned (as in long3.sh), after:ALG / ohan:ALG force
# coll_topoar_allreduce_algorithm, a trailing v adds coll_topoar_verbose 10.  Run under
# flock /tmp/topoar-bench.lock.
spec=$1; map=$2; size=$3; shift 3
top=$(cd "$(dirname "$0")/../../.." && pwd)
tc=$top/tests/cluster/topoar-cluster; name=hb$$
$tc up --name $name $spec >/dev/null 2>&1 || { echo up failed; exit 1; }
out=${KEEP:-$(mktemp -d)}  # the jobs' output (KEEP=DIR keeps it; else removed at exit)
trap "$tc down --name $name >/dev/null 2>&1; [ -n \"$KEEP\" ] || rm -rf \"$out\"" EXIT
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/${BENCH:-osu_allreduce}
P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
nodes=$(ip netns list | awk -v p="topoar-$name-r" 'index($1,p)==1{print $1}' | sort)
counters() { # per node: eth0 egress (up) and its fabric port's egress (down); rack uplinks
  for ns in $nodes; do
    n=${ns#topoar-$name-}; port=$(echo "$n" | tr -d '-')
    up=$(tc -n "$ns" -s qdisc show dev eth0 | awk '/Sent/{print $2, $4; exit}')
    dn=$(tc -n "topoar-$name-fab" -s qdisc show dev "$port" | awk '/Sent/{print $2, $4; exit}')
    echo "$n $up $dn"
  done
  for dev in up0 up1; do
    x=$(tc -n "topoar-$name-fab" -s qdisc show dev $dev 2>/dev/null | awk '/Sent/{print $2, $4; exit}')
    [ -n "$x" ] && echo "rack-$dev $x 0 0"
  done
}
for job in "$@"; do
  extra=()
  case $job in
    after*) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self);;
    ohan*) comp=(--mca mca_base_component_path "$P:$top/_install/lib/openmpi" --mca coll topoar,han,tuned,libnbc,basic,self --mca coll_han_priority 40);;
    hantb) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100 --mca coll_han_barrier_dynamic_global_communicator_module 3);;
    han) comp=(--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100);;
    tuned) comp=(--mca coll tuned,libnbc,basic,self);;
  esac
  case $job in *:*) a=${job#*:}; extra=(--mca coll_topoar_allreduce_algorithm "${a%v}");; esac
  case $job in *v) extra+=(--mca coll_topoar_verbose 10);; esac
  declare -A res
  for it in 100 2100; do
    a=$(counters)
    t=$($tc run --name $name $map -- "${comp[@]}" "${extra[@]}" $O $([ -z "$BENCH" ] && echo -m $size:$size -T mpi_float) \
          -i $it -x 300 2>&1 | tee "$out/$job-$it.txt" | awk '$1+0>=4 && NF==2{print $2}')
    b=$(counters)
    res[$it]=$(paste <(echo "$a") <(echo "$b") | awk '{printf "%s %d %d %d %d\n", $1, $7-$2, $8-$3, $9-$4, $10-$5}')
    res[t$it]=$t
  done
  echo "== $job size $size  (us/call in the 2100-call job: ${res[t2100]})"
  paste <(echo "${res[100]}") <(echo "${res[2100]}") |
    awk '{printf "  %-8s up %7.0f B %5.2f pkt   down %7.0f B %5.2f pkt per iteration\n", $1, ($7-$2)/2000, ($8-$3)/2000, ($9-$4)/2000, ($10-$5)/2000}'
done
