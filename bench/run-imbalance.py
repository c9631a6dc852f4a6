#!/usr/bin/env python3
"""bench/run-imbalance.py: load imbalance inside a node (issue 14, benchmark 3). bench/imbalance.c
under plain MPICH, Toucan-MPI with one and with two workers per process, and AMPI with its load
balancer when present, side by side, on this machine's 2 cores.

  bench/run-imbalance.py [--runs 5] [--quick] [--args "-n 1024 -s 100 ..."] [--timeout 120]
                         [--vs 4[,8]] [--ampi HOME[,HOME]] [--balancers GreedyLB,none] [--no-ampi]
                         [--only NAME,...] [--wait-quiet SECONDS] [--update-results]

Builds bench/imbalance.c with mpicc, wrappers/toucancc (against a snapshot of the library) and
AMPI's ampicc into bench/out/imbalance/, then runs every configuration --runs times, interleaved
(run 1 of every configuration, then run 2, ...). Every configuration does the same total work
(imbalance.c's -n/-x/-s/-c; the world size only changes how it is cut):

  serial        mpirun -np 1 imbalance.mpich                        1 rank: all the work on one
                core; perfect balance on 2 cores = its time / 2
  mpich-2p      mpirun -np 2 imbalance.mpich                        2 ranks: 3/4 and 1/4 of the work
  toucan-2x1x4  TOUCAN_WORKERS=1 TOUCAN_V=4 mpirun -np 2 imbalance.toucan   8 ranks, a process
                (one core) each for the heavy ranks 0-3 and the light ranks 4-7
  toucan-1x2x4  TOUCAN_WORKERS=2 TOUCAN_V=4 mpirun -np 1 imbalance.toucan   8 ranks in one
                process of 2 workers: ranks 0-3 at home on worker 0, 4-7 on worker 1; work
                stealing may run any of them on either core
  ampi-B-LB-v4  charmrun +p2 ++local ++quiet imbalance.ampi +vp8 +balancer LB   8 virtual ranks
                on 2 PEs (one process of a multicore build, or 2 processes of a netlrts build),
                AMPI_Migrate every -m steps; LB "none" runs without +balancer

--vs 4,8 adds the Toucan and AMPI rows at other V (2V ranks; the same total work): finer
ranks let stealing balance better. The acceptance lines are those of V=4 (the issue's).

(`ranks` is checked in every RESULT line: a library that ignores TOUCAN_WORKERS runs the
1x2x4 layout as 4 ranks on one core, which is reported and left out of the acceptance lines.)

The table gives the median time of each, the ratio to perfect balance (serial / 2) and to the
1x2x4 layout, and the acceptance lines of issue 14's benchmark 3: 1x2x4 within 15% of perfect
balance, at least 1.3x faster than 2x1x4 and than MPICH -np 2, and faster than AMPI's best.
--update-results writes it between <!-- imbalance:begin --> and <!-- imbalance:end --> in
bench/RESULTS.md, with the command, the machine's load and the CPU time other processes took
during the runs (from /proc/stat, minus the runs' own).

Correctness: every run must print the same checksum (the serial one included: the result does
not depend on the layout); a difference or a failed run makes the exit status 1.

AMPI: --ampi lists AMPI builds (a Charm++ build directory each, holding bin/ampicc and
bin/charmrun); default $AMPI_HOME, else ampicc on PATH. A multicore build is the comparison
issue 14 asks for (one process, 2 PEs sharing its ranks, as Toucan's 1x2x4); a netlrts build
is the 2-process one. AMPI_RUN overrides the run template, as in run-overlap.py.

Output: bench/out/imbalance/results.jsonl (one line per run), runs/*.out|err.
Exit status: 0 when every run succeeded and the checksums agree, 1 otherwise, 2 on usage or
build errors.
"""

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out", "imbalance")
# ~2 s for the serial run here (1 core), ~1.5 s for the unbalanced 2-core layouts.
ARGS = "-n 1024 -x 256 -s 100 -w 10 -c 64 -r 3 -m 10"
QUICK_ARGS = "-n 256 -x 128 -s 20 -w 4 -c 16 -r 3 -m 5"
AMPI_RUN = "{runner} +p{n} ++local ++quiet {exe} +vp{nv} {args}"
BEGIN, END = "<!-- imbalance:begin -->", "<!-- imbalance:end -->"
V, W = 4, 2  # the layout of the acceptance lines: 8 ranks, 2 cores

# Shared helpers of the overlap driver (tool discovery, AMPI discovery, the run watchdog).
_spec = importlib.util.spec_from_file_location("run_overlap", os.path.join(HERE, "run-overlap.py"))
ov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ov)


def say(msg):
    print(f"run-imbalance: {msg}", file=sys.stderr, flush=True)


def die(msg, code=2):
    say(f"error: {msg}")
    sys.exit(code)


def ampi_builds(args):
    """[(name, ampicc, charmrun)] for --ampi (or $AMPI_HOME / ampicc on PATH)."""
    if args.no_ampi:
        return []
    homes = args.ampi
    if homes is None:
        found = ov.find_ampi()
        return [(ampi_name(found[0]), found[0], found[1])] if found else []
    out = []
    for h in homes:
        cc = os.path.join(h, "bin", "ampicc")
        if not os.access(cc, os.X_OK):
            die(f"--ampi {h}: no {cc}")
        out.append((ampi_name(cc), cc, os.path.join(h, "bin", "charmrun")))
    return out


def ampi_name(cc):
    """multicore, netlrts-tcp, ...: from the build directory's name."""
    d = os.path.basename(os.path.dirname(os.path.dirname(os.path.realpath(cc))))
    return d.replace("-linux-x86_64", "") or "ampi"


# ------------------------------------------------------------------------------ build
def build(ampis):
    bindir = os.path.join(OUT, "bin")
    libdir = os.path.join(OUT, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    lib = os.path.join(ROOT, "target", "release", "libtoucanmpi.so")
    if not os.path.exists(lib):
        die(f"{lib} is missing: build the library first (make, or cargo build --release)")
    shutil.copy2(lib, os.path.join(libdir, "libtoucanmpi.so"))  # one snapshot for all runs
    src = os.path.join(HERE, "imbalance.c")
    jobs = [("mpich", [ov.tool("MPICC", "mpicc", "mpicc.mpich")], bindir),
            ("toucan", [os.environ.get("TOUCANCC", os.path.join(ROOT, "wrappers", "toucancc"))], bindir)]
    for name, cc, _ in ampis:
        # a directory per build: ampicc (charmc) copies charmrun and ampirun into the current one
        d = os.path.join(bindir, f"ampi-{name}")
        os.makedirs(d, exist_ok=True)
        jobs.append((f"ampi-{name}", [cc], d))
    exes = {}
    env = dict(os.environ, TOUCAN_LIBDIR=libdir)
    for impl, cc, d in jobs:
        exe = os.path.join(d, f"imbalance.{impl.split('-')[0]}")
        cmd = cc + ["-O2", "-Wall", "-o", exe, src]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=d)
        if r.returncode != 0:
            die(f"building imbalance for {impl} failed:\n  {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
        exes[impl] = exe
    return exes


# ------------------------------------------------------------------------------ plan
def plan(args, ampis, exes):
    """Configurations: name, label, argv, extra environment, expected world size."""
    mpirun = ov.tool("MPIRUN", "mpirun", "mpirun.mpich")
    prog = shlex.split(args.args)
    confs = [
        dict(name="serial", label="MPICH -np 1 (all the work on one core)", ranks=1,
             argv=[mpirun, "-np", "1", exes["mpich"]] + prog, env={}),
        dict(name="mpich-2p", label="MPICH -np 2", ranks=2,
             argv=[mpirun, "-np", "2", exes["mpich"]] + prog, env={}),
    ]
    for v in args.vs:
        confs += [
            dict(name=f"toucan-2x1x{v}", label=f"Toucan 2×1×{v}", ranks=2 * v,
                 argv=[mpirun, "-np", "2", exes["toucan"]] + prog, env={"TOUCAN_WORKERS": "1", "TOUCAN_V": str(v)}),
            dict(name=f"toucan-1x{W}x{v}", label=f"Toucan 1×{W}×{v}", ranks=W * v,
                 argv=[mpirun, "-np", "1", exes["toucan"]] + prog, env={"TOUCAN_WORKERS": str(W), "TOUCAN_V": str(v)}),
        ]
    tmpl = os.environ.get("AMPI_RUN", AMPI_RUN)
    for v in args.vs:
        for name, _, runner in ampis:
            exe = exes[f"ampi-{name}"]
            for lb in args.balancers:
                extra = [] if lb == "none" else ["+balancer", lb]
                line = tmpl.format(runner=runner, n=2, nv=2 * v, exe=exe, args=shlex.join(extra + prog))
                confs.append(dict(name=f"ampi-{name}-{lb}-v{v}", v=v, ranks=2 * v, argv=shlex.split(line), env={},
                                  label=f"AMPI {name}, " + ("no balancer" if lb == "none" else lb) + f", +vp{2 * v}"))
    return confs


def run_one(conf, run, args):
    rundir = os.path.join(OUT, "runs")
    base = os.path.join(rundir, f"{conf['name']}.{run}")
    # Toucan's variables are set only where a row names them, so the caller's cannot leak in.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOUCAN_") or k == "TOUCAN_LIBDIR"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **conf["env"])
    report = base + ".json"
    if conf["name"].startswith("toucan"):
        env["TOUCAN_REPORT"] = report  # the runtime's own account: compute, blocked, steals
    t0 = time.monotonic()
    with open(base + ".out", "w") as out, open(base + ".err", "w") as err:
        p = subprocess.Popen(conf["argv"], env=env, stdout=out, stderr=err, start_new_session=True)
        rc, hang = ov.wait_run(p, base + ".out", args.timeout)
    rec = dict(name=conf["name"], run=run, rc=rc, wall=round(time.monotonic() - t0, 3))
    with open(base + ".out") as f:
        res = ov.parse_result(f.read())
    if hang:
        rec["finalize_hang"] = True
    if (rc == 0 or hang) and res:
        rec.update(time=float(res["time"]), checksum=res.get("checksum"), ranks=int(res.get("ranks", 0)),
                   migrate=res.get("migrate"))
    if os.path.exists(report):
        try:
            with open(report) as f:
                rec["report"] = json.load(f)
        except (OSError, ValueError) as e:
            rec["report_error"] = str(e)
    return rec


def steals(rep):
    """Total of every counter whose name mentions steals, anywhere in a TOUCAN_REPORT (the
    per-worker layout is the SMP core's to define); None when there is none."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if "steal" in k and isinstance(v, (int, float)):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(rep.get("total", rep))
    return sum(found) if found else None


# ------------------------------------------------------------------------------ load
def busy_ticks():
    with open("/proc/stat") as f:
        v = f.readline().split()
    return sum(int(v[i]) for i in (1, 2, 3, 6, 7, 8))  # user nice system irq softirq steal


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


def wait_quiet(limit):
    """Waits up to `limit` s until other processes use under 10% of the CPUs for 10 s."""
    if limit <= 0:
        return
    hz, n = os.sysconf("SC_CLK_TCK"), os.cpu_count()
    quiet = waited = 0
    say(f"waiting up to {limit} s for a quiet machine")
    while quiet < 10 and waited < limit:
        b0 = busy_ticks()
        time.sleep(1)
        waited += 1
        quiet = quiet + 1 if busy_ticks() - b0 < hz * n / 10 else 0
    say(f"quiet after {waited} s" if quiet >= 10 else f"still busy after {waited} s; running anyway")


# ------------------------------------------------------------------------------ table
def fmt(x, f="{:.3f}"):
    return "–" if x is None else f.format(x)


def tabulate(confs, recs, args):
    by = {}
    for r in recs:
        if "time" in r:
            by.setdefault(r["name"], []).append(r)
    med = {k: statistics.median(x["time"] for x in v) for k, v in by.items()}
    # a layout whose world is not what the row says (e.g. TOUCAN_WORKERS ignored) is shown, not judged
    wrong = {c["name"]: sorted({x["ranks"] for x in by.get(c["name"], [])} - {c["ranks"]}) for c in confs}
    wrong = {k: v for k, v in wrong.items() if v}
    perfect = med["serial"] / 2 if "serial" in med else None
    smp = f"toucan-1x{W}x{V}"
    tsmp = med.get(smp) if smp not in wrong else None
    lines = ["| configuration | ranks | T median (s) | min – max (s) | runs | T / perfect | T / Toucan 1×2×4 | "
             "Toucan report: compute / blocked (s), steals |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in confs:
        rs = by.get(c["name"], [])
        t = med.get(c["name"])
        ranks = "/".join(str(x) for x in sorted({x["ranks"] for x in rs})) or str(c["ranks"])
        if c["name"] in wrong:
            ranks += f" (expected {c['ranks']})"
        mm = f"{min(x['time'] for x in rs):.3f} – {max(x['time'] for x in rs):.3f}" if rs else "–"
        reps = [x["report"].get("total", {}) for x in rs if isinstance(x.get("report"), dict)]
        rcol = "–"
        if reps:
            comp = statistics.median(r.get("compute_s") or 0 for r in reps)
            blk = statistics.median(r.get("blocked_s") or 0 for r in reps)
            st = [steals(x["report"]) for x in rs if isinstance(x.get("report"), dict)]
            st = [x for x in st if x is not None]
            rcol = f"{comp:.2f} / {blk:.2f}" + (f", {statistics.median(st):.0f}" if st else "")
        lines.append(f"| {c['label']} | {ranks} | {fmt(t)} | {mm} | {len(rs)} | "
                     f"{fmt(t / perfect if t and perfect else None, '{:.2f}')} | "
                     f"{fmt(t / tsmp if t and tsmp else None, '{:.2f}')} | {rcol} |")
    lines.append("")
    lines.append(f"Perfect balance = serial / 2 = {fmt(perfect)} s. The last column is the runtime's own report "
                 "(TOUCAN_REPORT; medians over the runs: compute and blocked time summed over all subranks, and the "
                 "steals when the report counts them), which includes the warm-up and set-up.")
    acc = []
    if smp in wrong:
        acc.append(f"Toucan 1×{W}×{V} ran with {', '.join(map(str, wrong[smp]))} ranks instead of {W * V}: this library does not "
                   "support TOUCAN_WORKERS yet; no acceptance line")
    elif tsmp is not None:
        if perfect:
            q = tsmp / perfect
            acc.append(f"Toucan 1×{W}×{V} / perfect balance = {q:.3f} (within 15%: {'yes' if q <= 1.15 else 'no'})")
        for name, what in ((f"toucan-2x1x{V}", f"Toucan 2×1×{V}"), ("mpich-2p", "MPICH -np 2")):
            if name in med and name not in wrong:
                s = med[name] / tsmp
                acc.append(f"{what} / Toucan 1×{W}×{V} = {s:.2f}x (>= 1.3x: {'yes' if s >= 1.3 else 'no'})")
        # AMPI's best over every build, balancer and V run
        amp = [(med[c["name"]], c["label"]) for c in confs if c["name"].startswith("ampi-") and c["name"] in med
               and c["name"] not in wrong]
        if amp:
            ta, la = min(amp)
            acc.append(f"best AMPI ({la}) {ta:.3f} s; Toucan 1×{W}×{V} / best AMPI = {tsmp / ta:.3f} "
                       f"(faster: {'yes' if tsmp < ta else 'no'})")
    if acc:
        lines.append("\nAcceptance measures (issue 14, benchmark 3): " + "; ".join(acc) + ".")
    return "\n".join(lines)


def check(recs, confs):
    problems = []
    for r in recs:
        if "time" not in r:
            problems.append(f"{r['name']} run {r['run']}: failed (exit {r['rc']})")
    sums = {}
    for r in recs:
        if r.get("checksum"):
            sums.setdefault(r["checksum"], []).append(f"{r['name']} run {r['run']}")
    if len(sums) > 1:
        problems.append("checksums differ: " + "; ".join(f"{c} ({len(w)} runs, e.g. {w[0]})" for c, w in sums.items()))
    return problems


def update_results(section):
    path = os.path.join(HERE, "RESULTS.md")
    text = open(path).read()
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n## Load imbalance: imbalance\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


# ------------------------------------------------------------------------------ main
def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lst = lambda s: [x for x in s.replace(",", " ").split() if x]  # noqa: E731
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true", help=f"tiny problem ({QUICK_ARGS})")
    p.add_argument("--args", help=f"imbalance.c's arguments (default {ARGS!r})")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--ampi", type=lst, help="AMPI build directories (default $AMPI_HOME or ampicc on PATH)")
    p.add_argument("--balancers", type=lst, default=["GreedyLB", "none"])
    p.add_argument("--vs", type=lambda s: [int(x) for x in lst(s)], default=[V],
                   help=f"subranks per worker of the Toucan and AMPI rows (default {V}; acceptance at V={V})")
    p.add_argument("--no-ampi", action="store_true")
    p.add_argument("--only", type=lst, help="run only these configurations (names as in the table's runs/ files)")
    p.add_argument("--wait-quiet", type=int, default=0)
    p.add_argument("--update-results", action="store_true")
    a = p.parse_args()
    if a.runs < 1 or any(v < 1 for v in a.vs):
        p.error("--runs and --vs must be >= 1")
    if a.args is None:
        a.args = QUICK_ARGS if a.quick else ARGS
    return a


def main():
    args = parse_args()
    ampis = ampi_builds(args)
    if ampis:
        for name, cc, runner in ampis:
            say(f"AMPI {name}: {cc} (runs with {runner} +p2 ... +vp{2 * V})")
    else:
        say("AMPI: not found (no --ampi, AMPI_HOME unset, no ampicc on PATH): AMPI runs skipped")
    exes = build(ampis)
    confs = plan(args, ampis, exes)
    if args.only:
        confs = [c for c in confs if c["name"] in args.only or c["name"] == "serial"]
    shutil.rmtree(os.path.join(OUT, "runs"), ignore_errors=True)
    os.makedirs(os.path.join(OUT, "runs"))
    results = os.path.join(OUT, "results.jsonl")
    wait_quiet(args.wait_quiet)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    hz, ncpu = os.sysconf("SC_CLK_TCK"), os.cpu_count()
    t0, b0, c0 = time.monotonic(), busy_ticks(), children_cpu()
    recs = []
    total = len(confs) * args.runs
    with open(results, "w") as res:
        for run in range(1, args.runs + 1):
            for conf in confs:
                rec = run_one(conf, run, args)
                recs.append(rec)
                res.write(json.dumps(rec) + "\n")
                res.flush()
                st = f"{rec['time']:.4f} s, {rec['ranks']} ranks" if "time" in rec else f"FAILED (exit {rec['rc']})"
                if rec.get("finalize_hang"):
                    st += " (killed after its RESULT: hung in MPI_Finalize)"
                say(f"[{len(recs)}/{total}] {conf['name']} run {run}: {st}")
    elapsed = time.monotonic() - t0
    others = max(0.0, ((busy_ticks() - b0) / hz - (children_cpu() - c0)) / (elapsed * ncpu))
    problems = check(recs, confs)
    table = tabulate(confs, recs, args)
    cmdline = "bench/run-imbalance.py " + shlex.join(sys.argv[1:])
    head = [
        f"Produced by `{cmdline}` (from the repository root) on {started}.",
        "",
        f"- Machine: {os.cpu_count()} CPUs; load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in os.getloadavg())}; other processes used {100 * others:.0f}% of the "
        f"CPU time during the runs ({elapsed:.0f} s)" + (" — **disturbed, rerun on a quiet machine**" if others >= 0.1 else "") + ".",
        f"- Toucan-MPI: commit {ov.git_desc()}. AMPI: "
        + (", ".join(f"`{cc}`" for _, cc, _ in ampis) if ampis else "not found, skipped") + ".",
        f"- imbalance.c arguments `{args.args}`; median of {args.runs} run(s) per configuration, interleaved; time of "
        "the timed steps, barrier to barrier (s).",
        "- Runs:",
    ]
    for c in confs:
        envs = " ".join(f"{k}={v}" for k, v in c["env"].items())
        argv = [os.path.relpath(x, ROOT) if x.startswith(ROOT) else x for x in c["argv"]]
        head.append(f"  - `{(envs + ' ') if envs else ''}{shlex.join(argv)}` ({c['name']})")
    hangs = sum(1 for r in recs if r.get("finalize_hang"))
    if hangs:
        head.append(f"- {hangs} run(s) printed their RESULT and then hung in MPI_Finalize; killed, times kept.")
    if problems:
        head.append(f"- **{len(problems)} problem(s)**: " + "; ".join(problems[:6]))
    section = "\n".join(head) + "\n\n" + table
    print(section)
    if args.update_results:
        update_results(section)
        say("bench/RESULTS.md updated")
    for p in problems:
        say(f"PROBLEM: {p}")
    if not problems:
        say(f"all {len(recs)} runs succeeded; checksums agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
