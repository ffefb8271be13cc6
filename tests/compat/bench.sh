#!/bin/bash
# tests/compat/bench.sh: topoar on another Open MPI against that Open MPI's
# own default and tuned, on the emulated clusters of scenarios s1 and s2
# (tests/bench/scenarios.sh), at a few sizes; one job per configuration,
# interleaved (tests/bench/compare.py).
#
#   tests/compat/bench.sh OMPI_PREFIX TOPOAR_PREFIX SCENARIO [-r REPEATS] [-o DIR] [--sizes "8 64K 8M"]
#
# OMPI_PREFIX: the Open MPI installation; TOPOAR_PREFIX: topoar built and
# installed against it (tests/compat/run.sh: WORK/NAME/topoar-install).
# Configurations:
#   topoar-auto   topoar on top of Open MPI's default coll set (so on 5.0
#                 han, or tuned where han stands aside, is what topoar
#                 hands down to), auto, with the cluster's rack file
#   ompi-default  Open MPI's default coll selection (5.0: han at priority 35)
#   tuned-default tuned, libnbc, basic, self only (tuned's fixed rules)
# 100 warm-up calls up to 1 MiB (auto's small-message contests, at most
# 72 calls per size class, are over before timing), 3 above; 200 timed
# calls, at most 0.5 s of them, 10 from 1 MiB.  Needs root (emulated
# cluster).  Results in DIR (default docs/perf/compat/bench-NAME-SCENARIO):
# per size a compare.py folder.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ $# -ge 3 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
ompi=$(cd "$1" && pwd) topoar=$(cd "$2" && pwd) scenario=$3
shift 3
repeats=5 out="" sizes="8 64K 8M"
while [ $# -gt 0 ]; do
    case $1 in
        -r) repeats=${2:?}; shift 2 ;;
        -o) out=${2:?}; shift 2 ;;
        --sizes) sizes=${2:?}; shift 2 ;;
        *) echo "bench.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $scenario in
    s1) spec=(--nodes 2,3 --node-rate 200mbit); map=() ;;
    s2) spec=(--racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit); map=(--map-by node) ;;
    *) echo "bench.sh: unknown scenario '$scenario' (s1 s2)" >&2; exit 2 ;;
esac
[ -f "$topoar/lib/openmpi/mca_coll_topoar.so" ] || { echo "bench.sh: no component in $topoar/lib/openmpi" >&2; exit 1; }
[ -x "$topoar/bin/topoar_osu_allreduce" ] || { echo "bench.sh: no $topoar/bin/topoar_osu_allreduce" >&2; exit 1; }

export PATH="$ompi/bin:$PATH" LD_LIBRARY_PATH="$ompi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OMPI_PKGLIBDIR=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
export OMPI_PKGLIBDIR
version=$(ompi_info --parsable | sed -n 's/^ompi:version:full://p')
out=${out:-$src/docs/perf/compat/bench-ompi-$version-$scenario}
note=""
if [ "${#map[@]}" -gt 0 ] && [ "${version%%.*}" -ge 5 ] 2>/dev/null; then
    # PRRTE (Open MPI 5+) maps --map-by node evenly (8 ranks on 4 hosts: 2
    # each) and refuses the 1-slot host, where 4.1 filled the slots round
    # robin; by slot the hosts get the same ranks (1, 2, 2, 3), consecutive.
    map=()
    note="; --map-by node dropped (PRRTE maps it evenly and refuses the 1-slot host): ranks by slot, same ranks per host"
fi
mkdir -p "$out"

cluster=$src/tests/cluster/topoar-cluster name=compat$scenario
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true' EXIT INT TERM
"$cluster" up --name "$name" "${spec[@]}" >/dev/null
{
    echo "Open MPI $version ($ompi), topoar $(git -C "$src" describe --always --dirty) ($topoar)"
    echo "scenario $scenario: ${spec[*]} ${map[*]}$note; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
} | tee "$out/README.txt"
for size in $sizes; do
    /usr/bin/python3 "$src/tests/bench/compare.py" --scenario "$scenario" --cluster "$name" "${map[@]}" \
        --prefix "$topoar" -r "$repeats" --sizes "$size:$size" -i 200 -x 100 -I 10 --bench-arg=-X --bench-arg=3 -b 0.5 \
        --config "topoar-auto=--mca mca_base_component_path {ompi_dir}:{prefix}/lib/openmpi --mca coll_topoar_rack_file @RACKFILE@" \
        --config "ompi-default=--mca mca_base_component_path {ompi_dir}" \
        --configs tuned-default --no-plot -o "$out/$size"
done
