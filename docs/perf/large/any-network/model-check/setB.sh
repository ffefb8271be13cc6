#!/bin/bash
# set B: shapes where the table was right before: does the check cost anything?  OSU 1-16 MiB, 10 calls after 2; auto vs check off.
cd /work/bench35; export LOGDIR=/work/bench35/logs
for r in 1 2 3; do
 JOBS="auto off" /work/ext/longlarge.sh s1b 1 1048576:16777216 10 -- --nodes 2,3 --node-rate 200mbit | sed "s/^1/$r s1/"
 JOBS="auto off" /work/ext/longlarge.sh s2b 1 1048576:16777216 10 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit | sed "s/^1/$r s2/"
 TOPOAR_CLUSTER_BURST=65536 JOBS="auto off" /work/ext/longlarge.sh shb 1 1048576:16777216 10 -- --nodes 2,3 --node-rate 1gbit | sed "s/^1/$r 2+3-1g-64k/"
done
