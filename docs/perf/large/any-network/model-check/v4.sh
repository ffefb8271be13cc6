#!/bin/bash
cd /work/bench35; export LOGDIR=/work/bench35/logs
JOBS="auto" /work/ext/longlarge.sh sb 1 8388608:8388608 20 -- --racks "4,1;2" --node-rate 1000mbit,100mbit,100mbit --rack-rate 1000mbit | sed "s/^1/1 23-1/"; cp logs/ll-sb-1-auto.log logs/v4-231.log
JOBS="auto" /work/ext/longlarge.sh sc 1 8388608:8388608 20 -- --racks "2,1;4" --node-rate 250mbit,1000mbit,100mbit --rack-rate 1000mbit | sed "s/^1/1 23-4/"; cp logs/ll-sc-1-auto.log logs/v4-234.log
