#!/bin/bash
# family.sh ROUND... -- issue 22's family at 8 MiB, shapes 7, 9, 2 and 5, this branch against main, one
# job per build and shape per round (separate locked runs: the lock is taken per job and released), the
# branch first in odd rounds, main first in even ones; verbose 10 and the probes' debug output kept.
# Output: docs/perf/large/any-network/family/oneway/rROUND{TAG}-{branch,main}/ (TAG from the environment).  Root.
set -u
here=$(cd "$(dirname "$0")" && pwd); src=$(cd "$here/../../../../../.." && pwd)
declare -A prefix=([branch]=$src/_install [main]=${MAIN:-/work/main/_install})
for r in "$@"; do
    for s in 7 9 2 5; do
        if ((r % 2)); then order="branch main"; else order="main branch"; fi
        for b in $order; do
            echo "round $r shape $s $b: load $(cut -d' ' -f1-3 /proc/loadavg)"
            flock /tmp/topoar-bench.lock python3 "$src/tests/bench/uneven_family.py" --count 10 --seed 22 -r 1 \
                --only "$s" --sizes 8388608 --prefix "${prefix[$b]}" --cluster-name ow \
                --mpirun-arg="--mca coll_topoar_verbose 10" --mpirun-arg="-x TOPOAR_PROBE_DEBUG=1" \
                -o "$here/r$r${TAG:-}-$b" >/dev/null 2>&1 || echo "  failed (rc $?)"
        done
    done
done
