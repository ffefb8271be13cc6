#!/usr/bin/env python3
"""perturb.py OLD_SIM NEW_SIM: auto's host table, old -> new, on copies of
the seed-22 family's and s1-s3's topologies (tests/bench/topologies) with
every host and rack link lowered by up to 25 % (or raised by up to 5 %) at
random and a per-message cost of 10, 15, 25 or 40 us: 8 copies each, seed
7.  Prints every copy whose table differs and the count.  Stop 44 ran it
with the topoar_sim of 6538611 (old) and of d31eacb (new): 3 of 104 changed.
"""
import glob
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGIES = os.path.join(HERE, "..", "..", "..", "tests", "bench", "topologies")


def rules(sim, topo, overhead):
    out = subprocess.run([sim, "--topology", topo, "--overhead", overhead, "--sizes", "8", "--algs", "leader",
                          "--default-table"], capture_output=True, text=True).stdout
    found, table = False, []
    for line in out.splitlines():
        found = found or line.startswith("default table")
        if found and line.startswith("allreduce"):
            m = re.search(r"size=(\S+)", line)
            table.append((m.group(1) if m else "all") + " " + line.split("alg=")[1])
    return "; ".join(table)


def main():
    old, new = sys.argv[1], sys.argv[2]
    random.seed(7)
    names = sorted(glob.glob(os.path.join(TOPOLOGIES, "family-*.topo")))
    names += [os.path.join(TOPOLOGIES, s + ".topo") for s in ("s1", "s2", "s3")]
    changed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.topo")
        for name in names:
            text = open(name).read()
            for _ in range(8):
                lowered = re.sub(r"bw=([\d.]+)Mbit",
                                 lambda m: "bw=%.1fMbit" % (float(m.group(1)) * random.uniform(0.75, 1.05)), text)
                lowered = re.sub(r"bw=([\d.]+)Gbit(?=\s+lat=\d+us\n\s+(?:ranks|node))",
                                 lambda m: "bw=%.2fGbit" % (float(m.group(1)) * random.uniform(0.75, 1.05)), lowered)
                with open(copy, "w") as f:
                    f.write(lowered)
                overhead = random.choice(["10us", "15us", "25us", "40us"])
                a, b = rules(old, copy, overhead), rules(new, copy, overhead)
                total += 1
                if a != b:
                    changed += 1
                    print(os.path.basename(name), overhead, "\n  old", a, "\n  new", b)
    print("changed", changed, "of", total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
