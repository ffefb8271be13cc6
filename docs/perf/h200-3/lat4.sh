#!/bin/bash
# two emulated hosts of 8 ranks (tests/gpu/fake-hosts.sh 8,8) on one 16-core machine: tuned vs topoar new/old model, 8 B-4 KiB
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$1; mkdir -p $out; t0=$(date +%s)
w=$(mktemp -d); tar -C $w -xzf .gpurun/topoar-0.1.0.tar.gz; src=$(echo $w/topoar-*)
mkdir $w/b && cd $w/b && $src/configure --prefix=$w/p --without-cuda --without-nccl >$out/cfg.log 2>&1 && make -j16 >$out/make.log 2>&1 && make install >>$out/make.log 2>&1 || { echo build failed; tail -20 $out/cfg.log $out/make.log; exit 1; }
cd - >/dev/null
echo "built in $(( $(date +%s) - t0 )) s"
sys=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
OSU=$PWD/.gpurun/osu_allreduce; FH=$PWD/.gpurun/fake-hosts.sh
T="--mca mca_base_component_path $sys:$w/p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0"
for s in 0 0.25; do timeout 60 mpirun -np 16 --bind-to core $T --mca coll_topoar_model_cpu_share $s --mca coll_topoar_verbose 10 $FH 8,8 $OSU -m 8:8 -i 10 -x 1 2>&1 | grep -E "^allreduce |per-message" | head -12 | sed "s/^/share=$s: /" >> $out/tables.txt; done
cat $out/tables.txt
for r in 1 2 3; do
  for c in tuned old new; do
   case $c in
    tuned) a="--mca coll tuned,libnbc,basic,self";;
    old) a="$T --mca coll_topoar_model_cpu_share 0";;
    new) a="$T";;
   esac
   timeout 60 mpirun -np 16 --bind-to core $a $FH 8,8 $OSU -m 8:4096 -i 5000 -x 500 2>&1 | awk -v c=$c -v r=$r '$1 ~ /^[0-9]+$/ {print "round="r, c, $1, $2}' >> $out/fake-8-8.txt
  done
done
echo "done at $(( $(date +%s) - t0 )) s"
python3 - $out <<'PY'
import sys,collections,statistics as st
e=collections.defaultdict(list)
for l in open(sys.argv[1]+'/fake-8-8.txt'):
    p=l.split(); e[(int(p[2]),p[1])].append(float(p[3]))
for s in sorted({k[0] for k in e}):
    t=st.median(e[(s,'tuned')]); o=st.median(e[(s,'old')]); n=st.median(e[(s,'new')])
    print('%6d tuned %.2f old %.2f (%.2f) new %.2f (%.2f)'%(s,t,o,o/t,n,n/t))
PY
rm -rf $w
