#!/bin/bash
# step1.sh ROUND... -- issue 22 shape 7 (racks 2+1 | 1+2 at 1000/100 | 250/1000 Mbit/s, uplink 100) at
# 8 MiB: auto and each algorithm forced (tree, flexrelay, flexreduce, hring), each with no file (links
# measured at set-up) and with the cluster's rack file; one compare.py per configuration pair and round,
# the bench lock taken per pair; verbose 10 and the probes' debug output kept.
# Output: step1/rROUND-ALG/ here.  PREFIX: the installation (default this tree's _install).  Root.
set -u
here=$(cd "$(dirname "$0")" && pwd); src=$(cd "$here/../../../../../.." && pwd)
prefix=${PREFIX:-$src/_install}
out=${OUT:-$here/step1}
for r in "$@"; do
    for c in ${ALGS:-auto tree flexrelay flexreduce hring}; do
        echo "round $r $c: load $(cut -d' ' -f1-3 /proc/loadavg)"
        flock /tmp/topoar-bench.lock python3 "$src/tests/bench/compare.py" \
            --scenario "2+1+1+2@1000/100/250/1000-up100" --cluster s7 --node-rate 1000mbit,100mbit,250mbit,1000mbit \
            --racks '2,1;1,2' --rack-rate 100mbit --map-by node --sizes 8388608:8388608 -i 2 -x 1 -I 2 -r 1 \
            --no-plot --prefix "$prefix" \
            --config "$c-nofile={topoar_nofile} --mca coll_topoar_allreduce_algorithm $c" \
            --config "$c-file={topoar} --mca coll_topoar_allreduce_algorithm $c" --configs "$c-nofile,$c-file" \
            --mpirun-arg="--mca coll_topoar_verbose 10" --mpirun-arg="-x TOPOAR_PROBE_DEBUG=1" \
            -o "$out/r$r-$c" >"$out/r$r-$c.log" 2>&1 || echo "  failed (rc $?)"
    done
done
