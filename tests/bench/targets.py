#!/usr/bin/env python3
"""targets.py -- auto against the best forced configuration, per size.

Reads the summary.csv files compare.py writes (tests/bench/scenarios.sh
runs) and prints, per scenario and message size, the medians of

  auto        topoar-auto (cost-model table, or on one host the hand-down)
  rules       topoar-rules (auto with the rules file topoar_tune wrote)
  best forced the fastest topoar-<algorithm> forced configuration
              (topoar-rd, -tree, -flexreduce, -hring, -ring when run)

and the ratios auto / best forced and rules / best forced, the ratio of
auto to the best non-topoar configuration (tuned-*, han), and, with
--tuned, auto / tuned-default (the one-host target).  A ratio above the
target is marked with '!'.

  /usr/bin/python3 tests/bench/targets.py docs/perf/s1/summary.csv ...
  /usr/bin/python3 tests/bench/targets.py --markdown docs/perf/*/summary.csv

With --compare it reads instead the in-job comparisons of scenarios.sh's
compare part (DIR/compare-model.csv and DIR/compare-rules.csv, written by
topoar_tune --compare): auto / best forced from the first, auto with the
rules / best forced from the second (each against the forced algorithms
measured in the same job), what auto ran, and auto / previous (tuned's
module) where measured.

  /usr/bin/python3 tests/bench/targets.py --compare --markdown docs/perf/s1 ...
"""
import argparse
import csv
import sys
from collections import defaultdict

FORCED = ("topoar-rd", "topoar-tree", "topoar-flexreduce", "topoar-hring", "topoar-ring")


def size_label(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def load(path):
    med = defaultdict(dict)  # config -> size -> median us
    scenario = None
    with open(path) as f:
        for row in csv.DictReader(f):
            scenario = row["scenario"]
            med[row["config"]][int(row["size"])] = float(row["median_us"])
    return scenario, med


def evaluate(med, auto_target, rules_target, tuned_target):
    sizes = sorted(med.get("topoar-auto", {}))
    rows, worst = [], defaultdict(float)
    for s in sizes:
        forced = [(med[c][s], c) for c in FORCED if s in med.get(c, {})]
        comp = [(v[s], c) for c, v in med.items() if not c.startswith("topoar") and s in v]
        if not forced:
            continue
        best, best_c = min(forced)
        auto = med["topoar-auto"][s]
        r = {"size": s, "auto": auto, "best": best, "best_c": best_c.replace("topoar-", ""),
             "auto_ratio": auto / best}
        if s in med.get("topoar-rules", {}):
            r["rules"] = med["topoar-rules"][s]
            r["rules_ratio"] = r["rules"] / best
        if comp:
            cbest, cname = min(comp)
            r["comp_ratio"], r["comp"] = auto / cbest, cname
        if tuned_target and s in med.get("tuned-default", {}):
            r["tuned_ratio"] = auto / med["tuned-default"][s]
        for k in ("auto_ratio", "rules_ratio", "tuned_ratio"):
            if k in r:
                worst[k] = max(worst[k], r[k])
        rows.append(r)
    return rows, worst


def load_compare(path):
    """bytes,entry,median_us,auto_ran -> (entry -> size -> us, size -> auto_ran)."""
    med, ran = defaultdict(dict), {}
    with open(path) as f:
        for row in csv.DictReader(f):
            med[row["entry"]][int(row["bytes"])] = float(row["median_us"])
            ran[int(row["bytes"])] = row["auto_ran"]
    return med, ran


def compare_ratios(med, ran):
    """size -> (auto / best forced, best forced name, auto / previous or None,
    choice / best forced or None).  The choice ratio is the median of the
    forced algorithm auto ran over the best forced median: whether auto
    picked the fastest, without the noise of auto's own samples."""
    out = {}
    for s, auto in med.get("auto", {}).items():
        forced = [(v[s], e) for e, v in med.items() if e not in ("auto", "previous") and s in v]
        if not forced:
            continue
        best, name = min(forced)
        prev = med.get("previous", {}).get(s)
        chosen = med.get(ran.get(s), {}).get(s)
        out[s] = (auto / best, name, auto / prev if prev else None, chosen / best if chosen else None)
    return out


def report_compare(dirs, a):
    import os
    for d in dirs:
        model_path, rules_path = os.path.join(d, "compare-model.csv"), os.path.join(d, "compare-rules.csv")
        if not os.path.exists(model_path):
            print("%s: no compare-model.csv" % d, file=sys.stderr)
            continue
        mm, mran = load_compare(model_path)
        model = compare_ratios(mm, mran)
        rules, rran = {}, {}
        if os.path.exists(rules_path):
            rm, rran = load_compare(rules_path)
            rules = compare_ratios(rm, rran)
        prev = any(v[2] is not None for v in model.values())
        head = ["size", "auto ran", "auto/best forced", "its choice/best", "rules ran", "rules/best forced",
                "its choice/best"]
        if prev:
            head.append("auto/previous")
        name = os.path.basename(os.path.normpath(d))
        if a.markdown:
            print("\n**%s** (%s, %s)\n" % (name, model_path, rules_path))
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
        else:
            print("\n%s" % name)
            print("  ".join("%-17s" % h for h in head))
        count, worst = defaultdict(int), defaultdict(float)

        def tally(key, v, target):
            if v is not None:
                count[key] += v <= target
                worst[key] = max(worst[key], v)

        for s in sorted(model):
            ra, best_name, rp, choice = model[s]
            cells = [size_label(s), mran.get(s, "-"), "%s (%s)" % (mark(ra, a.auto_target), best_name),
                     mark(choice, a.auto_target) if choice is not None else "-"]
            tally("auto", ra, a.auto_target)
            tally("choice", choice, a.auto_target)
            if s in rules:
                rr, rbest, _, rc = rules[s]
                cells += [rran.get(s, "-"), "%s (%s)" % (mark(rr, a.rules_target), rbest),
                          mark(rc, a.rules_target) if rc is not None else "-"]
                tally("rules", rr, a.rules_target)
                tally("rchoice", rc, a.rules_target)
            else:
                cells += ["-", "-", "-"]
            if prev:
                cells.append(mark(rp, 1.05) if rp is not None else "-")
                tally("prev", rp, 1.05)
            emit(cells, a.markdown, 17)
        summary = ("auto within %d%% of the best forced at %d of %d sizes (worst %.2f)"
                   % (round((a.auto_target - 1) * 100), count["auto"], len(model), worst["auto"]))
        if "choice" in worst:
            summary += " (its choice: %d of %d, worst %.2f)" % (count["choice"], len(model), worst["choice"])
        if rules:
            summary += "; rules within %d%% at %d of %d (worst %.2f" % (
                round((a.rules_target - 1) * 100), count["rules"], len(rules), worst["rules"])
            if "rchoice" in worst:
                summary += "; its choice: %d of %d, worst %.2f" % (count["rchoice"], len(rules), worst["rchoice"])
            summary += ")"
        if prev:
            summary += "; auto within 5%% of the previous module at %d of %d (worst %.2f)" % (
                count["prev"], len(model), worst["prev"])
        print(("\n" if a.markdown else "  ") + summary)


def emit(cells, markdown, width):
    print("| " + " | ".join(cells) + " |" if markdown else "  ".join("%-*s" % (width, c) for c in cells))


def mark(v, target):
    return ("%.2f" % v) + ("!" if target and v > target else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summaries", nargs="+")
    ap.add_argument("--auto-target", type=float, default=1.10)
    ap.add_argument("--rules-target", type=float, default=1.05)
    ap.add_argument("--tuned", action="store_true", help="also auto / tuned-default (one host, target 1.05)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--compare", action="store_true",
                    help="arguments are scenario directories with compare-model.csv / compare-rules.csv")
    a = ap.parse_args()
    if a.compare:
        report_compare(a.summaries, a)
        return
    for path in a.summaries:
        scenario, med = load(path)
        if "topoar-auto" not in med:
            print("%s: no topoar-auto configuration" % path, file=sys.stderr)
            continue
        tuned = a.tuned or "topoar-model" in med  # node4 runs carry topoar-model
        rows, worst = evaluate(med, a.auto_target, a.rules_target, tuned)
        head = ["size", "auto us", "best forced us", "auto/best", "rules/best", "auto/best other"]
        if tuned:
            head.append("auto/tuned")
        if a.markdown:
            print("\n**%s** (from %s)\n" % (scenario, path))
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
        else:
            print("\n%s (%s)" % (scenario, path))
            print("  ".join("%-15s" % h for h in head))
        n_auto = sum(1 for r in rows if r["auto_ratio"] <= a.auto_target)
        n_rules = sum(1 for r in rows if r.get("rules_ratio", 99) <= a.rules_target)
        for r in rows:
            cells = [size_label(r["size"]), "%.1f" % r["auto"], "%.1f (%s)" % (r["best"], r["best_c"]),
                     mark(r["auto_ratio"], a.auto_target),
                     mark(r["rules_ratio"], a.rules_target) if "rules_ratio" in r else "-",
                     "%.2f (%s)" % (r["comp_ratio"], r["comp"]) if "comp_ratio" in r else "-"]
            if tuned:
                cells.append(mark(r["tuned_ratio"], 1.05) if "tuned_ratio" in r else "-")
            emit(cells, a.markdown, 15)
        summary = ("auto within %d%% of the best forced at %d of %d sizes (worst %.2f)"
                   % (round((a.auto_target - 1) * 100), n_auto, len(rows), worst["auto_ratio"]))
        if "rules_ratio" in worst:
            summary += "; rules within %d%% at %d of %d (worst %.2f)" % (
                round((a.rules_target - 1) * 100), n_rules, len(rows), worst["rules_ratio"])
        if "tuned_ratio" in worst:
            summary += "; auto/tuned-default worst %.2f" % worst["tuned_ratio"]
        print(("\n" if a.markdown else "  ") + summary)


if __name__ == "__main__":
    main()
