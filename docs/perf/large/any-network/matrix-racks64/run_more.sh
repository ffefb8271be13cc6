#!/bin/bash
# run_more.sh -- (1) the default matrix's racks cells at 16 MiB again (main after this stop's changes), 3 rounds;
# (2) seed-23 shapes 2 and 7 at 64 MiB, before/after (live.conf), 3 rounds.
set -u
cd /work/bench22
src=/work/main
python3 $src/tests/bench/large_matrix.py --set default --only racks1+2_2+3-1gbit-up200mbit-64k,racks1+2_2+3-1gbit-up200mbit-5ms \
    -r 3 -o /work/bench22/lm-racks16 > lm-racks16.log 2>&1; echo "racks16 rc $?"
grep -E "^23-(2|7) " flexpieces.txt | while read id name bound rates spec; do
    python3 $src/tests/bench/compare.py --scenario fp64-$id --config-file live.conf --cluster rt --node-rate $rates \
        --sizes 67108864:67108864 -i 2 -x 1 -I 2 -r ${R:-3} --no-plot -o out-fp64-$id --prefix $src/_install $spec \
        > log-fp64-$id.txt 2>&1
    echo "shape $id 64M rc $?"
done
