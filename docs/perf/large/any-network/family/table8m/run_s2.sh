#!/bin/bash
# run_s2.sh -- s2 (racks 1+2 | 2+3, 1 Gbit/s hosts, 200 Mbit/s between racks), 256 KiB-1 MiB and 8 MiB, before
# (c075311) and after (main), interleaved, no file, 3 rounds: s2's table now has flexreduce at 256K-1M.
set -u
cd /work/bench22
src=/work/main
for sz in 262144:1048576 8388608:8388608; do
    python3 $src/tests/bench/compare.py --scenario s2-$sz --config-file live.conf --cluster rt --node-rate 1gbit \
        --racks "1,2;2,3" --rack-rate 200mbit --map-by node --sizes $sz -i 10 -x 2 -I 10 -r ${R:-3} --no-plot \
        -o out-s2-${sz%%:*} --prefix $src/_install > log-s2-${sz%%:*}.txt 2>&1
    echo "s2 $sz rc $?"
done
