#!/usr/bin/env python3
"""model_check.py -- the cost model's predictions against measured medians.

For each scenario directory (docs/perf/s1, ...) it runs topoar_sim on the
scenario's topology (tests/bench/topologies/SCENARIO.topo, the tree topoar
discovers on the emulated cluster) with the model settings of
docs/cost-model.md for TCP over the emulated links, and compares with the
medians of the forced algorithms in DIR/compare-model.csv (topoar_tune
--compare: every algorithm in one job) for sizes from --min up.

  /usr/bin/python3 tests/bench/model_check.py [--markdown] docs/perf/s1 docs/perf/s2 docs/perf/s3

Exit status 0; the last line says how many pairs lie within --tolerance.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MODEL = ["--overhead", "40us", "--wire-efficiency", "0.94", "--handshake-delay", "100ms"]


def size_label(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %siB" % (n // div, unit)
    return "%d B" % n


def measured(path, min_bytes):
    med = defaultdict(dict)  # algorithm -> bytes -> us
    with open(path) as f:
        for row in csv.DictReader(f):
            b = int(row["bytes"])
            if b >= min_bytes and row["entry"] not in ("auto", "previous"):
                med[row["entry"]][b] = float(row["median_us"])
    return med


def predicted(sim, topo, algs, sizes):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.csv")
        cmd = [sim, "--topology", topo, "--sizes", ",".join(str(s) for s in sizes), "--algs", ",".join(algs),
               "--csv", out] + MODEL
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        pred = defaultdict(dict)
        with open(out) as f:
            for row in csv.DictReader(f):
                pred[row["algorithm"]][int(row["bytes"])] = float(row["time_s"]) * 1e6
        return pred


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--sim", default=os.path.join(SRC, "_install", "bin", "topoar_sim"))
    ap.add_argument("--min", type=int, default=1 << 20, help="smallest size compared (bytes, default 1 MiB)")
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    pairs = []
    for d in a.dirs:
        name = os.path.basename(os.path.normpath(d))
        topo = os.path.join(HERE, "topologies", name + ".topo")
        path = os.path.join(d, "compare-model.csv")
        if not os.path.exists(topo) or not os.path.exists(path):
            print("%s: needs %s and %s" % (d, topo, path), file=sys.stderr)
            continue
        med = measured(path, a.min)
        algs = sorted(med)
        sizes = sorted({s for v in med.values() for s in v})
        if not sizes:
            continue
        pred = predicted(a.sim, topo, algs, sizes)
        for alg in algs:
            for s in sizes:
                if s in med[alg] and s in pred.get(alg, {}):
                    pairs.append((name, alg, s, pred[alg][s], med[alg][s]))
    if a.markdown:
        print("| scenario | algorithm | size | predicted ms | measured ms | predicted / measured |")
        print("|---|---|---|---|---|---|")
    for name, alg, s, p, m in pairs:
        cells = (name, alg, size_label(s), "%.1f" % (p / 1e3), "%.1f" % (m / 1e3), "%.2f" % (p / m))
        print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join("%-18s" % c for c in cells))
    inside = [x for x in pairs if abs(x[3] / x[4] - 1) <= a.tolerance]
    worst = max((abs(x[3] / x[4] - 1) for x in pairs), default=0)
    print("\n%d of %d pairs within %d%%, largest deviation %.0f%%"
          % (len(inside), len(pairs), round(a.tolerance * 100), worst * 100))
    for x in pairs:
        if abs(x[3] / x[4] - 1) > a.tolerance:
            print("  outside: %s %s %s predicted %.1f ms measured %.1f ms (%.2f)"
                  % (x[0], x[1], size_label(x[2]), x[3] / 1e3, x[4] / 1e3, x[3] / x[4]))


if __name__ == "__main__":
    main()
