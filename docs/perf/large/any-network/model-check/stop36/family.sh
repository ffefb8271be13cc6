#!/bin/bash
# family.sh SEED COUNT ROUNDS SIZE ITERS [JOBS] [ONLY]: shapes of the draw, OSU at SIZE, ITERS calls after max(2,ITERS/10); auto, check off, han.
seed=$1; count=$2; rounds=$3; size=$4; iters=$5; jobs=${6:-auto off han}; only=$7
cd /work/bench36; export LOGDIR=/work/bench36/logs
/usr/bin/python3 /work/bench36/famlist.py $seed $count > /tmp/fam-$seed.txt
for r in $(seq $rounds); do
 i=0
 while read -r label racks rest; do
  if [ -z "$only" ] || [[ ",$only," == *",$i,"* ]]; then
   eval "set -- $rest"
   ra=""; [ "$racks" = 1 ] && ra="--map-by node"
   RUNARGS="$ra" JOBS="$jobs" /work/bench36/longlarge.sh f$seed$i 1 $size:$size $iters -- "$@" < /dev/null | sed "s|^1|$r $seed-$i $label|"
  fi
  i=$((i+1))
 done < /tmp/fam-$seed.txt
done
