#!/bin/bash
# stop-37 checks of the watch, auto (this build) against base (40f3cd3), one job at a time
cd /work/bench37
L=/work/bench37/logs
while pgrep -f "longlarge.sh s231c" >/dev/null; do sleep 5; done
JOBS="auto base" LOGDIR=$L ./longlarge.sh s3b 2 2097152:16777216 50 -- --nodes 3,3 --node-rate 200mbit > ab-s3b.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh s1b 1 2097152:16777216 50 -- --nodes 2,3 --node-rate 200mbit > ab-s1b.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh un 3 1048576:4194304 200 -- --nodes 2,3 > ab-un.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh s245b 1 8388608:8388608 100 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit > ab-245b.txt 2>&1
TOPOAR_CLUSTER_BURST=65536 JOBS="auto base han" LOGDIR=$L ./longlarge.sh b64 2 67108864:67108864 30 -- --nodes 2,3 --node-rate 1gbit > ab-b64.txt 2>&1
echo done > rest.done
