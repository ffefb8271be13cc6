#!/bin/bash
# run_seed23.sh -- the 8 MiB ladder on shapes the earlier work never saw: uneven_family.py's draw with seed 23
# (shape 3, two ranks, left out), 8 MiB, before and after interleaved (live.conf), 2 rounds, no file.
set -u
cd /work/bench22
src=/work/main
python3 - > seed23.txt <<'PY'
import sys
sys.path.insert(0, "/work/main/tests/bench")
import uneven_family as u
for i, s in enumerate(u.draw(8, 23, 8)):
    spec = s.spec() + (["--map-by", "node"] if s.racks == 2 else [])
    print(i, s.name, "%.4f" % s.bound(8 << 20), ",".join("%dmbit" % r for r in s.rates), " ".join(spec))
PY
while read i name bound rates spec; do
    [ "$i" = 3 ] && continue
    python3 $src/tests/bench/compare.py --scenario s23-$i --config-file live.conf --cluster rt --node-rate $rates \
        --sizes 8388608:8388608 -i 2 -x 1 -I 2 -r ${R:-2} --no-plot -o out-s23-$i --prefix $src/_install $spec \
        > log-s23-$i.txt 2>&1
    echo "shape $i $name rc $?"
done < seed23.txt
