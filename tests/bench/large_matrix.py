#!/usr/bin/env python3
"""large_matrix.py -- large messages over many emulated networks (issue 22, item 4).

A benchmark command, not a test: every cell of the matrix is one emulated
cluster (tests/cluster/topoar-cluster) -- hosts and ranks per host, link rate,
the token bucket of every shaped link -- and in it compare.py runs topoar
(auto, no file: what a new user gets), tuned's default, tuned's ring and han
as separate jobs, interleaved over --repeats rounds, medians of the rounds.
The output folder gets one compare.py folder per cell and matrix.md: per
cell and size the four medians, the payload bound, auto / best of tuned and
han, and auto / bound.

The payload bound of a cell, M bytes per rank (every host link and every
rack uplink carries its traffic each way at once):
  * d hosts behind one switch, link rates b_i: max(M / min b, 2(d-1) M / sum b)
    (each host sends and receives M at least; all hosts together move
    2(d-1)M over their links);
  * racks: also M / rack uplink rate (each rack sends and receives M).
Unshaped cells (veth at memory speed) have no bound.

Cells (name: hosts, rates, buckets), --set picks a list:
  quick   2+3 at 1 Gbit/s with 64 KiB and 5 ms buckets, 16-64 MiB
  default quick + 1+2+2 and 1+2+1+2 at 1 Gbit/s (64 KiB, 1 ms, 5 ms), 2+3 and
          1+2+2 at 200 Mbit/s (64 KiB, 5 ms; 16 MiB), racks 1,2;2,3 (1 Gbit/s
          hosts, 200 Mbit/s uplinks; 64 KiB, 5 ms; 16 MiB), unshaped 2+3 and
          1+2+1+2 (16-256 MiB)
  full    default + 1 ms everywhere, 256 MiB on the 1 Gbit/s cells, 1 GiB
          unshaped on 1+1
  racks   racks 1,2;2,3 (four hosts, 1 Gbit/s, 200 Mbit/s uplinks) at 64 MiB,
          64 KiB and 5 ms buckets (the default set has them at 16 MiB)

Usage (as root, with the component built: ./setup.sh build):
  /usr/bin/python3 tests/bench/large_matrix.py --set quick -r 3 -o /tmp/lm
  /usr/bin/python3 tests/bench/large_matrix.py --list
A cell that fails is reported and the rest go on.  Long: the default set
takes about an hour on a quiet 2-core machine; run it alone.
"""
import argparse
import csv
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "compare.py")
CONFIGS = ["topoar-nofile", "tuned-default", "tuned-ring", "han"]
COMPETITORS = ["tuned-default", "han"]   # the "best of tuned and han"

MiB = 1 << 20


def rate_bps(rate):
    """tc rate text -> bits per second (None: unshaped)."""
    if rate in (None, "none"):
        return None
    r = rate.lower()
    for suffix, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r.endswith(suffix):
            return float(r[: -len(suffix)]) * mult
    raise ValueError("bad rate " + rate)


def bucket_bytes(bucket, rate):
    """'64k' -> 65536; '1ms' / '5ms' -> that much traffic at the rate; None: the tool's default."""
    if bucket is None:
        return None
    if bucket.endswith("ms"):
        return max(1600, int(rate_bps(rate) / 8 * float(bucket[:-2]) / 1000))
    if bucket.endswith("k"):
        return int(bucket[:-1]) * 1024
    return int(bucket)


class Cell:
    def __init__(self, hosts, rate, bucket, sizes, racks=None, rack_rate=None):
        self.hosts = hosts            # "2,3" (one rack) or None with racks
        self.racks = racks            # "1,2;2,3"
        self.rate = rate              # host links
        self.rack_rate = rack_rate
        self.bucket = bucket          # "64k", "1ms", "5ms" or None (unshaped)
        self.sizes = sizes            # (min, max) bytes, doubling

    @property
    def name(self):
        where = ("racks" + self.racks.replace(",", "+").replace(";", "_")) if self.racks else self.hosts.replace(",", "+")
        link = self.rate if self.rate != "none" else "unshaped"
        if self.rack_rate:
            link += "-up" + self.rack_rate
        return where + "-" + link + ("-" + self.bucket if self.bucket else "")

    def host_list(self):
        spec = self.racks if self.racks else self.hosts
        return [int(x) for x in spec.replace(";", ",").split(",")]

    def bound(self, size):
        """Seconds: the payload bound (module docstring); None when unshaped."""
        b = rate_bps(self.rate)
        if b is None:
            return None
        d = len(self.host_list())
        byte_rate = b / 8
        t = max(size / byte_rate, 2 * (d - 1) * size / (d * byte_rate))
        if self.racks and self.rack_rate:
            t = max(t, size / (rate_bps(self.rack_rate) / 8))
        return t


def cells(which):
    out = []
    g = "1gbit"
    if which == "racks":
        for bucket in ("64k", "5ms"):
            out.append(Cell(None, g, bucket, (64 * MiB, 64 * MiB), racks="1,2;2,3", rack_rate="200mbit"))
        return out
    out.append(Cell("2,3", g, "64k", (16 * MiB, 64 * MiB)))
    out.append(Cell("2,3", g, "5ms", (16 * MiB, 64 * MiB)))
    if which == "quick":
        return out
    out.append(Cell("2,3", g, "1ms", (16 * MiB, 64 * MiB)))
    for hosts in ("1,2,2", "1,2,1,2"):
        for bucket in ("64k", "1ms", "5ms"):
            out.append(Cell(hosts, g, bucket, (16 * MiB, 64 * MiB)))
    for hosts in ("2,3", "1,2,2"):
        for bucket in ("64k", "5ms"):
            out.append(Cell(hosts, "200mbit", bucket, (16 * MiB, 16 * MiB)))
    for bucket in ("64k", "5ms"):
        out.append(Cell(None, g, bucket, (16 * MiB, 16 * MiB), racks="1,2;2,3", rack_rate="200mbit"))
    out.append(Cell("2,3", "none", None, (16 * MiB, 256 * MiB)))
    out.append(Cell("1,2,1,2", "none", None, (16 * MiB, 256 * MiB)))
    if which == "default":
        return out
    for c in out:
        if c.rate == g and c.bucket and not c.racks:
            c.sizes = (16 * MiB, 256 * MiB)
    for hosts in ("2,3", "1,2,2"):
        out.append(Cell(hosts, "200mbit", "1ms", (16 * MiB, 16 * MiB)))
    out.append(Cell(None, g, "1ms", (16 * MiB, 16 * MiB), racks="1,2;2,3", rack_rate="200mbit"))
    out.append(Cell("1,1", "none", None, (1024 * MiB, 1024 * MiB)))
    return out


def compare_cmd(scenario, configs, args, rate, sizes, out, spec):
    """The compare.py command of one cluster: `spec` its topoar-cluster shape
    (--nodes / --racks ... options), `sizes` (min, max) bytes; args gives
    the cluster name, iterations, warm-up, repeats, prefix and (if any)
    timeout."""
    cmd = [sys.executable, COMPARE, "--scenario", scenario, "--configs", ",".join(configs),
           "--cluster", args.cluster_name, "--node-rate", rate, "--sizes", "%d:%d" % sizes,
           "-i", str(args.iters), "-x", str(args.warmup), "-I", str(args.iters), "-r", str(args.repeats),
           "--no-plot", "-o", out] + spec
    if getattr(args, "timeout", None):
        cmd += ["--timeout", str(args.timeout)]
    if args.prefix:
        cmd += ["--prefix", args.prefix]
    return cmd


def run_logged(cmd, title, env=None):
    """Runs cmd, printing title, the command and its exit status and time."""
    print("== " + title, flush=True)
    print("   " + " ".join(cmd), flush=True)
    t0 = time.time()
    rc = subprocess.call(cmd, env=env)
    print("   rc %d, %.0f s" % (rc, time.time() - t0), flush=True)
    return rc


def write_report(path, text, failed):
    """Writes and prints a result table; 1 when some runs failed (listed)."""
    with open(path, "w") as f:
        f.write(text)
    print(text)
    if failed:
        print("failed: " + "; ".join(failed))
        return 1
    return 0


def run_cell(cell, args, outdir):
    env = dict(os.environ)
    burst = bucket_bytes(cell.bucket, cell.rate)
    if burst is not None:
        env["TOPOAR_CLUSTER_BURST"] = str(burst)
    else:
        env.pop("TOPOAR_CLUSTER_BURST", None)
    if cell.racks:
        spec = ["--racks", cell.racks, "--rack-rate", cell.rack_rate, "--map-by", "node"]
    else:
        spec = ["--nodes", cell.hosts]
    cmd = compare_cmd(cell.name, CONFIGS, args, cell.rate, cell.sizes, outdir, spec)
    return run_logged(cmd, "%s (bucket %s bytes)" % (cell.name, burst if burst is not None else "tool default"), env)


def read_summary(outdir):
    res = {}
    path = os.path.join(outdir, "summary.csv")
    if not os.path.exists(path):
        return res
    with open(path) as f:
        for row in csv.DictReader(f):
            res[(row["config"], int(row["size"]))] = float(row["median_us"]) / 1e6
    return res


def fmt(x):
    return "-" if x is None else "%.3f" % x


def table(cell_list, root):
    lines = ["| cell | size | auto (no file) | tuned | tuned ring | han | bound | auto / best(tuned, han) | auto / bound |",
             "|---|---|---|---|---|---|---|---|---|"]
    worst = []
    for c in cell_list:
        res = read_summary(os.path.join(root, c.name))
        size = c.sizes[0]
        while size <= c.sizes[1]:
            v = {k: res.get((k, size)) for k in CONFIGS}
            comp = [v[k] for k in COMPETITORS if v[k] is not None]
            best = min(comp) if comp else None
            auto = v["topoar-nofile"]
            bnd = c.bound(size)
            r_best = auto / best if auto and best else None
            r_bound = auto / bnd if auto and bnd else None
            lines.append("| %s | %d MiB | %s | %s | %s | %s | %s | %s | %s |" % (
                c.name, size // MiB, fmt(auto), fmt(v["tuned-default"]), fmt(v["tuned-ring"]), fmt(v["han"]),
                fmt(bnd), "-" if r_best is None else "%.2f" % r_best, "-" if r_bound is None else "%.2f" % r_bound))
            if r_best is not None:
                worst.append((r_best, c.name, size))
            size *= 2
    worst.sort(reverse=True)
    lines.append("")
    lines.append("Seconds per call, medians of the rounds; every configuration a separate job.")
    if worst:
        lines.append("Cells where auto is above 1.05x the best of tuned and han: %d of %d (worst %.2f, %s %d MiB)." % (
            sum(1 for w in worst if w[0] > 1.05), len(worst), worst[0][0], worst[0][1], worst[0][2] // MiB))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="default", choices=["quick", "default", "full", "racks"])
    ap.add_argument("--only", help="comma-separated cell names (see --list) to run from the set")
    ap.add_argument("--list", action="store_true", help="print the cells of the set and exit")
    ap.add_argument("-r", "--repeats", type=int, default=3)
    ap.add_argument("-i", "--iters", type=int, default=2, help="timed calls per size and job")
    ap.add_argument("-x", "--warmup", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--prefix", help="topoar install prefix (compare.py's default otherwise)")
    ap.add_argument("--cluster-name", default="lm")
    ap.add_argument("--table-only", action="store_true", help="rebuild matrix.md from an earlier -o folder")
    ap.add_argument("-o", "--out", default="/tmp/topoar-large-matrix")
    args = ap.parse_args()
    cl = cells(args.set)
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {c.name for c in cl}
        if unknown:
            sys.exit("large_matrix.py: no such cell in set %s: %s" % (args.set, ", ".join(sorted(unknown))))
        cl = [c for c in cl if c.name in want]
    if args.list:
        for c in cl:
            print("%-36s sizes %d-%d MiB, bucket %s" % (c.name, c.sizes[0] // MiB, c.sizes[1] // MiB,
                                                         bucket_bytes(c.bucket, c.rate)))
        return 0
    if os.geteuid() != 0 and not args.table_only:
        sys.exit("large_matrix.py: the emulated clusters need root")
    os.makedirs(args.out, exist_ok=True)
    failed = []
    if not args.table_only:
        for c in cl:
            if run_cell(c, args, os.path.join(args.out, c.name)) != 0:
                failed.append(c.name)
    return write_report(os.path.join(args.out, "matrix.md"), table(cl, args.out), failed)


if __name__ == "__main__":
    sys.exit(main())
