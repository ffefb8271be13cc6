tc=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3; O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
name=$1; shift
$tc up --name $name "$@" >/dev/null 2>&1 || exit 1
for r in 1 2; do for v in new base; do
 d=/work/main/_install; [ $v = base ] && d=/tmp/topoar-base
 for a in leader auto; do
 echo "$r $v-$a $(timeout 300 $tc run --name $name -- --mca mca_base_component_path "$P:$d/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_allreduce_algorithm $a $O -m 131072:8388608 -i 20 -x 3 -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')"
 done; done; done
$tc down --name $name >/dev/null 2>&1
