#!/usr/bin/python3
"""compare.py -- run MPI_Allreduce configurations against each other.

Each configuration is a label plus extra mpirun arguments (which coll
component, which forced algorithm).  The driver runs
tools/topoar_osu_allreduce once per configuration and repeat, interleaved
(A B C A B C ...), so that slow drifts of the machine hit every
configuration alike.  It parses each table, then

  * prints the median latency per configuration and message size,
  * prints each configuration's ratio to the best non-topoar configuration
    ("competitor") at that size (below 1: faster than every competitor),
  * writes runs.csv (long format: scenario,config,size,run,latency_us,
    algorithm), summary.csv and a log-log PNG of latency against size.

A configuration that fails (non-zero exit, no table, failed validation) is
reported with the reason and the rest continue; a failed configuration is
not retried in later repeats unless --retry-failed is given.

Launchers:
  local (default)   mpirun --allow-run-as-root --oversubscribe
                    --mca mpi_yield_when_idle 1 -np N ...   (--launcher to
                    replace the prefix)
  --cluster NAME    tests/cluster/topoar-cluster run --name NAME -- ...
                    With --racks/--nodes the driver brings the emulated
                    cluster up first and down at the end; without, it must
                    already be up.

Run with the system Python, which has matplotlib:
  /usr/bin/python3 tests/bench/compare.py --np 4 -r 2 --sizes 8:1M \\
      --configs tuned-default,tuned-ring,tuned-rabenseifner
  /usr/bin/python3 tests/bench/compare.py --list-configs
"""

import argparse
import csv
import datetime
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
CLUSTER_SCRIPT = os.path.join(REPO, "tests", "cluster", "topoar-cluster")
BENCH_SOURCE = os.path.join(REPO, "tools", "topoar_osu_allreduce.c")
# Open MPI's own components: Debian's 4.1, unless OMPI_PKGLIBDIR names
# another installation's (tests/compat: the mpirun on PATH must match).
OMPI_COMPONENT_DIR = os.environ.get("OMPI_PKGLIBDIR",
                                    "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3")
DEFAULT_PREFIX = os.path.join(REPO, "_install")
LOCAL_LAUNCHER = ("mpirun --allow-run-as-root --oversubscribe "
                  "--mca mpi_yield_when_idle 1")

# {topoar} expands to the arguments that load topoar in front of tuned.
TOPOAR_ARGS = ("--mca mca_base_component_path {ompi_dir}:{prefix}/lib/openmpi "
               "--mca coll topoar,tuned,libnbc,basic,self")
TUNED_ONLY = "--mca coll tuned,libnbc,basic,self"

# label -> (mpirun arguments, note).  Labels starting with "topoar" are
# topoar's; all others are the competitors the ratios refer to.
BUILTIN_CONFIGS = [
    ("topoar-auto", "{topoar} --mca coll_topoar_allreduce_algorithm auto",
     "topoar, its own choice per size"),
    ("topoar-nofile", "{topoar_nofile} --mca coll_topoar_allreduce_algorithm auto",
     "topoar, its own choice per size, with no rack file on a cluster "
     "(links measured at set-up: coll_topoar_probe)"),
    ("topoar-ring", "{topoar} --mca coll_topoar_allreduce_algorithm ring",
     "topoar, forced flat ring"),
    ("topoar-hring", "{topoar} --mca coll_topoar_allreduce_algorithm hring",
     "topoar, forced hierarchical ring"),
    ("topoar-flexreduce",
     "{topoar} --mca coll_topoar_allreduce_algorithm flexreduce",
     "topoar, forced FlexReduce"),
    ("topoar-tree", "{topoar} --mca coll_topoar_allreduce_algorithm tree",
     "topoar, forced aggregation tree"),
    ("topoar-rd",
     "{topoar} --mca coll_topoar_allreduce_algorithm leader",
     "topoar, forced recursive doubling"),
    ("tuned-default", TUNED_ONLY,
     "Open MPI tuned, its fixed decision rules"),
    ("tuned-ring", TUNED_ONLY + " --mca coll_tuned_use_dynamic_rules 1 "
     "--mca coll_tuned_allreduce_algorithm 4",
     "Open MPI tuned, forced ring (algorithm 4)"),
    ("tuned-rabenseifner", TUNED_ONLY + " --mca coll_tuned_use_dynamic_rules 1"
     " --mca coll_tuned_allreduce_algorithm 6",
     "Open MPI tuned, forced Rabenseifner (algorithm 6)"),
    ("han", "--mca coll han,tuned,libnbc,basic,self --mca coll_han_priority 100",
     "Open MPI han (4.1: priority 0 by default, so raised; han disqualifies "
     "itself when all ranks share one node and tuned runs instead)"),
]

# forced label suffix -> the enum name topoar should report
FORCED_ALG = {"topoar-ring": "ring", "topoar-hring": "hring",
              "topoar-flexreduce": "flexreduce", "topoar-tree": "tree",
              "topoar-rd": "recursive_doubling"}


class Config:
    def __init__(self, label, args, note=""):
        self.label = label
        self.args_template = args
        self.note = note
        self.args = []
        self.is_topoar = label.startswith("topoar") or "topoar" in args
        self.failed = None   # reason of the first failure
        self.warnings = []

    def expand(self, prefix, on_cluster=False):
        topoar = TOPOAR_ARGS
        if on_cluster:
            # topoar-cluster replaces @RACKFILE@ with the cluster's rack
            # file (hosts, racks and the shaped link rates).
            topoar += " --mca coll_topoar_rack_file @RACKFILE@"
        text = self.args_template.replace("{topoar_nofile}", TOPOAR_ARGS)
        text = text.replace("{topoar}", topoar)
        text = text.replace("{ompi_dir}", OMPI_COMPONENT_DIR)
        text = text.replace("{prefix}", prefix)
        self.args = shlex.split(text)


# ---------------------------------------------------------------------------
# command line

def parse_size(text):
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("bad size '%s'" % text)
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[
        m.group(2).lower()]


def parse_range(text):
    lo, sep, hi = text.partition(":")
    if not sep:
        return 4, parse_size(lo)
    return parse_size(lo) if lo else 4, parse_size(hi)


def fmt_size(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def read_config_file(path):
    """Lines 'label: mpirun args', '#' comments, blank lines ignored.
    A line without ':' is an error (never silently skipped)."""
    configs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            label, sep, args = text.partition(":")
            label = label.strip()
            if not sep or not re.fullmatch(r"[A-Za-z0-9_.+-]+", label):
                sys.exit("%s:%d: expected 'label: mpirun args', got: %s"
                         % (path, lineno, line.rstrip()))
            configs.append(Config(label, args.strip()))
    return configs


def select_configs(args):
    if args.config_file:
        pool = read_config_file(args.config_file)
    else:
        pool = [Config(label, a, note) for label, a, note in BUILTIN_CONFIGS]
    extra = []
    for spec in args.config or []:
        label, sep, a = spec.partition("=")
        if not sep or not label:
            sys.exit("--config wants LABEL=MPIRUN-ARGS, got '%s'" % spec)
        extra.append(Config(label.strip(), a.strip()))
    chosen = pool + extra
    if args.configs:
        # --configs may name --config labels too (they then take that
        # place); extras it does not name run after the named ones.
        by_label = {c.label: c for c in pool + extra}
        chosen = []
        for label in args.configs.split(","):
            label = label.strip()
            if label not in by_label:
                sys.exit("unknown configuration '%s' (known: %s)"
                         % (label, ", ".join(by_label)))
            chosen.append(by_label[label])
        chosen += [c for c in extra if c not in chosen]
    labels = [c.label for c in chosen]
    dups = {l for l in labels if labels.count(l) > 1}
    if dups:
        sys.exit("duplicate configuration labels: %s" % ", ".join(sorted(dups)))
    if not chosen:
        sys.exit("no configurations selected")
    for c in chosen:
        c.expand(args.prefix, on_cluster=bool(args.cluster))
    return chosen


def build_parser():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("what to run")
    g.add_argument("--scenario", default="local",
                   help="name written into the CSV and the plot (default local)")
    g.add_argument("--configs", help="comma-separated labels to run, in this "
                   "order (default: all built-in or all of --config-file)")
    g.add_argument("--config", action="append", metavar="LABEL=ARGS",
                   help="an extra configuration; {topoar} expands to the "
                   "arguments that load topoar (repeatable)")
    g.add_argument("--config-file", help="file of 'label: mpirun args' lines")
    g.add_argument("--list-configs", action="store_true",
                   help="print the configurations and exit")
    g.add_argument("--prefix", default=os.environ.get("PREFIX", DEFAULT_PREFIX),
                   help="topoar install prefix (default $PREFIX or %s)"
                   % DEFAULT_PREFIX)
    g.add_argument("--bench", help="topoar_osu_allreduce binary (default: "
                   "PREFIX/bin/, tools/, _build/tools/; else it is compiled "
                   "with mpicc into the output folder)")
    g.add_argument("-r", "--repeats", type=int, default=3,
                   help="rounds over all configurations (default 3)")
    g.add_argument("--sizes", default="8:1M", type=parse_range,
                   help="MIN:MAX bytes, doubling (default 8:1M)")
    g.add_argument("-i", "--iters", type=int, default=100,
                   help="timed iterations per size (default 100)")
    g.add_argument("-x", "--warmup", type=int, default=10,
                   help="warmup iterations per size (default 10)")
    g.add_argument("-I", "--iters-large", type=int,
                   help="timed iterations from 1 MiB on (default min(-i,100))")
    g.add_argument("-b", "--time-budget", type=float,
                   help="seconds of timed iterations per size at most")
    g.add_argument("--exclude", metavar="RANKS",
                   help="leave these ranks out (the benchmark's -e)")
    g.add_argument("--validate", action="store_true",
                   help="validate every result (-c); a Fail fails the run")
    g.add_argument("--bench-arg", action="append", default=[],
                   help="extra benchmark argument, e.g. -l (repeatable)")
    g.add_argument("--mpirun-arg", action="append", default=[],
                   help="extra mpirun arguments for every configuration, "
                   "split like a shell would (repeatable)")
    g.add_argument("--timeout", type=float, default=900,
                   help="seconds per run before it is killed (default 900)")
    g.add_argument("--retry-failed", action="store_true",
                   help="run a failed configuration again in later repeats")

    g = p.add_argument_group("where to run")
    g.add_argument("--np", type=int,
                   help="ranks (-np); default 4 locally, all slots on a cluster")
    g.add_argument("--launcher", default=LOCAL_LAUNCHER,
                   help="local launcher prefix (default: %s)" % LOCAL_LAUNCHER)
    g.add_argument("--cluster", metavar="NAME",
                   help="run through tests/cluster/topoar-cluster on NAME")
    g.add_argument("--racks", help="bring the cluster up with this --racks spec")
    g.add_argument("--nodes", help="bring the cluster up with this --nodes spec")
    g.add_argument("--node-rate", help="cluster node link rate, e.g. 200mbit")
    g.add_argument("--rack-rate", help="cluster rack uplink rate")
    g.add_argument("--map-by", help="cluster run --map-by")
    g.add_argument("--cluster-arg", action="append", default=[],
                   help="extra 'topoar-cluster run' option (repeatable)")
    g.add_argument("--cluster-script", default=CLUSTER_SCRIPT)

    g = p.add_argument_group("output")
    g.add_argument("-o", "--out", help="output folder (default "
                   "/tmp/topoar-bench/SCENARIO-TIMESTAMP)")
    g.add_argument("--no-plot", action="store_true")
    g.add_argument("--dry-run", action="store_true",
                   help="print the commands, run nothing")
    return p


# ---------------------------------------------------------------------------
# running

def find_bench(args, out):
    if args.bench:
        if not os.access(args.bench, os.X_OK):
            sys.exit("--bench %s is not an executable file" % args.bench)
        return os.path.abspath(args.bench)
    for cand in (os.path.join(args.prefix, "bin", "topoar_osu_allreduce"),
                 os.path.join(REPO, "tools", "topoar_osu_allreduce"),
                 os.path.join(REPO, "_build", "tools", "topoar_osu_allreduce")):
        if os.access(cand, os.X_OK):
            return cand
    target = os.path.join(out, "topoar_osu_allreduce")
    cmd = ["mpicc", "-O2", "-o", target, BENCH_SOURCE, "-lm"]
    print("compiling the benchmark: %s" % " ".join(cmd), flush=True)
    if not args.dry_run:
        rc = subprocess.call(cmd)
        if rc != 0:
            sys.exit("could not compile %s (mpicc exit %d)" % (BENCH_SOURCE, rc))
    return target


def bench_args(args):
    lo, hi = args.sizes
    a = ["-m", "%d:%d" % (lo, hi), "-i", str(args.iters), "-x",
         str(args.warmup), "-f", "-a"]
    if args.iters_large:
        a += ["-I", str(args.iters_large)]
    if args.time_budget:
        a += ["-b", str(args.time_budget)]
    if args.exclude:
        a += ["-e", args.exclude]
    if args.validate:
        a += ["-c"]
    return a + args.bench_arg


def launch_prefix(args):
    np_args = ["-np", str(args.np)] if args.np else []
    if args.cluster:
        cmd = [args.cluster_script, "run", "--name", args.cluster]
        if args.map_by:
            cmd += ["--map-by", args.map_by]
        for extra in args.cluster_arg:
            cmd += shlex.split(extra)
        return cmd + ["--"] + np_args
    return shlex.split(args.launcher) + (np_args or ["-np", "4"])


def run_command(cmd, timeout):
    """Runs cmd in its own session; returns (rc, stdout, stderr, seconds).
    rc is None after a timeout (the whole process group is ended)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, time.time() - t0
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                out, err = "", ""
        return None, out or "", err or "", time.time() - t0
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        raise


def parse_table(text, validate):
    """Rows of the benchmark's table run with -f -a [-c]:
    size avg min max iterations [Pass|Fail] algorithm."""
    rows, ranks = [], None
    for line in text.splitlines():
        if line.startswith("# Ranks:"):
            m = re.match(r"# Ranks:\s*(\d+)", line)
            ranks = int(m.group(1)) if m else None
        if not line.strip() or line.startswith("#"):
            continue
        tok = line.split()
        want = 7 if validate else 6
        if len(tok) != want or not tok[0].isdigit():
            continue
        try:
            row = {"size": int(tok[0]), "avg": float(tok[1]),
                   "min": float(tok[2]), "max": float(tok[3]),
                   "iters": int(tok[4]), "alg": tok[-1],
                   "valid": tok[5] if validate else "-"}
        except ValueError:
            continue
        rows.append(row)
    return rows, ranks


def failure_reason(rc, out, err, rows, validate):
    if rc is None:
        return "timed out"
    text = err + out
    if "A requested component was not found" in text:
        m = re.search(r"Framework:\s*(\S+)\s*\n\s*Component:\s*(\S+)", text)
        what = "%s/%s" % (m.group(1), m.group(2)) if m else "?"
        return "MCA component not found (%s) -- not built or not installed?" % what
    if validate and any(r["valid"] != "Pass" for r in rows):
        bad = [fmt_size(r["size"]) for r in rows if r["valid"] != "Pass"]
        return "validation failed at %s" % ", ".join(bad)
    if rc != 0:
        # ORTE_ERROR_LOG lines are Open MPI's noise around a lost help text
        tail = [l for l in err.strip().splitlines() if l.strip()
                and not l.startswith("-----") and "ORTE_ERROR_LOG" not in l]
        if not tail and not rows:
            return ("exit status %d before any result (mpirun or MPI_Init "
                    "failed; see the .err log)" % rc)
        return "exit status %d: %s" % (rc, " | ".join(tail[-3:]) or
                                       "(no stderr)")
    if not rows:
        return "no result table in the output"
    return None


def preflight(cfg):
    """Why a configuration cannot run, found without running it: a coll
    component it asks for that is in no folder of its component path."""
    a = cfg.args
    path, colls = None, []
    for i in range(len(a) - 2):
        if a[i] == "--mca" and a[i + 1] == "mca_base_component_path":
            path = a[i + 2]
        if a[i] == "--mca" and a[i + 1] == "coll":
            colls = [c for c in a[i + 2].split(",") if c and c[0] != "^"]
    if path is None or "topoar" not in colls:
        return None
    dirs = [d for d in path.split(":") if d]
    if any(os.path.exists(os.path.join(d, "mca_coll_topoar.so")) for d in dirs):
        return None
    return ("mca_coll_topoar.so is in none of %s (build and install topoar "
            "first, or give --prefix)" % ":".join(dirs))


def check_algorithms(cfg, rows):
    if not cfg.is_topoar:
        return
    algs = {r["alg"] for r in rows}
    if algs == {"-"}:
        msg = ("topoar did not report its algorithm (MPI_T pvar "
               "coll_topoar_allreduce_last_algorithm missing)")
    else:
        want = FORCED_ALG.get(cfg.label)
        other = sorted({(r["alg"]) for r in rows} - {want}) if want else []
        if not want or not other:
            return
        sizes = [fmt_size(r["size"]) for r in rows if r["alg"] != want]
        msg = "forced %s, but ran %s at %s" % (want, "/".join(other),
                                              ",".join(sizes))
    if msg not in cfg.warnings:
        cfg.warnings.append(msg)
        print("    WARNING %s: %s" % (cfg.label, msg), flush=True)


# ---------------------------------------------------------------------------
# results

def summarise(configs, data, sizes):
    """data[label][size] = [latency per run]; returns the summary rows."""
    competitors = [c.label for c in configs if not c.is_topoar]
    summary = []
    for size in sizes:
        med = {c.label: statistics.median(data[c.label][size])
               for c in configs if data[c.label].get(size)}
        comp = {l: v for l, v in med.items() if l in competitors}
        best = min(comp, key=comp.get) if comp else None
        for c in configs:
            vals = data[c.label].get(size)
            if not vals:
                continue
            summary.append({
                "config": c.label, "size": size, "median_us": med[c.label],
                "min_us": min(vals), "max_us": max(vals), "n": len(vals),
                "best_competitor": best or "",
                "ratio": med[c.label] / comp[best] if best else None})
    return summary


def print_tables(configs, summary, sizes):
    labels = [c.label for c in configs if any(s["config"] == c.label
                                              for s in summary)]
    if not labels:
        print("\nno results")
        return
    cell = {(s["config"], s["size"]): s for s in summary}
    w = max(12, max(len(l) for l in labels) + 2)

    def table(title, fmt, key, extra=None):
        print("\n" + title)
        head = "%-8s" % "size" + "".join("%*s" % (w, l) for l in labels)
        if extra:
            head += "  " + extra[0]
        print(head)
        for size in sizes:
            line = "%-8s" % fmt_size(size)
            any_val = False
            for l in labels:
                s = cell.get((l, size))
                v = key(s) if s else None
                any_val |= v is not None
                line += "%*s" % (w, fmt % v if v is not None else "-")
            if extra:
                line += "  " + extra[1](size)
            if any_val:
                print(line)

    table("median latency (us) over runs", "%.2f", lambda s: s["median_us"])
    if any(s["ratio"] is not None for s in summary):
        best = {s["size"]: s["best_competitor"] for s in summary}
        table("ratio to the best non-topoar configuration at each size "
              "(< 1: faster)", "%.3f", lambda s: s["ratio"],
              ("best competitor", lambda size: best.get(size, "")))


def write_csvs(out, scenario, runs, summary):
    runs_csv = os.path.join(out, "runs.csv")
    with open(runs_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "config", "size", "run", "latency_us",
                    "algorithm"])
        for r in runs:
            w.writerow([scenario, r["config"], r["size"], r["run"],
                        "%.3f" % r["latency_us"], r["algorithm"]])
    sum_csv = os.path.join(out, "summary.csv")
    with open(sum_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "config", "size", "runs", "median_us",
                    "min_us", "max_us", "best_competitor",
                    "ratio_to_best_competitor"])
        for s in summary:
            w.writerow([scenario, s["config"], s["size"], s["n"],
                        "%.3f" % s["median_us"], "%.3f" % s["min_us"],
                        "%.3f" % s["max_us"], s["best_competitor"],
                        "" if s["ratio"] is None else "%.4f" % s["ratio"]])
    return runs_csv, sum_csv


def plot(out, scenario, configs, summary, title_extra):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("no plot: %s (run with /usr/bin/python3)" % e)
        return None
    have_ratio = any(s["ratio"] is not None for s in summary
                     if s["config"] in {c.label for c in configs
                                        if c.is_topoar})
    nrows = 2 if have_ratio else 1
    fig, axes = plt.subplots(nrows, 1, figsize=(9, 5.5 + 3 * (nrows - 1)),
                             sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2][:nrows]})
    ax = axes[0][0]
    colors = {}
    for c in configs:
        pts = sorted((s["size"], s["median_us"], s["min_us"], s["max_us"])
                     for s in summary if s["config"] == c.label)
        if not pts:
            continue
        x = [p[0] for p in pts]
        style = "-" if c.is_topoar else "--"
        line, = ax.plot(x, [p[1] for p in pts], style, marker="o",
                        markersize=3, label=c.label)
        colors[c.label] = line.get_color()
        ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts],
                        color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("latency (us), median; band: min-max over runs")
    ax.set_title("MPI_Allreduce (float sum) -- %s%s" % (scenario, title_extra))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    if have_ratio:
        ax2 = axes[1][0]
        for c in configs:
            if not c.is_topoar:
                continue
            pts = sorted((s["size"], s["ratio"]) for s in summary
                         if s["config"] == c.label and s["ratio"] is not None)
            if pts:
                ax2.plot([p[0] for p in pts], [p[1] for p in pts], "-",
                         marker="o", markersize=3, label=c.label,
                         color=colors.get(c.label))
        ax2.axhline(1.0, color="k", linewidth=0.8)
        ax2.set_ylabel("ratio to best competitor")
        ax2.grid(True, which="both", alpha=0.3)
        ax2.legend(fontsize=8, ncol=2)
    bottom = axes[-1][0]
    bottom.set_xlabel("message size (bytes)")
    ticks = sorted({s["size"] for s in summary})
    if ticks:
        step = max(1, len(ticks) // 12)
        bottom.set_xticks(ticks[::step])
        bottom.set_xticklabels([fmt_size(t) for t in ticks[::step]])
    fig.tight_layout()
    path = os.path.join(out, "latency.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------

def cluster_up(args):
    spec = ["--racks", args.racks] if args.racks else ["--nodes", args.nodes]
    cmd = [args.cluster_script, "up", "--name", args.cluster] + spec
    if args.node_rate:
        cmd += ["--node-rate", args.node_rate]
    if args.rack_rate:
        cmd += ["--rack-rate", args.rack_rate]
    print("bringing the cluster up: %s" % " ".join(map(shlex.quote, cmd)),
          flush=True)
    if subprocess.call(cmd) != 0:
        sys.exit("could not bring cluster '%s' up" % args.cluster)


def cluster_down(args):
    subprocess.call([args.cluster_script, "down", "--name", args.cluster])


def main(argv=None):
    args = build_parser().parse_args(argv)
    configs = select_configs(args)
    if args.list_configs:
        for c in configs:
            print("%-20s %s%s" % (c.label, " ".join(map(shlex.quote, c.args)),
                                 "\n%-20s (%s)" % ("", c.note) if c.note else ""))
        return 0
    if args.repeats < 1 or args.iters < 1 or args.warmup < 0:
        sys.exit("-r and -i must be >= 1, -x >= 0")
    if (args.racks or args.nodes) and not args.cluster:
        sys.exit("--racks/--nodes need --cluster NAME")
    lo, hi = args.sizes
    sizes = []
    s = lo
    while s <= hi:
        if s >= 4:   # the benchmark skips sizes below one float
            sizes.append(s)
        s *= 2
    if not sizes:
        sys.exit("no message size >= 4 bytes in --sizes")

    out = args.out or os.path.join(
        "/tmp/topoar-bench", "%s-%s" % (args.scenario, datetime.datetime.now(
        ).strftime("%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    bench = find_bench(args, out)
    prefix = launch_prefix(args)
    extra_mpirun = [t for a in args.mpirun_arg for t in shlex.split(a)]
    bargs = bench_args(args)

    def term_handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, term_handler)

    brought_up = False
    data = {c.label: {} for c in configs}
    runs, ranks_seen = [], None
    total = args.repeats * len(configs)
    t_start = time.time()
    cmdlog = open(os.path.join(out, "commands.txt"), "a")
    for c in configs:
        c.failed = preflight(c)
        if c.failed:
            print("configuration %s cannot run: %s" % (c.label, c.failed),
                  flush=True)
    try:
        if args.cluster and (args.racks or args.nodes) and not args.dry_run:
            cluster_up(args)
            brought_up = True
        k = 0
        for rep in range(args.repeats):
            for c in configs:
                k += 1
                cmd = prefix + c.args + extra_mpirun + [bench] + bargs
                cmd_text = " ".join(map(shlex.quote, cmd))
                cmdlog.write("# run %d %s\n%s\n" % (rep, c.label, cmd_text))
                cmdlog.flush()
                tag = "[%d/%d] run %d/%d %-20s" % (k, total, rep + 1,
                                                   args.repeats, c.label)
                if args.dry_run:
                    print("%s\n    %s" % (tag, cmd_text))
                    continue
                if c.failed and not args.retry_failed:
                    print("%s skipped (failed before)" % tag,
                          flush=True)
                    continue
                print(tag, end=" ", flush=True)
                rc, so, se, secs = run_command(cmd, args.timeout)
                base = os.path.join(out, "logs", "r%d-%s" % (rep, c.label))
                with open(base + ".out", "w") as f:
                    f.write(so)
                with open(base + ".err", "w") as f:
                    f.write(se)
                rows, ranks = parse_table(so, args.validate)
                reason = failure_reason(rc, so, se, rows, args.validate)
                if reason:
                    c.failed = c.failed or reason
                    print("FAILED (%.1f s): %s\n    command: %s\n    logs: "
                          "%s.{out,err}" % (secs, reason, cmd_text, base),
                          flush=True)
                    continue
                print("ok (%.1f s, %d sizes)" % (secs, len(rows)), flush=True)
                ranks_seen = ranks_seen or ranks
                check_algorithms(c, rows)
                for r in rows:
                    data[c.label].setdefault(r["size"], []).append(r["avg"])
                    runs.append({"config": c.label, "size": r["size"],
                                 "run": rep, "latency_us": r["avg"],
                                 "algorithm": r["alg"]})
    finally:
        cmdlog.close()
        if brought_up:
            cluster_down(args)
    if args.dry_run:
        return 0

    summary = summarise(configs, data, sizes)
    print_tables(configs, summary, sizes)
    runs_csv, sum_csv = write_csvs(out, args.scenario, runs, summary)
    extra = ", %s ranks" % ranks_seen if ranks_seen else ""
    extra += ", %d repeat(s)" % args.repeats
    png = None if args.no_plot else plot(out, args.scenario, configs, summary,
                                         extra)
    failed = [c for c in configs if c.failed]
    print("\nscenario %s: %d configuration(s), %d run(s) in %.0f s"
          % (args.scenario, len(configs), total, time.time() - t_start))
    for c in failed:
        print("FAILED configuration %s: %s" % (c.label, c.failed))
    for c in configs:
        for w in c.warnings:
            print("warning %s: %s" % (c.label, w))
    print("runs:    %s\nsummary: %s" % (runs_csv, sum_csv))
    if png:
        print("plot:    %s" % png)
    print("logs:    %s" % os.path.join(out, "logs"))
    if not runs:
        return 1
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
