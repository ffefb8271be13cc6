#!/bin/bash
cd /work/bench35
WARM=1 ./family.sh 24 8 2 8388608 2 "auto off" > fam24-short2.txt 2>&1
./family.sh 24 8 2 8388608 20 "auto off" 2,4,5 > fam24-long2.txt 2>&1
