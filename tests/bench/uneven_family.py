#!/usr/bin/env python3
"""uneven_family.py -- auto against the bandwidth-weighted bound on random uneven-link shapes (issue 22).

A benchmark command, not a test.  Draws --count shapes from --seed: 2-4
hosts of 1-4 ranks (at most --max-ranks in all), every host link's rate from
100, 250, 400 and 1000 Mbit/s, one rack or two (two racks: a rack uplink
rate from the same set).  On each, as an emulated cluster
(tests/cluster/topoar-cluster), compare.py runs topoar auto with no file
(links measured at set-up, what a new user gets) -- and with --with-file
also auto given the cluster's rack file, and with --against the
competitors named (compare.py labels such as tuned-default,han) -- at
--sizes, in separate jobs over --repeats rounds, and the table prints each
median against the shape's bound (and auto over the best competitor):

  T_bound = max(M / min_i b_i, 2(d-1) M / sum_i b_i, M / uplink)

(docs/cost-model.md, "the tight lower bound"; the uplink term only with two
racks: each rack sends and receives M over it).  The wire carries TCP/IP
framing too (about 5 % at 1500-byte frames), so about 1.05x is the floor a
measurement can reach.

Usage (root; component built with ./setup.sh build):
  /usr/bin/python3 tests/bench/uneven_family.py --count 10 --seed 22 -r 3 -o /tmp/uf
  /usr/bin/python3 tests/bench/uneven_family.py --count 10 --seed 22 --list
  /usr/bin/python3 tests/bench/uneven_family.py --count 10 --seed 22 -r 1 --sizes 8M --against tuned-default,han
"""
import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from large_matrix import MiB, compare_cmd, read_summary, run_logged, write_report  # noqa: E402

RATES = [100, 250, 400, 1000]  # Mbit/s


class Shape:
    def __init__(self, ranks, rates, racks, uplink):
        self.ranks = ranks      # ranks per host
        self.rates = rates      # Mbit/s per host link
        self.racks = racks      # 1 or 2 (two: the first half of the hosts in rack 0)
        self.uplink = uplink    # Mbit/s, two racks only

    @property
    def name(self):
        n = "+".join(map(str, self.ranks)) + "@" + "/".join(map(str, self.rates))
        return n + ("-up%d" % self.uplink if self.racks == 2 else "")

    def spec(self):
        r = [str(x) for x in self.ranks]
        if self.racks == 1:
            return ["--nodes", ",".join(r)]
        k = (len(r) + 1) // 2
        return ["--racks", ",".join(r[:k]) + ";" + ",".join(r[k:]), "--rack-rate", "%dmbit" % self.uplink]

    def bound(self, size):
        b = [x * 1e6 / 8 for x in self.rates]
        d = len(b)
        t = max(size / min(b), 2 * (d - 1) * size / sum(b))
        if self.racks == 2:
            t = max(t, size / (self.uplink * 1e6 / 8))
        return t


def draw(count, seed, max_ranks):
    rnd = random.Random(seed)
    out = []
    while len(out) < count:
        d = rnd.randint(2, 4)
        ranks = [rnd.randint(1, 4) for _ in range(d)]
        if sum(ranks) > max_ranks:
            continue
        rates = [rnd.choice(RATES) for _ in range(d)]
        if len(set(rates)) == 1:
            continue  # uneven links only
        racks = 2 if d >= 3 and rnd.random() < 0.4 else 1
        uplink = rnd.choice(RATES) if racks == 2 else 0
        out.append(Shape(ranks, rates, racks, uplink))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--max-ranks", type=int, default=8, help="ranks of a shape at most (2 cores here)")
    ap.add_argument("--sizes", default="8M,64M", help="comma-separated sizes (K/M suffixes)")
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("-i", "--iters", type=int, default=2)
    ap.add_argument("-x", "--warmup", type=int, default=1)
    ap.add_argument("--with-file", action="store_true", help="also auto with the cluster's rack file")
    ap.add_argument("--against", default="",
                    help="competitors to time too, compare.py labels, comma separated (e.g. tuned-default,han): "
                         "the table adds their times and auto (no file) over the best of them")
    ap.add_argument("--prefix")
    ap.add_argument("--only", help="comma-separated shape numbers to run (the table still lists all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--cluster-name", default="uf")
    ap.add_argument("--mpirun-arg", action="append", default=[],
                    help="passed to compare.py (e.g. \"--mca coll_topoar_verbose 10\" to log the measured network)")
    ap.add_argument("-o", "--out", default="/tmp/topoar-uneven-family")
    args = ap.parse_args()

    def parse_size(s):
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1].upper(), 1)
        return int(s[:-1] if s[-1].upper() in "KMG" else s) * mult

    sizes = [parse_size(s) for s in args.sizes.split(",")]
    shapes = draw(args.count, args.seed, args.max_ranks)
    if args.list:
        for s in shapes:
            print(s.name, " ".join(s.spec()))
        return 0
    against = [c for c in args.against.split(",") if c]
    configs = ["topoar-nofile"] + (["topoar-auto"] if args.with_file else []) + against
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for idx, s in enumerate(shapes):
        cell = os.path.join(args.out, "shape%02d" % idx)
        if args.table_only or (args.only and str(idx) not in args.only.split(",")):
            continue
        rates = ",".join("%dmbit" % r for r in s.rates)
        # one compare.py per size (sizes need not be powers of two apart)
        for size in sizes:
            spec = s.spec() + (["--map-by", "node"] if s.racks == 2 else [])
            cmd = compare_cmd(s.name, configs, args, rates, (size, size), "%s-%d" % (cell, size), spec)
            cmd += ["--mpirun-arg=" + a for a in args.mpirun_arg]
            if run_logged(cmd, "shape %d %s, %d MiB" % (idx, s.name, size // MiB)):
                failed.append("%s %d" % (s.name, size))
    head = "| # | shape (ranks @ Mbit/s) | racks | size | bound (s) | auto, no file (s) | / bound |"
    if args.with_file:
        head += " auto, file (s) | / bound |"
    for c in against:
        head += " %s (s) | / bound |" % c
    if against:
        head += " auto / best of them |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    within = total = 0
    for idx, s in enumerate(shapes):
        for size in sizes:
            res = read_summary("%s-%d" % (os.path.join(args.out, "shape%02d" % idx), size))
            b = s.bound(size)
            row = "| %d | %s | %s | %d MiB | %.3f |" % (idx, "+".join(map(str, s.ranks)) + " @ " +
                                                        "/".join(map(str, s.rates)),
                                                        "1" if s.racks == 1 else "2, uplink %d" % s.uplink,
                                                        size // MiB, b)
            for c in configs:
                v = res.get((c, size))
                row += " %s | %s |" % ("-" if v is None else "%.3f" % v, "-" if v is None else "%.2f" % (v / b))
                if c == "topoar-nofile" and v is not None:
                    total += 1
                    within += v <= 1.10 * b
            if against:
                auto = res.get(("topoar-nofile", size))
                them = [v for v in (res.get((c, size)) for c in against) if v is not None]
                row += " %s |" % ("%.2f" % (auto / min(them)) if auto is not None and them else "-")
            lines.append(row)
    lines.append("")
    lines.append("auto (no file) within 1.10x the bound: %d of %d cells." % (within, total))
    return write_report(os.path.join(args.out, "family.md"), "\n".join(lines) + "\n", failed)


if __name__ == "__main__":
    sys.exit(main())
