#!/bin/bash
cd /work/exp/bar
while pgrep -f "cmp.sh b2" >/dev/null; do sleep 5; done
JOBS="on off tuned ring han" ITERS=40 WARM=10 ./cmp.sh sh1 5 8:8 -- --nodes 2,3 --node-rate 200mbit > short-s1.txt 2>&1
JOBS="on off tuned ring han" ITERS=40 WARM=10 ./cmp.sh sh3 5 8:8 -- --nodes 3,3 --node-rate 200mbit > short-s3.txt 2>&1
JOBS="on off tuned ring han" ITERS=40 WARM=10 MAP="--map-by node" ./cmp.sh sh2 5 8:8 -- --racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit > short-s2.txt 2>&1
echo shortdone > chain.state
cd /work/main && /usr/bin/python3 tests/bench/uneven_family.py --count 10 --seed 22 -r 2 --sizes 8M,64M -o /work/exp/bar/family > /work/exp/bar/family.log 2>&1
echo familydone > /work/exp/bar/chain.state
