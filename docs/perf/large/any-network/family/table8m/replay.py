#!/usr/bin/env python3
"""replay.py LOG... -- the measured tree each job's verbose log printed, as a topology file; the
default table with the old ladder (--table-max 2M) and the new one; the choice at 8 and 64 MiB."""
import re, subprocess, sys, os
SIM = "/work/main/_build/tools/topoar_sim"
unit = {"Gbit/s": "Gbit", "Mbit/s": "Mbit", "GB/s": "GB/s", "MB/s": "MB/s", "kbit/s": "kbit"}
def tree(text):
    blocks = [m.start() for m in re.finditer(r"^world \(", text, re.M)]
    for b in reversed(blocks):
        lines = text[b:].split("\n")[1:]
        out = []
        for l in lines:
            m = re.match(r"^(\s*)(rack|node|ranks?) (.*?)(?: \(.*?\))? up ([\d.]+) (\S+) ([\d.]+) (us|ns|ms)$", l)
            if not m:
                break
            ind, kind, name, bw, u, lat, lu = m.groups()
            kind = "ranks" if kind.startswith("rank") else kind
            out.append("%s%s %s bw=%s%s lat=%s%s" % (ind, kind, name, bw, unit[u], lat, lu))
        nxt = lines[len(out)] if len(out) < len(lines) else ""
        if "measured" in nxt:
            return "\n".join(out) + "\n"
    return None
def table(topo, ov, mx):
    r = subprocess.run([SIM, "--topology", topo, "--sizes", "8", "--algs", "tree", "--overhead", ov,
                        "--default-table", "--table-max", mx], capture_output=True, text=True)
    t = r.stdout[r.stdout.find("default table"):]
    rules = [l.split() for l in t.split("\n") if l.startswith("allreduce")]
    def pick(b):
        for ru in rules:
            if not ru[1].startswith("size="):
                return ru[-1][4:]
            lo, hi = ru[1][5:].split("-")
            conv = lambda s: int(float(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]]) if s and s[-1] in "KMG" else (int(s) if s else 1 << 62)
            if conv(lo) <= b < conv(hi):
                return ru[-1][4:]
        return "-"
    return pick(8 << 20), pick(64 << 20)
for log in sys.argv[1:]:
    text = open(log, errors="replace").read()
    t = tree(text)
    if not t:
        continue
    ov = re.findall(r"per-message software cost: ([\d.]+) us measured", text)
    ov = (ov[-1] + "us") if ov else "40us"
    ran = re.findall(r"-> (\w+) \(cost model\)", text)
    f = "/tmp/t22/logs/%s.topo" % re.sub(r"[^\w]", "_", log)[-80:]
    open(f, "w").write(t)
    old = table(f, ov, "2M"); new = table(f, ov, "8M")
    import csv, glob
    ranalg = "?"
    rc = os.path.join(os.path.dirname(os.path.dirname(log)), "runs.csv")
    if os.path.exists(rc):
        rows = list(csv.DictReader(open(rc)))
        if rows:
            ranalg = rows[0].get("algorithm", "?") + " %.3f" % (float(rows[0]["latency_us"]) / 1e6)
    print("ran %-18s" % ranalg, end=" ")
    print("%-70s ov %-8s old %s/%s new %s/%s %s" % (log[-70:], ov, old[0], old[1], new[0], new[1], "CHANGED" if old != new else ""))
