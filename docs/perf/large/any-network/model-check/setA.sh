#!/bin/bash
# set A: shapes where auto's table picked leader against the measurement (seed 24 #5, seed 23 #1, #4): OSU 8 MiB, 20 calls after 2
cd /work/bench35
for r in 1 2 3; do
 JOBS="auto off han" /work/ext/longlarge.sh sa 1 8388608:8388608 20 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"
 JOBS="auto off han" /work/ext/longlarge.sh sb 1 8388608:8388608 20 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"
 JOBS="auto off han" /work/ext/longlarge.sh sc 1 8388608:8388608 20 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"
done
