import sys,glob,re,statistics
d=sys.argv[1]; cfgs=sys.argv[2].split(',')
data={}
for c in cfgs:
    for f in sorted(glob.glob(f"{d}/{c}.*.txt")):
        for line in open(f):
            m=re.match(r"^(\d+)\s+([\d.]+)\s*$",line)
            if m: data.setdefault(c,{}).setdefault(int(m.group(1)),[]).append(float(m.group(2)))
sizes=sorted(data[cfgs[0]].keys())
print("| size | "+" | ".join(f"{c}" for c in cfgs)+" | after/before (medians) | after/before (best) |")
print("|"+"---|"*(len(cfgs)+3))
for s in sizes:
    med={c:statistics.median(data[c][s]) for c in cfgs}; mn={c:min(data[c][s]) for c in cfgs}
    cells=[f"{med[c]:.0f} ({'/'.join(f'{x:.0f}' for x in data[c][s])})" for c in cfgs]
    print(f"| {s} | "+" | ".join(cells)+f" | {med['new']/med['base']:.2f} | {mn['new']/mn['base']:.2f} |")
