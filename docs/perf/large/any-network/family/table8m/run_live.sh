#!/bin/bash
# run_live.sh -- issue 22, the 8 MiB ladder, as a user gets it (no file, links measured at set-up): main before
# (c075311, copied to ./before) and after, interleaved in one compare.py per shape and size; plus the 64 MiB
# replay of t7b (its measured topology as a file, tree against flexrelay).
set -u
cd /work/bench22
src=/work/main
s7="--node-rate 1000mbit,100mbit,250mbit,1000mbit --racks 2,1;1,2 --rack-rate 100mbit --map-by node"
s2="--node-rate 100mbit,100mbit,400mbit --nodes 4,2,2"
run() { # out, conf, size, rounds, spec...
    o=$1; c=$2; sz=$3; r=$4; shift 4
    python3 $src/tests/bench/compare.py --scenario $o --config-file $c --cluster rt --sizes $sz:$sz -i 2 -x 1 -I 2 \
        -r $r --no-plot -o out-$o --prefix $src/_install "$@" > log-$o.txt 2>&1
    echo "$o rc $?"
}
run live-s7-8M live.conf 8388608 6 $s7
run live-s2-8M live.conf 8388608 6 $s2
run live-s7-64M live.conf 67108864 3 $s7
run t7b-64M t7b.conf 67108864 3 $s7
