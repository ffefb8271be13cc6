# markdown rows: size | tuned | han | notrial (ratio) | auto (ratio) for several runs
import csv,collections,sys
def load(d):
    t=collections.defaultdict(dict)
    for r in csv.DictReader(open(d+'/summary.csv')):
        t[int(r['size'])][r['config']]=float(r['median_us'])
    return t
runs=[load(d) for d in sys.argv[1:]]
def fmt(s):
    return f"{s} B" if s<1024 else f"{s//1024} KiB"
for s in sorted(runs[0]):
    cells=[]
    for t in runs:
        best=min(t[s]['tuned-default'],t[s]['han'])
        cells.append(f"{t[s]['topoar-notrial']/best:.2f} → {t[s]['topoar-auto']/best:.2f}")
    r=runs[-1][s]
    print(f"| {fmt(s)} | " + " | ".join(cells) + f" | {r['tuned-default']:.0f} / {r['han']:.0f} / {r['topoar-auto']:.0f} |")
