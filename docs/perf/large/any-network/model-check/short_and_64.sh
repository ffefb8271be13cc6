#!/bin/bash
cd /work/bench35
WARM=1 ./family.sh 24 8 2 8388608 2 "auto off" > fam24-short.txt 2>&1
WARM=2 ./family.sh 24 8 2 67108864 6 "auto off han" 4,5 > fam24-64m.txt 2>&1
