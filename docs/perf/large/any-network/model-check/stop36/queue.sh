#!/bin/bash
# the rest of stop 36's measurements, one after another
cd /work/bench36; export LOGDIR=/work/bench36/logs
while pgrep -f "family.sh 24" >/dev/null; do sleep 5; done
FROM=9 TO=10 ./setA5.sh > setA8.txt 2>&1
# 3-call jobs (OSU -i 2 -x 1): what the predictions cost a short job
for r in 1 2; do
 WARM=1 JOBS="auto off" ./longlarge.sh q4 1 8388608:8388608 2 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"
 WARM=1 JOBS="auto off" ./longlarge.sh q1 1 8388608:8388608 2 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"
 WARM=1 JOBS="auto off" ./longlarge.sh q3 1 8388608:8388608 2 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"
done > short3.txt 2>&1
# s1, s2, s3 at 1-16 MiB, 10 calls after 2: unchanged where the table was right?
for r in 1 2; do
 JOBS="auto off" ./longlarge.sh s1b 1 1048576:16777216 10 -- --nodes 2,3 --node-rate 200mbit | sed "s/^1/$r s1/"
 JOBS="auto off" ./longlarge.sh s2b 1 1048576:16777216 10 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit | sed "s/^1/$r s2/"
 JOBS="auto off" ./longlarge.sh s3b 1 1048576:16777216 10 -- --nodes 3,3 --node-rate 200mbit | sed "s/^1/$r s3/"
done > s123.txt 2>&1
echo done > queue.done
