#!/bin/bash
# set A again with the check's windows (two timed calls per plan): 8 MiB, 20 calls after 2
cd /work/bench36; export LOGDIR=/work/bench36/logs
for r in $(seq ${ROUNDS:-2}); do
 JOBS="${JOBS:-auto off}" ./longlarge.sh sa 1 8388608:8388608 20 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"
 JOBS="${JOBS:-auto off}" ./longlarge.sh sb 1 8388608:8388608 20 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"
 JOBS="${JOBS:-auto off}" ./longlarge.sh sc 1 8388608:8388608 20 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"
done
