#!/bin/bash
# set A again with the final version: auto/off, 2 rounds, 8 MiB, 20 calls; 2-rack shapes with --map-by node as before (not: set A ran by slot)
cd /work/bench35; export LOGDIR=/work/bench35/logs
for r in 1 2; do
 JOBS="auto off" /work/ext/longlarge.sh sa 1 8388608:8388608 20 -- --nodes 1,4,3 --node-rate 400mbit,400mbit,250mbit | sed "s/^1/$r 24-5/"; cp logs/ll-sa-1-auto.log logs/a3-$r-245.log
 JOBS="auto off" /work/ext/longlarge.sh sb 1 8388608:8388608 20 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-1/"; cp logs/ll-sb-1-auto.log logs/a3-$r-231.log
 JOBS="auto off" /work/ext/longlarge.sh sc 1 8388608:8388608 20 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/$r 23-4/"; cp logs/ll-sc-1-auto.log logs/a3-$r-234.log
done
