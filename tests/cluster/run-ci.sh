#!/bin/bash
# run-ci.sh: run one MPI test program on three emulated clusters and fail if
# it fails on any of them.  The clusters (tests/cluster/topoar-cluster):
#
#   a  one rack, nodes of 2+3 ranks, 200mbit node links
#   b  one rack, nodes of 1+2+3 ranks, 200mbit node links
#   c  two racks, nodes 1+2 | 2+3 ranks, 1gbit node links, 200mbit rack
#      uplinks, ranks mapped round-robin over nodes (--map-by node)
#
# usage: run-ci.sh [-t SECONDS] [-m 'MPIRUN ARGS'] [--] [PROGRAM [ARGS...]]
#   -t  time limit per cluster (default 120)
#   -m  extra mpirun arguments, split at blanks (e.g. component path and
#       --mca coll list); @RACKFILE@, @HOSTFILE@ and @NAME@ are replaced by
#       the cluster's rack file, hostfile and name (also in ARGS); the job
#       also gets TOPOAR_CLUSTER_{NAME,RACKFILE,HOSTFILE} in its environment
#   Without PROGRAM it builds tests/cluster/hostinfo.c with mpicc and runs it
#   (1 MiB float allreduce, 2 iterations).
#
# Exit status: 0 all passed, 1 a run failed, 77 (automake "skip") when this
# machine cannot emulate clusters (not root, no netns, no tbf, no mpirun).
# Namespaces are always removed, also on failure, timeout, INT or TERM.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tc_cmd=$here/topoar-cluster
limit=120
mpirun_args=""
while (($#)); do
    case $1 in
        -t) limit=${2:?}; shift 2 ;;
        -m) mpirun_args=${2?}; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        -*) echo "run-ci.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done

skip() { echo "run-ci.sh: SKIP: $*"; exit 77; }

[[ $(id -u) == 0 ]] || skip "needs root for network namespaces"
for c in ip tc unshare mpirun timeout; do
    command -v "$c" >/dev/null || skip "no $c"
done

base="ci$$"
base=${base:0:14}
names=("${base}a" "${base}b" "${base}c")
tmp=""
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
    local n
    for n in "${names[@]}"; do "$tc_cmd" down --name "$n" >/dev/null 2>&1; done
    ip netns del "topoar-${base}p-probe" 2>/dev/null
    [[ -n $tmp ]] && rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# can this kernel/container do netns + veth + tbf?
probe="topoar-${base}p-probe"
if ! { ip netns add "$probe" &&
       ip -n "$probe" link add p0 type veth peer name p1 &&
       tc -n "$probe" qdisc add dev p0 root tbf rate 1mbit burst 32kb latency 10ms
     } >/dev/null 2>&1; then
    skip "cannot create network namespaces with veth and tbf here"
fi
ip netns del "$probe"

if (($# == 0)); then
    command -v mpicc >/dev/null || skip "no mpicc"
    tmp=$(mktemp -d)
    mpicc -O2 -o "$tmp/hostinfo" "$here/hostinfo.c" || exit 1
    set -- "$tmp/hostinfo" 1048576 2
fi
prog=$1
shift
[[ $prog == */* ]] && prog=$(cd "$(dirname "$prog")" && pwd)/${prog##*/}

# shellcheck disable=SC2206  # -m is split at blanks on purpose
extra=($mpirun_args)
specs=(
    "--nodes 2,3 --node-rate 200mbit"
    "--nodes 1,2,3 --node-rate 200mbit"
    "--racks 1,2;2,3 --node-rate 1gbit --rack-rate 200mbit --map-by node"
)
failed=0
summary=()
for i in 0 1 2; do
    # shellcheck disable=SC2206
    spec=(${specs[$i]})
    echo "=== run-ci.sh: cluster ${names[$i]}: ${specs[$i]}"
    t0=$(date +%s.%N)
    timeout -k 20 "$limit" "$tc_cmd" exec --name "${names[$i]}" "${spec[@]}" \
        -- "${extra[@]}" "$prog" "$@"
    rc=$?
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if ((rc == 0)); then
        summary+=("PASS ${names[$i]} (${t}s): ${specs[$i]}")
    else
        [[ $rc == 124 ]] && echo "run-ci.sh: timed out after ${limit}s"
        summary+=("FAIL ${names[$i]} rc=$rc (${t}s): ${specs[$i]}")
        failed=1
    fi
done
echo "=== run-ci.sh summary ($prog)"
printf '%s\n' "${summary[@]}"
exit $failed
