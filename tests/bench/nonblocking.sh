#!/bin/bash
# nonblocking.sh: the nonblocking-allreduce benchmark of issue 23
# (docs/nonblocking.md).  Not CI (about 5-10 minutes with the defaults).
#
#   tests/bench/nonblocking.sh [-o DIR] [-r REPEATS] [--parts overlap,s1,s2]
#                              [--configs topoar,libnbc] [-i ITERS]
#
# Parts (each brings its emulated cluster up and down, root needed):
#   overlap  1+1 ranks, 1 Gbit/s host links: OSU 7.4's osu_iallreduce -t 20
#            -m 64K:64M -T mpi_float, one job per configuration, the
#            configurations interleaved REPEATS times; then one validating
#            job (-c, 64 KiB-4 MiB) per configuration
#   s1       2 hosts, 2+3 ranks, 200 Mbit/s (tests/bench/scenarios.sh s1)
#   s2       2 racks, 1+2 | 2+3 ranks, 1 Gbit/s hosts, 200 Mbit/s between
#            the racks, --map-by node (scenarios.sh s2)
#            s1 and s2: per configuration topoar_osu_allreduce -N -t 20
#            (MPI_Iallreduce + MPI_Wait) and topoar_pipecg (nonblocking and
#            blocking in one job); topoar's blocking MPI_Allreduce
#            (topoar_osu_allreduce -a, whatever --configs says), 64 KiB-8 MiB
# Configurations: topoar = --mca coll topoar,tuned,libnbc,basic,self;
# libnbc = --mca coll tuned,libnbc,basic,self.
# Tables (medians over the repeats) on stdout and in DIR/summary.txt; every
# job's output in DIR (default: a new /tmp/topoar-nb-bench.XXXXXX).
# Runs under flock /tmp/topoar-bench.lock (taken here unless already held:
# TOPOAR_BENCH_LOCKED=1).  Environment: PREFIX (topoar's install, default
# ./_install), OSU_IALLREDUCE (the osu_iallreduce binary).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
args=("$@")
prefix=${PREFIX:-$src/_install}
cluster="$src/tests/cluster/topoar-cluster"
osu=${OSU_IALLREDUCE:-/work/ext/osu-install/libexec/osu-micro-benchmarks/mpi/collective/osu_iallreduce}
out="" repeats=2 parts=overlap,s1,s2 configs=topoar,libnbc iters=5
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=${2:?}; shift 2 ;;
        -r) repeats=${2:?}; shift 2 ;;
        -i) iters=${2:?}; shift 2 ;;
        --parts) parts=${2:?}; shift 2 ;;
        --configs) configs=${2:?}; shift 2 ;;
        *) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
for p in ${parts//,/ }; do
    case $p in overlap|s1|s2) ;; *) echo "nonblocking.sh: unknown part '$p' (overlap s1 s2)" >&2; exit 2 ;; esac
done
for c in ${configs//,/ }; do
    case $c in
        topoar|libnbc) ;;
        *) echo "nonblocking.sh: unknown configuration '$c' (topoar libnbc)" >&2; exit 2 ;;
    esac
done
if [ -z "${TOPOAR_BENCH_LOCKED:-}" ]; then
    exec env TOPOAR_BENCH_LOCKED=1 flock /tmp/topoar-bench.lock "$0" "${args[@]}"
fi
has() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
[ "$(id -u)" = 0 ] || { echo "nonblocking.sh: the emulated clusters need root" >&2; exit 1; }
if [ ! -d "$prefix/lib/openmpi" ]; then
    echo "nonblocking.sh: no topoar install under $prefix (./setup.sh build)" >&2; exit 1
fi
for b in "$prefix/bin/topoar_osu_allreduce" "$prefix/bin/topoar_pipecg"; do
    [ -x "$b" ] || { echo "nonblocking.sh: $b missing (./setup.sh build)" >&2; exit 1; }
done
if has overlap && [ ! -x "$osu" ]; then
    echo "nonblocking.sh: no osu_iallreduce at $osu (set OSU_IALLREDUCE)" >&2; exit 1
fi
out=${out:-$(mktemp -d /tmp/topoar-nb-bench.XXXXXX)}
mkdir -p "$out"
path="$(ls -d /usr/lib/*/openmpi/lib/openmpi3 2>/dev/null | head -n1):$prefix/lib/openmpi"
name=nb$$; name=${name:0:12}
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

coll_of() { [ "$1" = topoar ] && echo topoar,tuned,libnbc,basic,self || echo tuned,libnbc,basic,self; }
job() {  # job LOG CONFIG MAPPING... -- PROGRAM ARGS...: one mpirun, 10 minutes at most
    local log=$1 cfg=$2; shift 2
    local map=()
    while [ "$1" != -- ]; do map+=("$1"); shift; done
    shift
    echo "  $(date +%T) $(basename "$log")" >&2
    if ! timeout -k 10 600 "$cluster" run --name "$name" "${map[@]}" -- --mca mca_base_component_path "$path" \
        --mca coll "$(coll_of "$cfg")" "$@" >"$log" 2>&1; then
        echo "nonblocking.sh: FAILED: $log" >&2; tail -n 20 "$log" >&2; return 1
    fi
}
status=0
echo "nonblocking.sh: results in $out; configurations: $configs; $repeats repeats" | tee "$out/summary.txt"

if has overlap; then
    echo "== overlap: 1+1 ranks, 1 Gbit/s" >&2
    "$cluster" up --name "$name" --nodes 1,1 --node-rate 1gbit >"$out/overlap-up.log" 2>&1
    for r in $(seq 1 "$repeats"); do
        for cfg in ${configs//,/ }; do
            job "$out/overlap-$cfg-$r.log" "$cfg" -- "$osu" -t 20 -m 65536:67108864 -T mpi_float \
                -i "$iters" -x 1 || status=1
        done
    done
    for cfg in ${configs//,/ }; do
        if job "$out/overlap-$cfg-validate.log" "$cfg" -- "$osu" -c -t 20 -m 65536:4194304 -T mpi_float -i 3 -x 1 &&
            ! grep -q Fail "$out/overlap-$cfg-validate.log"; then
            echo "osu_iallreduce -c -T mpi_float ($cfg): Pass at every size" | tee -a "$out/summary.txt"
        else
            echo "osu_iallreduce -c -T mpi_float ($cfg): FAILED ($out/overlap-$cfg-validate.log)" |
                tee -a "$out/summary.txt"
            status=1
        fi
    done
    "$cluster" down --name "$name" >/dev/null 2>&1
fi

for sc in s1 s2; do
    has $sc || continue
    case $sc in
        s1) spec=(--nodes 2,3 --node-rate 200mbit); map=(); what="2 hosts, 2+3 ranks, 200 Mbit/s" ;;
        s2) spec=(--racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit); map=(--map-by node)
            what="racks 1+2 | 2+3, 1 Gbit/s hosts, 200 Mbit/s between racks" ;;
    esac
    echo "== $sc: $what" >&2
    "$cluster" up --name "$name" "${spec[@]}" >"$out/$sc-up.log" 2>&1
    for r in $(seq 1 "$repeats"); do
        for cfg in ${configs//,/ }; do
            job "$out/$sc-$cfg-nb-$r.log" "$cfg" "${map[@]}" -- "$prefix/bin/topoar_osu_allreduce" -N -t 20 \
                -m 65536:8388608 -i 20 -x 3 -I 10 -X 2 || status=1
            job "$out/$sc-$cfg-pipecg-$r.log" "$cfg" "${map[@]}" -- "$prefix/bin/topoar_pipecg" --mode both \
                --iters 1000 --repeats 3 --size 65536 || status=1
        done
        # the reference of the 1.05x target: topoar's blocking allreduce (in every run)
        job "$out/$sc-topoar-blocking-$r.log" topoar "${map[@]}" -- "$prefix/bin/topoar_osu_allreduce" \
            -m 65536:8388608 -i 20 -x 3 -I 10 -X 2 -a || status=1
    done
    "$cluster" down --name "$name" >/dev/null 2>&1
done

/usr/bin/python3 "$here/nonblocking_table.py" "$out" "$configs" "$parts" | tee -a "$out/summary.txt"
exit $status
