# w3.sh NAME ROUNDS SIZES -- UPARGS: installs w1, w2, d31 (base) interleaved, 3-call jobs
name=$1; rounds=$2; sizes=$3; shift 4
. /work/main/docs/perf/barrier/jobs.sh
O=/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce
for r in $(seq $rounds); do for b in w1 w2 d31; do
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- --mca mca_base_component_path "$P:/tmp/topoar-$b/lib/openmpi" --mca coll topoar,tuned,libnbc,basic,self $O -m $sizes -i 2 -x 1 -T mpi_float 2>&1 | awk '$1+0>=1{printf "%s:%s ", $1, $2}')
  echo "$r $b $v"
done; done
