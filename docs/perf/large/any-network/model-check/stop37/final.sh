#!/bin/bash
# stop-37 final build (6107875) against base (40f3cd3), one job at a time
cd /work/bench37
L=/work/bench37/logs
JOBS="auto base" LOGDIR=$L ./longlarge.sh unf 3 1048576:4194304 200 -- --nodes 2,3 > ab-unf.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh s231f 3 8388608:8388608 100 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit > ab-231f.txt 2>&1
TOPOAR_CLUSTER_BURST=65536 JOBS="auto base off alg:tree han" LOGDIR=$L ./longlarge.sh b64f 2 67108864:67108864 30 -- --nodes 2,3 --node-rate 1gbit > ab-b64f.txt 2>&1
echo done > final.done
