import csv,collections,sys
d=collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1]+'/summary.csv')):
    d[int(r['size'])][r['config']]=float(r['median_us'])
rate=float(sys.argv[2])  # bytes/s of the link that must carry M each way
def fmt(s):
    if s<1024: return f"{s} B"
    if s<1<<20: return f"{s>>10} KiB"
    return f"{s>>20} MiB"
def t(us):
    return f"{us:.0f} us" if us<10000 else f"{us/1000:.1f} ms"
print("| size | auto | tuned default | tuned ring | han | bound | auto / best | auto / bound |")
print("|---|---|---|---|---|---|---|---|")
for s in sorted(d):
    r=d[s]; best=min(r['tuned-default'],r['tuned-ring'],r['han'])
    bound=s/rate*1e6
    bb = f"{r['topoar-auto']/bound:.2f}" if s>=1<<20 else "-"
    bnd = t(bound) if s>=1<<20 else "-"
    print(f"| {fmt(s)} | {t(r['topoar-auto'])} | {t(r['tuned-default'])} | {t(r['tuned-ring'])} | {t(r['han'])} | {bnd} | {r['topoar-auto']/best:.2f} | {bb} |")
