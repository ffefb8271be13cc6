#!/bin/bash
cd /work/bench35
./family.sh 24 8 2 8388608 20 "auto off" 2,4,5 > fam24-long3.txt 2>&1
for i in 2 4 5; do cp logs/ll-f24$i-1-auto.log logs/v3-long-f24$i-auto.log; done
WARM=1 ./family.sh 24 8 2 8388608 2 "auto off" 2,4,5 > fam24-short3.txt 2>&1
for i in 2 4 5; do cp logs/ll-f24$i-1-auto.log logs/v3-short-f24$i-auto.log; done
