#!/bin/bash
# shape8-ab.sh: auto with no file on the seed-22 family's shape 8, this
# tree's _install against /tmp/topoar-base (a copy of _install from the
# build before a change), 4 rounds interleaved, 3-call jobs at 8-64 MiB.
T=/work/main/tests/cluster/topoar-cluster; P=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
$T up --name s8 --racks "1,3;1" --rack-rate 400mbit --node-rate 400mbit,100mbit,100mbit >/dev/null || exit 1
trap "$T down --name s8 >/dev/null 2>&1" EXIT
for r in 1 2 3 4; do for b in new base; do
 pre=/work/main/_install; [ $b = base ] && pre=/tmp/topoar-base
 v=$($T run --name s8 --map-by node -- -np 5 --mca mca_base_component_path $P:$pre/lib/openmpi \
     --mca coll topoar,tuned,libnbc,basic,self /work/main/_install/bin/topoar_osu_allreduce \
     -m 8388608:67108864 -i 2 -x 1 2>&1 | awk '$1+0>=1048576{printf "%s:%.3f ", $1/1048576"M", $2/1e6}')
 echo "$r $b $v"
done; done
