#!/bin/bash
# setup.sh CLUSTER ROUNDS PREFIX_A PREFIX_B -- set-up of a fresh world with no file on s1, s2 or s3
# (tests/cluster/topoar-cluster; root), builds A and B alternating, one job each per round (A first in
# odd rounds, B first in even ones); prints per job the verbose "probes took", the racks and host
# up-links found.  Run it under flock /tmp/topoar-bench.lock.  The cluster is brought down on exit.
set -u
cl=${1:?s1|s2|s3}; rounds=${2:?ROUNDS}; a=${3:?PREFIX_A}; b=${4:?PREFIX_B}
here=$(cd "$(dirname "$0")" && pwd); tc=$here/../../../../../../tests/cluster/topoar-cluster
name=oneway$cl
case $cl in
    s1) spec=(--nodes 2,3 --node-rate 200mbit); map=() ;;
    s3) spec=(--nodes 3,3 --node-rate 200mbit); map=() ;;
    s2) spec=(--racks "1,2;2,3" --node-rate 1gbit --rack-rate 200mbit); map=(--map-by node) ;;
    *) echo "setup.sh: unknown cluster $cl" >&2; exit 2 ;;
esac
"$tc" up --name "$name" "${spec[@]}" >/dev/null || exit 1
out=$(mktemp -d)
trap '"$tc" down --name "$name" >/dev/null 2>&1; rm -rf "$out"' EXIT
job() {
    local p=$1
    timeout -k 10 300 "$tc" run --name "$name" "${map[@]}" -- \
        --mca mca_base_component_path "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$p/lib/openmpi" \
        --mca coll topoar,tuned,libnbc,basic,self --mca coll_topoar_verbose 10 "$p/bin/topoar_info" >"$out/job" 2>&1
    local rc=$?
    local took racks hosts
    took=$(grep -o 'probes took [0-9.]* ms' "$out/job" | head -1 | awk '{print $3}')
    racks=$(grep -m1 -o '^world ([0-9]* racks' "$out/job" | awk '{print $2}' | tr -d '(')
    hosts=$(grep -m8 '  host .*up-link' "$out/job" | sed 's/.*host \([^ :]*\)[^:]*: up-link \([0-9.]* [MG]bit\/s\).*/\1=\2/' | tr '\n' ' ')
    rack_of=$(grep -m8 '  host .*up-link' "$out/job" | grep -o 'rack m[0-9]*' | tr '\n' ' ')
    uplinks=$(grep -m4 '  rack m[0-9]*: uplink' "$out/job" | sed 's/ *rack \(m[0-9]*\): uplink \([0-9.]* [MG]bit\/s\).*/\1=\2/' | tr '\n' ' ')
    echo "$cl $p rc=$rc probes_ms=${took:-?} racks=${racks:-0} [$rack_of] $hosts$uplinks| load $(cut -d' ' -f1-3 /proc/loadavg)"
}
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then job "$a"; job "$b"; else job "$b"; job "$a"; fi
done
