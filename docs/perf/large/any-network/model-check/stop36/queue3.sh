#!/bin/bash
# OSU's default for large messages: 100 timed calls after 10 warm-up
cd /work/bench36; export LOGDIR=/work/bench36/logs
JOBS="auto off" ./longlarge.sh la1 1 8388608:8388608 100 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/1 24-5/"
JOBS="auto off" ./longlarge.sh lb1 1 8388608:8388608 100 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/1 23-1/"
JOBS="auto off" ./longlarge.sh lc1 1 8388608:8388608 100 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/1 23-4/"
JOBS="auto off" ./longlarge.sh ls2 1 8388608:8388608 100 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit | sed "s/^1/1 s2/"
echo done > queue3.done
