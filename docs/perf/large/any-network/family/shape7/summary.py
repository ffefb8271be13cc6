#!/usr/bin/env python3
"""summary.py [DIR] -- per job of measure.sh's output (default measure/): seconds, auto's choice, whether the
probes found racks, the 1000 Mbit/s host of rack m0 (r0-n0) as measured, and the fan-ins (TOPOAR_PROBE_DEBUG)."""
import csv, glob, os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "measure")
for d in sorted(glob.glob(os.path.join(root, "r*-*-s*-*")), key=lambda p: (p.split("-")[-2:], p)):
    for runs in glob.glob(os.path.join(d, "shape*", "runs.csv")):
        row = next(csv.DictReader(open(runs)))
        logs = glob.glob(os.path.join(os.path.dirname(runs), "logs", "*nofile.err"))
        text = open(logs[0], errors="replace").read() if logs else ""
        racks = "racks" if "(rack m" in text else "no racks"
        h0 = re.search(r"host \S+-r0-n0[^:]*: up-link ([\d.]+ [MG]bit/s)", text)
        fans = ["%s>%s" % (m.group(1).replace(" ", "+"), m.group(3)) for m in
                re.finditer(r"^probe fan-in from ([\d ]+?)( \(shares[^)]*\))? best[^\n]*-> ([\d.]+) Mbit/s", text, re.M)]
        print("%-26s %8.3f s  %-10s %-8s r0-n0 %-14s fan-ins %s" % (
            os.path.basename(d), float(row["latency_us"]) / 1e6, row["algorithm"], racks,
            h0.group(1) if h0 else "?", " ".join(fans)))
