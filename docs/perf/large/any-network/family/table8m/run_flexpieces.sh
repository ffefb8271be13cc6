#!/bin/bash
# run_flexpieces.sh -- the FlexReduce/flexrelay per-part pipelines (4ae6f62) with the 8 MiB ladder (8b7f1ad):
# before (c075311, ./before) and after (main at 4ae6f62), interleaved (live.conf), no file, 8 MiB, R rounds,
# on shapes whose tables pick flexreduce or flexrelay: seed 22 (the family) 1 and 2, seed 23 0, 2, 5 and 7.
set -u
cd /work/bench22
src=/work/main
python3 - > flexpieces.txt <<'PY'
import sys
sys.path.insert(0, "/work/main/tests/bench")
import uneven_family as u
for seed, picks in ((22, (1, 2)), (23, (0, 2, 5, 7))):
    shapes = u.draw(10 if seed == 22 else 8, seed, 8)
    for i in picks:
        s = shapes[i]
        spec = s.spec() + (["--map-by", "node"] if s.racks == 2 else [])
        print("%d-%d" % (seed, i), s.name, "%.4f" % s.bound(8 << 20), ",".join("%dmbit" % r for r in s.rates), " ".join(spec))
PY
while read id name bound rates spec; do
    python3 $src/tests/bench/compare.py --scenario fp-$id --config-file live.conf --cluster rt --node-rate $rates \
        --sizes 8388608:8388608 -i 2 -x 1 -I 2 -r ${R:-3} --no-plot -o out-fp-$id --prefix $src/_install $spec \
        > log-fp-$id.txt 2>&1
    echo "shape $id $name rc $?"
done < flexpieces.txt
