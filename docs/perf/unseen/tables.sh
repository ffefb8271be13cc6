#!/bin/bash
# tables.sh OLD_SIM NEW_SIM: auto's host table on every bench topology
# (tests/bench/topologies) at 5 us and 40 us per message, old -> new, one
# line each ("unchanged" when equal).  Default flight bound (64 KiB).
old=${1:?old topoar_sim}; new=${2:?new topoar_sim}
dir=$(dirname "$0")/../../../tests/bench/topologies
rules() { "$1" --topology "$2" --overhead "$3" --sizes 8 --algs leader --default-table 2>/dev/null |
  awk '/^default table/{f=1} f && /^allreduce/{s=$2; sub("size=","",s); if ($2 !~ /^size=/) s="all"; a=$NF; sub("alg=","",a); printf "%s %s;", s, a}'; }
for t in "$dir"/*.topo; do
  for o in 5us 40us; do
    a=$(rules "$old" "$t" $o); b=$(rules "$new" "$t" $o)
    n=$(basename "$t" .topo)
    if [ "$a" = "$b" ]; then echo "$n $o: unchanged"; else echo "$n $o: $a  ->  $b"; fi
  done
done
