#!/bin/bash
# cyc.sh NAME ROUNDS LO HI -- UPARGS: cycle.c (built as /work/exp/bar/cycle: OSU's number and the whole
# iteration), jobs on off tuned han
name=$1; rounds=$2; lo=$3; hi=$4; shift 5
. "$(dirname "$0")/jobs.sh"
for r in $(seq $rounds); do
 for job in ${JOBS:-on off tuned han}; do
  comp_for $job
  v=$(timeout 600 $tc run --name $name ${MAP:-} -- "${comp[@]}" /work/exp/bar/cycle $lo $hi 2>&1 | awk '$1+0>=1 && NF==3{printf "%s:%s/%s ", $1, $2, $3}')
  echo "$r $job $v"
 done
done
