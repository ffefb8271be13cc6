#!/bin/bash
# run_seed24.sh -- final build on shapes of seed 24 (never used): auto (no file) and han, 8 MiB, 2 rounds.
cd /work/bench22
while read id name bound rates spec; do
    python3 /work/main/tests/bench/compare.py --scenario s24-$id --config-file seed24.conf --cluster rt --node-rate $rates \
        --sizes 8388608:8388608 -i 2 -x 1 -I 2 -r 2 --no-plot -o out-$id --prefix /work/main/_install $spec \
        < /dev/null > log-$id.txt 2>&1
    echo "$id rc $?"
done < seed24.txt
