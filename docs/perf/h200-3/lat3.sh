#!/bin/bash
# one-host latency: tuned vs topoar running the call with the old model (cpu share 0) and the new (default 25%)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$1; mkdir -p $out; t0=$(date +%s)
w=$(mktemp -d); tar -C $w -xzf .gpurun/topoar-0.1.0.tar.gz; src=$(echo $w/topoar-*)
mkdir $w/b && cd $w/b && $src/configure --prefix=$w/p --without-cuda --without-nccl >$out/cfg.log 2>&1 && make -j16 >$out/make.log 2>&1 && make install >>$out/make.log 2>&1 || { echo build failed; tail -20 $out/cfg.log $out/make.log; exit 1; }
cd - >/dev/null
echo "built in $(( $(date +%s) - t0 )) s"
sys=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
OSU=$PWD/.gpurun/osu_allreduce
T="--mca mca_base_component_path $sys:$w/p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0"
for np in 8 16; do
  for s in "0 --mca coll_topoar_model_overhead 40us" 0.25; do mpirun -np $np --bind-to core $T --mca coll_topoar_model_cpu_share $s --mca coll_topoar_verbose 10 $OSU -m 8:65536 -i 10 -x 1 2>&1 | grep -E "^allreduce " | head -12 | sed "s/^/np=$np share=$s: /" >> $out/tables.txt; done
done
cat $out/tables.txt
for np in 4 8 16; do
 for r in 1 2 3 4 5; do
  for c in tuned old new; do
   case $c in
    tuned) a="--mca coll tuned,libnbc,basic,self";;
    old) a="$T --mca coll_topoar_model_cpu_share 0 --mca coll_topoar_model_overhead 40us";;
    new) a="$T";;
   esac
   v=$(timeout 60 mpirun -np $np --bind-to core $a $OSU -m 8:8 -i 20000 -x 2000 2>&1 | awk '$1==8{print $2}')
   echo "np=$np round=$r $c $v" >> $out/onehost-8B.txt
  done
 done
done
echo "8B done at $(( $(date +%s) - t0 )) s"
for np in 8 16; do for r in 1 2 3; do
 for c in tuned old new; do
   case $c in
    tuned) a="--mca coll tuned,libnbc,basic,self";;
    old) a="$T --mca coll_topoar_model_cpu_share 0 --mca coll_topoar_model_overhead 40us";;
    new) a="$T";;
   esac
   timeout 120 mpirun -np $np --bind-to core $a $OSU -m 8:1048576 2>&1 | awk -v c=$c -v r=$r -v np=$np '$1 ~ /^[0-9]+$/ {print "np="np, "round="r, c, $1, $2}' >> $out/onehost-sweep.txt
 done
done; done
echo "sweep done at $(( $(date +%s) - t0 )) s"
python3 - $out <<'PY'
import sys,collections,statistics as st
d=collections.defaultdict(list)
for l in open(sys.argv[1]+'/onehost-8B.txt'):
    p=l.split()
    if len(p)==4: d[(p[0],p[2])].append(float(p[3]))
for np in ('np=4','np=8','np=16'):
    t=st.median(d[(np,'tuned')])
    print(np, ' '.join('%s %.3f [%.2f-%.2f] (%.2f)'%(c,st.median(d[(np,c)]),min(d[(np,c)]),max(d[(np,c)]),st.median(d[(np,c)])/t) for c in ('tuned','old','new') if d[(np,c)]))
e=collections.defaultdict(list)
for l in open(sys.argv[1]+'/onehost-sweep.txt'):
    p=l.split(); e[(p[0],int(p[3]),p[2])].append(float(p[4]))
for np in ('np=8','np=16'):
  for s in sorted({k[1] for k in e if k[0]==np}):
    t=st.median(e[(np,s,'tuned')]); o=st.median(e[(np,s,'old')]); n=st.median(e[(np,s,'new')])
    print('%s %8d tuned %.2f old %.2f (%.2f) new %.2f (%.2f)'%(np,s,t,o,o/t,n,n/t))
PY
rm -rf $w
