#!/bin/bash
# one-host latency floor on a 16-core machine: tuned vs topoar running the call vs topoar default
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$1; mkdir -p $out; t0=$(date +%s)
w=$(mktemp -d); tar -C $w -xzf .gpurun/topoar-0.1.0.tar.gz; src=$(echo $w/topoar-*)
mkdir $w/b && cd $w/b && $src/configure --prefix=$w/p --without-cuda --without-nccl >$out/cfg.log 2>&1 && make -j16 >$out/make.log 2>&1 && make install >>$out/make.log 2>&1 || { echo build failed; tail -20 $out/cfg.log $out/make.log; exit 1; }
cd - >/dev/null
echo "built in $(( $(date +%s) - t0 )) s"; nproc; lscpu | grep -i "model name"
sys=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
OSU=$PWD/.gpurun/osu_allreduce
for np in 2 4 8; do
 for r in 1 2 3 4 5 6 7; do
  for c in tuned run down; do
   case $c in
    tuned) a="--mca coll tuned,libnbc,basic,self";;
    run) a="--mca mca_base_component_path $sys:$w/p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0";;
    down) a="--mca mca_base_component_path $sys:$w/p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self";;
   esac
   v=$(timeout 60 mpirun -np $np --bind-to core $a $OSU -m 8:8 -i 20000 -x 2000 2>&1 | awk '$1==8{print $2}')
   echo "np=$np round=$r $c $v" | tee -a $out/onehost-8B.txt
  done
 done
done
echo "8B done at $(( $(date +%s) - t0 )) s"
for r in 1 2 3; do
 for c in tuned run; do
   case $c in
    tuned) a="--mca coll tuned,libnbc,basic,self";;
    run) a="--mca mca_base_component_path $sys:$w/p/lib/openmpi --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_single_node_fallback 0";;
   esac
   timeout 120 mpirun -np 8 --bind-to core $a $OSU -m 8:4194304 2>&1 | awk -v c=$c -v r=$r '$1 ~ /^[0-9]+$/ {print "np=8 round="r, c, $1, $2}' >> $out/onehost-sweep8.txt
 done
done
echo "sweep done at $(( $(date +%s) - t0 )) s"
python3 - $out <<'PY'
import sys,collections,statistics as st
d=collections.defaultdict(list)
for l in open(sys.argv[1]+'/onehost-8B.txt'):
    p=l.split()
    if len(p)==4: d[(p[0],p[2])].append(float(p[3]))
for np in ('np=2','np=4','np=8'):
    t=st.median(d[(np,'tuned')]); 
    print(np, ' '.join('%s %.3f [%.2f-%.2f] (%.2f)'%(c,st.median(d[(np,c)]),min(d[(np,c)]),max(d[(np,c)]),st.median(d[(np,c)])/t) for c in ('tuned','run','down') if d[(np,c)]))
e=collections.defaultdict(list)
for l in open(sys.argv[1]+'/onehost-sweep8.txt'):
    p=l.split(); e[(int(p[3]),p[2])].append(float(p[4]))
for s in sorted({k[0] for k in e}):
    t=st.median(e[(s,'tuned')]); r=st.median(e[(s,'run')])
    print('np8 %8d tuned %.2f run %.2f ratio %.2f'%(s,t,r,r/t))
PY
rm -rf $w
