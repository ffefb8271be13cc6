#!/bin/bash
# stop-37 final build (bcda4c1) against base (40f3cd3): the shapes not re-run with the final rule
cd /work/bench37
L=/work/bench37/logs
JOBS="auto base" LOGDIR=$L ./longlarge.sh s245f 2 8388608:8388608 100 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit > ab-245f.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh s234f 1 8388608:8388608 100 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit > ab-234f.txt 2>&1
JOBS="auto base" LOGDIR=$L ./longlarge.sh s3f 1 2097152:16777216 50 -- --nodes 3,3 --node-rate 200mbit > ab-s3f.txt 2>&1
echo done > final2.done
