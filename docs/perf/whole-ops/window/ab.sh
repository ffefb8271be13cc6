# ab3.sh NAME ROUNDS SIZES -- UPARGS: _install (new) against /tmp/topoar-d31, 3-call jobs, interleaved
name=$1; rounds=$2; sizes=$3; shift 4
. /work/main/docs/perf/barrier/jobs.sh
for r in $(seq $rounds); do for b in new d31; do
  pre=/work/main/_install; [ $b = d31 ] && pre=/tmp/topoar-d31
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- --mca mca_base_component_path "$P:$pre/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self /work/main/_install/bin/topoar_osu_allreduce -m $sizes -i 2 -x 1 2>&1 | awk '$1+0>=1{printf "%s:%.4f ", $1/1048576"M", $2/1e6}')
  echo "$r $b $v"
done; done
