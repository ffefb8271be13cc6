# Sourced by run.sh here and docs/perf/unseen45/run.sh, with out and rounds
# set: one TAG BURST small|large -- UPARGS runs docs/perf/barrier/cmp.sh on
# a cluster of UPARGS with that token bucket ("" the tool's), 8 B-64 KiB
# (1,000 calls after 100) or 128 KiB-4 MiB (20 after 3), into $out/TAG-PART.txt.
cmp=$(dirname "${BASH_SOURCE[0]}")/../barrier/cmp.sh
export JOBS=${JOBS:-"on tuned han"}
one() {
  local tag=$1 burst=$2 part=$3; shift 4
  local sizes iters warm
  if [ "$part" = small ]; then sizes=8:65536; iters=1000; warm=100; else sizes=131072:4194304; iters=20; warm=3; fi
  echo "== $tag $part $(date +%T)" >&2
  TOPOAR_CLUSTER_BURST=$burst ITERS=$iters WARM=$warm bash "$cmp" "$(echo $part$tag | tr -cd a-z0-9 | cut -c1-16)" "$rounds" $sizes -- "$@" > "$out/$tag-$part.txt"
}
