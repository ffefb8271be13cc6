#!/bin/bash
# run_replay.sh -- issue 22, the 8 MiB ladder: measured topologies from earlier jobs whose table changes,
# given as topology files; the old choice (tree) against the new one, forced, 8 MiB, 3 rounds each.
set -u
cd /work/bench22
src=/work/main
R=${R:-3}
run() { # name, cluster spec...
    n=$1; shift
    python3 $src/tests/bench/compare.py --scenario replay-$n --config-file $n.conf \
        --cluster rt --sizes 8388608:8388608 -i 2 -x 1 -I 2 -r $R --no-plot -o out-$n --prefix $src/_install "$@" \
        > log-$n.txt 2>&1
    echo "$n rc $?"
}
run t7a --node-rate 1000mbit,100mbit,250mbit,1000mbit --racks "2,1;1,2" --rack-rate 100mbit --map-by node
run t7b --node-rate 1000mbit,100mbit,250mbit,1000mbit --racks "2,1;1,2" --rack-rate 100mbit --map-by node
run t7c --node-rate 1000mbit,100mbit,250mbit,1000mbit --racks "2,1;1,2" --rack-rate 100mbit --map-by node
run t2a --node-rate 100mbit,100mbit,400mbit --nodes 4,2,2
