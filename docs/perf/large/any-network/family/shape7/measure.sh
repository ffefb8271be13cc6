#!/bin/bash
# measure.sh ROUND... -- issue 22 shape 7 with the fan-ins across racks (this branch) against main:
# per round shape 7 at 8 MiB and at 64 MiB, then shapes 2, 5, 9 and 1 at 8 MiB (SHAPES/SIZES override),
# one job per build, shape and size (uneven_family.py -r 1, no file), the branch first in odd rounds and
# main first in even ones; the bench lock taken per job; verbose 10 and the probes' debug output kept;
# the load average before each job in load.txt.
# Output: measure/rROUND-{branch,main}-sSHAPE-SIZE/ here (OUT: elsewhere).  MAIN, BRANCH: the installations
# (default /work/main/_install and this tree's _install).  Root.
set -u
here=$(cd "$(dirname "$0")" && pwd); src=$(cd "$here/../../../../../.." && pwd)
declare -A prefix=([branch]=${BRANCH:-$src/_install} [main]=${MAIN:-/work/main/_install})
out=${OUT:-$here/measure}; mkdir -p "$out"
for r in "$@"; do
    for job in ${JOBS:-7:8388608 7:67108864 2:8388608 5:8388608 9:8388608 1:8388608}; do
        s=${job%%:*}; size=${job#*:}
        if ((r % 2)); then order="branch main"; else order="main branch"; fi
        for b in $order; do
            echo "round $r shape $s size $size $b: load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
            flock /tmp/topoar-bench.lock python3 "$src/tests/bench/uneven_family.py" --count 10 --seed 22 -r 1 \
                --only "$s" --sizes "$size" --prefix "${prefix[$b]}" --cluster-name s7m \
                --mpirun-arg="--mca coll_topoar_verbose 10" --mpirun-arg="-x TOPOAR_PROBE_DEBUG=1" \
                -o "$out/r$r-$b-s$s-$size" >/dev/null 2>&1 || echo "  failed (rc $?)" | tee -a "$out/load.txt"
        done
    done
done
