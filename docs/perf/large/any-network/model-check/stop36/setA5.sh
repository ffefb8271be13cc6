#!/bin/bash
# 23-1 and 23-4 again, logs kept per round (names sb<r>, sc<r>)
cd /work/bench36; export LOGDIR=/work/bench36/logs
for r in $(seq ${FROM:-3} ${TO:-4}); do
 JOBS="${JOBS:-auto off}" ./longlarge.sh sb$r 1 8388608:8388608 20 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"
 JOBS="${JOBS:-auto off}" ./longlarge.sh sc$r 1 8388608:8388608 20 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"
done
