#!/bin/bash
cd /work/bench36; export LOGDIR=/work/bench36/logs
for r in 1 2; do
 JOBS="auto off" ./longlarge.sh s2c$r 1 1048576:16777216 10 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit | sed "s/^1/$r s2/"
done > s2-v3.txt 2>&1
for r in 1 2; do
 WARM=1 JOBS="auto off" ./longlarge.sh q4$r 1 8388608:8388608 2 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"
 WARM=1 JOBS="auto off" ./longlarge.sh q1$r 1 8388608:8388608 2 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"
 WARM=1 JOBS="auto off" ./longlarge.sh q3$r 1 8388608:8388608 2 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"
done > short4.txt 2>&1
for r in 11 12; do
 JOBS="auto off" ./longlarge.sh sa$r 1 8388608:8388608 20 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"
done > setA9.txt 2>&1
FROM=11 TO=12 ./setA5.sh >> setA9.txt 2>&1
./family.sh 24 8 1 8388608 20 "auto off" "2,4" > fam24-long5.txt 2>&1
echo done > queue2.done
