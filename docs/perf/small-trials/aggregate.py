import csv,collections,sys,math
def load(d):
    t=collections.defaultdict(dict)
    for r in csv.DictReader(open(d+'/summary.csv')):
        t[int(r['size'])][r['config']]=float(r['median_us'])
    return t
for sc in ['s1','s3','s2']:
    runs=[load(f'{d}/{sc}') for d in sys.argv[1:] if __import__('os').path.exists(f'{d}/{sc}/summary.csv')]
    ga=[];gn=[];worst_a=0;worst_n=0;over_a=0;over_n=0;tot=0
    for t in runs:
        for s in t:
            best=min(t[s]['tuned-default'],t[s]['han'])
            a=t[s]['topoar-auto']/best; n=t[s]['topoar-notrial']/best
            ga.append(math.log(a)); gn.append(math.log(n)); tot+=1
            over_a+= a>1.05; over_n+= n>1.05
            worst_a=max(worst_a,a); worst_n=max(worst_n,n)
    print(sc, len(runs),'runs: geomean auto %.3f notrial %.3f; cells >1.05: auto %d/%d notrial %d/%d; worst auto %.2f notrial %.2f'%(math.exp(sum(ga)/len(ga)),math.exp(sum(gn)/len(gn)),over_a,tot,over_n,tot,worst_a,worst_n))
