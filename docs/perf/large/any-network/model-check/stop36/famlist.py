import sys
sys.path.insert(0, "/work/main/tests/bench")
import uneven_family as uf
for s in uf.draw(int(sys.argv[2]), int(sys.argv[1]), 8):
    rates = ",".join("%dmbit" % r for r in s.rates)
    import shlex
    print(s.name, "1" if s.racks == 2 else "0", " ".join(shlex.quote(a) for a in s.spec()) + " --node-rate " + rates)
