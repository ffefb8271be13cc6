#!/usr/bin/env python3
"""Tables of tests/bench/nonblocking.sh: medians over the repeats.

usage: nonblocking_table.py DIR CONFIGS PARTS
DIR holds the jobs' logs (overlap-CFG-R.log: osu_iallreduce;
SC-CFG-nb-R.log: topoar_osu_allreduce -N; SC-topoar-blocking-R.log;
SC-CFG-pipecg-R.log: topoar_pipecg --mode both)."""
import glob
import os
import re
import statistics
import sys


def rows(path):
    """Numeric table rows of an OSU-style log: {size: [floats]}."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].isdigit():
                vals = []
                for p in parts[1:]:
                    try:
                        vals.append(float(p))
                    except ValueError:
                        break
                out[int(parts[0])] = vals
    return out


def median_table(pattern, col):
    """{size: median of column col over the files matching pattern}."""
    per = {}
    for path in sorted(glob.glob(pattern)):
        for size, vals in rows(path).items():
            if col < len(vals):
                per.setdefault(size, []).append(vals[col])
    return {s: statistics.median(v) for s, v in per.items()}


def human(size):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= div:
            return f"{size // div} {unit}"
    return f"{size} B"


def fmt(x, spec="{:.0f}"):
    return "-" if x is None else spec.format(x)


def pipecg(pattern):
    """(nonblocking, blocking) medians of us/iter over the files."""
    nb, bl = [], []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            for line in f:
                m = re.match(r"(nonblocking|blocking)\s+median\s+([0-9.]+)", line)
                if m:
                    (nb if m.group(1) == "nonblocking" else bl).append(float(m.group(2)))
    return (statistics.median(nb) if nb else None, statistics.median(bl) if bl else None)


def main():
    d, configs, parts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    if "overlap" in parts:
        # osu_iallreduce columns after the size: Overall, Compute, Pure Comm., Overlap
        print("\noverlap (1+1 ranks, 1 Gbit/s), osu_iallreduce -t 20 -T mpi_float, medians over the repeats")
        tabs = {c: [median_table(os.path.join(d, f"overlap-{c}-[0-9]*.log"), i) for i in range(4)]
                for c in configs}
        head = f"{'size':>8}"
        for c in configs:
            head += f" | {c + ' overall':>16} {'compute':>9} {'comm':>9} {'overlap%':>8}"
        print(head)
        sizes = sorted(set().union(*[set(tabs[c][0]) for c in configs]))
        for s in sizes:
            line = f"{human(s):>8}"
            for c in configs:
                t = tabs[c]
                line += (f" | {fmt(t[0].get(s)):>16} {fmt(t[1].get(s)):>9} {fmt(t[2].get(s)):>9}"
                         f" {fmt(t[3].get(s), '{:.1f}'):>8}")
            print(line)
        print("(times in us)")
    for sc in ("s1", "s2"):
        if sc not in parts:
            continue
        what = {"s1": "2 hosts 2+3, 200 Mbit/s", "s2": "racks 1+2 | 2+3, 1 Gbit/s, 200 Mbit/s between racks"}[sc]
        print(f"\n{sc} ({what}): MPI_Iallreduce + MPI_Wait (Pure Comm.) and blocking MPI_Allreduce, "
              "medians over the repeats, us")
        # topoar_osu_allreduce -N columns: Overall, Compute, Pure Comm., Overlap
        nb = {c: median_table(os.path.join(d, f"{sc}-{c}-nb-[0-9]*.log"), 2) for c in configs}
        ov = {c: median_table(os.path.join(d, f"{sc}-{c}-nb-[0-9]*.log"), 3) for c in configs}
        bl = median_table(os.path.join(d, f"{sc}-topoar-blocking-[0-9]*.log"), 0)
        head = f"{'size':>8} | {'topoar blocking':>15}"
        for c in configs:
            head += f" | {c + ' Iallreduce+Wait':>24} {'/blocking':>9} {'overlap%':>8}"
        if "topoar" in configs and "libnbc" in configs:
            head += f" | {'libnbc/topoar nb':>16}"
        print(head)
        sizes = sorted(set().union(*[set(nb[c]) for c in configs], set(bl)))
        for s in sizes:
            t_bl = bl.get(s)
            line = f"{human(s):>8} | {fmt(t_bl):>15}"
            for c in configs:
                t = nb[c].get(s)
                line += (f" | {fmt(t):>24} {fmt(t / t_bl if t and t_bl else None, '{:.3f}'):>9}"
                         f" {fmt(ov[c].get(s), '{:.1f}'):>8}")
            if "topoar" in configs and "libnbc" in configs:
                t_nb, t_l = nb["topoar"].get(s), nb["libnbc"].get(s)
                line += f" | {fmt(t_l / t_nb if t_l and t_nb else None, '{:.2f}'):>16}"
            print(line)
        for c in configs:
            n, b = pipecg(os.path.join(d, f"{sc}-{c}-pipecg-[0-9]*.log"))
            print(f"topoar_pipecg ({c} coll list): nonblocking {fmt(n, '{:.1f}')} us/iter, "
                  f"blocking {fmt(b, '{:.1f}')} us/iter (medians of the jobs' medians)")


if __name__ == "__main__":
    main()
