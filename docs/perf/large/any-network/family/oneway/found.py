#!/usr/bin/env python3
"""found.py DIR... -- per job of uneven_family.py output dirs: seconds at 8 MiB, auto's choice, the racks
and host up-links the probes found (verbose 10), the pair rates and fan-ins (TOPOAR_PROBE_DEBUG) and the
probe time."""
import csv, glob, os, re, sys

for d in sys.argv[1:]:
    for shape in sorted(glob.glob(os.path.join(d, "shape*"))):
        rows = list(csv.DictReader(open(os.path.join(shape, "runs.csv"))))
        for row in rows:
            log = os.path.join(shape, "logs", "r%s-topoar-nofile.err" % row["run"])
            out = os.path.join(shape, "logs", "r%s-topoar-nofile.out" % row["run"])
            text = "".join(open(f, errors="replace").read() for f in (log, out) if os.path.exists(f))
            hosts = re.findall(r"  host \S+?-(r\d-n\d)( \(rack m\d\))?: up-link ([\d.]+ [MG]bit/s)", text)
            ups = re.findall(r"  rack (m\d): uplink ([\d.]+ [MG]bit/s)", text)
            took = re.search(r"probes took ([\d.]+) ms", text)
            pairs = re.findall(r"probe peer (\d+) best[^>]*-> ([\d.]+) Mbit/s", text)
            fans = re.findall(r"probe fan-in from ([\d ]+) best[^>]*-> ([\d.]+) Mbit/s", text)
            racks = sorted(set(h[1].strip(" ()") for h in hosts if h[1]))
            print("%s %s %.3f s %s | racks: %s | %s%s | pairs %s | fan-ins %s | probes %s ms" % (
                os.path.basename(d), os.path.basename(shape)[:7], float(row["latency_us"]) / 1e6,
                row["algorithm"], len(racks) or "none",
                " ".join("%s%s=%s" % (h[0], "(" + h[1].strip(" ()").replace("rack ", "") + ")" if h[1] else "", h[2].replace(" Mbit/s", "").replace(" Gbit/s", "G")) for h in hosts),
                "".join(" up %s=%s" % (u[0], u[1].replace(" Mbit/s", "")) for u in ups),
                ",".join(p[1] for p in pairs), ",".join("%s>%s" % (f[0].strip().replace(" ", "+"), f[1]) for f in fans),
                took.group(1) if took else "?"))
