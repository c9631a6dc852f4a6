#!/usr/bin/env python3
"""bench/run-overlap.py: the overlap benchmarks (jacobi3d, cannon2d), every variant, plain
MPICH, Toucan-MPI at several V and AMPI when present, side by side, on an emulated interconnect.

  bench/run-overlap.py [--apps jacobi3d,cannon2d,jacobif,jacobiput] [--scaling strong,weak] [--vs 1,2,4,8]
                       [--rates 1gbit,5gbit,10gbit] [--runs 3] [--np 2] [--quick]
                       [--no-check] [--timeout 300] [--update-results] [--mpich-at-v]
                       [--workers W] [--baseline DIR]

Builds bench/jacobi3d.c and bench/cannon2d.c with mpicc, wrappers/toucancc and (when found)
AMPI's ampicc into bench/out/overlap/bin (--apps jacobif: the Fortran stencil bench/jacobif.f90,
with mpif90 and wrappers/toucanfort, no AMPI row; --apps jacobiput: jacobi3d.c run with
`-c put`, its faces by MPI_Put and one MPI_Win_fence per iteration), then, for each rate, runs every configuration --runs
times, interleaved (run 1 of every configuration, then run 2, ...):

  MPICH   mpirun -np N APP -v VARIANT ...            (N processes: the plain MPI program)
  Toucan  TOUCAN_V=V mpirun -np N APP -v VARIANT ... (N processes x V subranks), with
          TOUCAN_REPORT=<json> so the runtime's own overlap report is kept
  Toucan (UCX defaults)  the same at V=1 (strong scaling) with UCX_RNDV_THRESH=auto: over
          TCP Toucan raises UCX's eager limit (README, UCX_RNDV_THRESH), which plain MPICH
          does not; this row is Toucan's own cost at V=1 with the real MPI set up as MPICH's
  AMPI    charmrun +p N ++local ++quiet APP +vp N*V -v VARIANT ...  (only when AMPI is found)
  Toucan N/W×W  with --workers W (SMP mode, issue 14): TOUCAN_WORKERS=W TOUCAN_V=V
          mpirun -np N/W APP ..., the same N*V ranks in N/W processes of W workers each
          (--workers 2 at N = 2: one process of 2 workers beside 2 processes of 1 worker)
  Toucan (baseline)  with --baseline DIR: the Toucan row at V=1, built with DIR's
          wrappers/toucancc against DIR's target/release/libtoucanmpi.so (a built checkout of
          the previous main): A/B of the library in one interleaved set (issue 14,
          benchmark 1: no cost at W=1)

for each V of --vs, each application, scaling and variant (original, toucan, nocomm, overlap;
see bench/overlap.h). A rate other than `none` runs inside bench/netns.sh (a network namespace
whose loopback is rate-limited with tbf; MPICH forced onto TCP), which first checks that the
limit applies (--no-check skips that); `none` runs on the machine as it is (shared memory).

Tables (Markdown, printed and, with --update-results, written between <!-- overlap:begin -->
and <!-- overlap:end --> in bench/RESULTS.md) give per configuration the median time of each
variant, the speedup T_ref_original / T and the share of communication hidden
(T_ref_original - T) / (T_ref_original - T_ref_nocomm). The reference is plain MPICH at N
processes for strong scaling (same problem: this is what overdecomposition gains), and the
row's own original and nocomm for weak scaling (the problem grows with V). A plot of the share
hidden against V (strong scaling, per application and rate) goes to overlap.png (gnuplot).

Correctness is checked on every run: all variants but nocomm must give the same checksum,
across implementations and (strong scaling) across V, and cannon2d's result must verify;
every run must have N*V ranks (a library that ignores TOUCAN_WORKERS would not). A mismatch is
reported and makes the exit status 1. With --workers, each strong-scaling table ends with
issue 14's benchmark 4 line: Toucan N/W×W / Toucan N×1 at the same V (no slower).

AMPI: found as `ampicc` on PATH or $AMPI_HOME/bin/ampicc; its runs use `charmrun` from the same
directory (not `ampirun`, which runs one rank per PE), as "{runner} +p{n} ++local ++quiet {exe}
+vp{nv} {args}": N processes of a netlrts build (N PEs of one process for a multicore build),
started here without ssh, holding N*V virtual ranks. Inside the namespace (a rate other than
`none`) a netlrts build gets the runtime options +cma_disable +noCMAForZC first in {args}:
without them Charm++ moves messages between the processes of a host with Cross Memory Attach,
past the loopback. Use a netlrts build with the `tcp` option there (the default UDP one got a
fifth of the rate here). AMPI_RUN overrides the template. When AMPI is absent the script says
so and skips it.

Sizes: --quick uses tiny problems (seconds in all: for checking that everything works);
otherwise each run takes a few seconds on 2 cores. JACOBI_STRONG, JACOBI_WEAK, CANNON_STRONG
and CANNON_WEAK (environment) replace the size arguments, e.g. JACOBI_STRONG="-g 192 -i 60".

Output: bench/out/overlap/results.jsonl (one line per run), runs/*.out|err|json.
Exit status: 0 when every run succeeded and every check passed, 1 otherwise, 2 on usage or
build errors.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out", "overlap")
VARIANTS = ["original", "toucan", "nocomm", "overlap"]
APPS = ["jacobi3d", "cannon2d"]
# Fortran applications (bench/NAME.f90, `use mpi`): built with mpif90 and toucanfort; no AMPI
# or --baseline rows (AMPI 8.0.1 runs none of the Fortran compat tests, compat-tests/README).
FORTRAN_APPS = ["jacobif"]
# Variants of an application's source, run with extra arguments (not in the default --apps):
# jacobiput is jacobi3d with one-sided faces, MPI_Put + one MPI_Win_fence per iteration
# (issue 18's fence halo benchmark).
VARIANT_APPS = {"jacobiput": ("jacobi3d", ["-c", "put"])}
SIZES = {
    ("jacobi3d", "strong"): "-g 160 -i 40 -w 2",
    ("jacobi3d", "weak"): "-l 64 -i 40 -w 2",
    ("cannon2d", "strong"): "-n 1536 -r 2 -w 1",
    ("cannon2d", "weak"): "-l 512 -r 2 -w 1",
    ("jacobif", "strong"): "-g 2048 -i 40 -w 2",
    ("jacobif", "weak"): "-l 1024 -i 40 -w 2",
    ("jacobiput", "strong"): "-g 160 -i 40 -w 2",
    ("jacobiput", "weak"): "-l 64 -i 40 -w 2",
}
QUICK_SIZES = {
    ("jacobi3d", "strong"): "-g 48 -i 5 -w 1",
    ("jacobi3d", "weak"): "-l 24 -i 5 -w 1",
    ("cannon2d", "strong"): "-n 256 -r 1 -w 0",
    ("cannon2d", "weak"): "-l 128 -r 1 -w 0",
    ("jacobif", "strong"): "-g 256 -i 5 -w 1",
    ("jacobif", "weak"): "-l 128 -i 5 -w 1",
    ("jacobiput", "strong"): "-g 48 -i 5 -w 1",
    ("jacobiput", "weak"): "-l 24 -i 5 -w 1",
}
# n processes (netlrts; n PEs of one process for a multicore build) holding n*V virtual ranks.
# ++local: start them here without ssh (a multicore charmrun ignores it); ++quiet: no banner.
AMPI_RUN = "{runner} +p{n} ++local ++quiet {exe} +vp{nv} {args}"
BEGIN, END = "<!-- overlap:begin -->", "<!-- overlap:end -->"


def source_of(app):
    """The source file (without .c) an application is built from."""
    return VARIANT_APPS.get(app, (app, []))[0]


def app_sizes(args, app, scaling):
    """The size arguments of APP at SCALING: --quick's or the default, unless the environment
    (JACOBI_STRONG, CANNON_WEAK, JACOBIF_STRONG, ...) replaces them."""
    sizes = (QUICK_SIZES if args.quick else SIZES)[(app, scaling)]
    return os.environ.get(f"{app.replace('3d', '').replace('2d', '').upper()}_{scaling.upper()}", sizes)


def say(msg):
    print(f"run-overlap: {msg}", file=sys.stderr, flush=True)


def die(msg, code=2):
    say(f"error: {msg}")
    sys.exit(code)


def tool(env_name, *names):
    v = os.environ.get(env_name)
    if v:
        return v
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return names[-1]


def find_ampi():
    """(ampicc, runner) or None."""
    cc = shutil.which("ampicc")
    home = os.environ.get("AMPI_HOME")
    if not cc and home and os.access(os.path.join(home, "bin", "ampicc"), os.X_OK):
        cc = os.path.join(home, "bin", "ampicc")
    if not cc:
        return None
    # charmrun, not ampirun: ampirun is mpirun-like (one rank per PE) and appends its own +p.
    p = os.path.join(os.path.dirname(cc), "charmrun")
    if os.access(p, os.X_OK):
        return cc, p
    return cc, shutil.which("charmrun") or "charmrun"


def ampi_net(cc):
    """(netlrts, tcp): whether AMPI is a netlrts build (processes talking over sockets) and
    whether it has the `tcp` option (else UDP with Charm++'s own protocol)."""
    inc = os.path.join(os.path.dirname(cc), "..", "include")
    try:
        with open(os.path.join(inc, "conv-common.h")) as f:
            net = "CMK_NET_VERSION" in f.read()
        with open(os.path.join(inc, "conv-mach-opt.h")) as f:
            tcp = "conv-mach-tcp.h" in f.read()
    except OSError:
        return False, False
    return net, net and tcp


def ampi_desc(ampi):
    if not ampi:
        return "not found, skipped"
    net, tcp = ampi_net(ampi[0])
    return f"`{ampi[0]}`" + ((" (netlrts over TCP)" if tcp else " (netlrts over UDP)") if net else "")


# ------------------------------------------------------------------------------ build
def build(args, ampi):
    bindir = os.path.join(OUT, "bin")
    if args.baseline:
        # the baseline's own headers and wrapper, linked to a snapshot of its library
        blib = os.path.join(args.baseline, "target", "release", "libtoucanmpi.so")
        bcc = os.path.join(args.baseline, "wrappers", "toucancc")
        if not os.path.exists(blib) or not os.access(bcc, os.X_OK):
            die(f"--baseline {args.baseline}: needs wrappers/toucancc and target/release/libtoucanmpi.so (build it)")
        bdir = os.path.join(OUT, "base-lib")
        os.makedirs(bdir, exist_ok=True)
        shutil.copy2(blib, os.path.join(bdir, "libtoucanmpi.so"))
        for app in [a for a in args.apps if a not in FORTRAN_APPS]:
            exe = os.path.join(bindir, f"{app}.toucan-base")
            os.makedirs(bindir, exist_ok=True)
            cmd = [bcc, "-O2", "-Wall", "-o", exe, os.path.join(HERE, f"{source_of(app)}.c"), "-lblas", "-lm"]
            r = subprocess.run(cmd, env=dict(os.environ, TOUCAN_LIBDIR=bdir), capture_output=True, text=True)
            if r.returncode != 0:
                die(f"building {app} for the baseline failed:\n  {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    libdir = os.path.join(OUT, "lib")
    os.makedirs(bindir, exist_ok=True)
    os.makedirs(libdir, exist_ok=True)
    lib = os.path.join(ROOT, "target", "release", "libtoucanmpi.so")
    if not os.path.exists(lib):
        die(f"{lib} is missing: build the library first (make, or cargo build --release)")
    # One snapshot of the library for all runs, so a rebuild meanwhile does not affect them.
    shutil.copy2(lib, os.path.join(libdir, "libtoucanmpi.so"))
    mpicc = tool("MPICC", "mpicc", "mpicc.mpich")
    toucancc = os.environ.get("TOUCANCC", os.path.join(ROOT, "wrappers", "toucancc"))
    compilers = {"mpich": [mpicc, "-Wno-stringop-overflow"], "toucan": [toucancc]}
    if ampi:
        compilers["ampi"] = [ampi[0]]
    env = dict(os.environ, TOUCAN_LIBDIR=libdir)
    # libtoucanfort.a beside the snapshot (toucanfort links it from TOUCAN_LIBDIR)
    fort = os.path.join(ROOT, "target", "release", "libtoucanfort.a")
    if any(a in FORTRAN_APPS for a in args.apps):
        if not os.path.exists(fort):
            die(f"{fort} is missing: build the Fortran bindings first (make)")
        shutil.copy2(fort, os.path.join(libdir, "libtoucanfort.a"))
    fcompilers = {"mpich": [tool("MPIFC", "mpif90", "mpif90.mpich")],
                  "toucan": [os.environ.get("TOUCANFC", os.path.join(ROOT, "wrappers", "toucanfort"))]}
    for app in args.apps:
        src = os.path.join(HERE, f"{source_of(app)}.c")
        if app in FORTRAN_APPS:
            src = os.path.join(HERE, f"{app}.f90")
            for impl, fc in fcompilers.items():
                exe = os.path.join(bindir, f"{app}.{impl}")
                cmd = fc + ["-O2", "-o", exe, src]
                # (in bindir: gfortran writes no module here, but keep the tree clean)
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=bindir)
                if r.returncode != 0:
                    die(f"building {app} for {impl} failed:\n  {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
            continue
        for impl, cc in compilers.items():
            exe = os.path.join(bindir, f"{app}.{impl}")
            cmd = cc + ["-O2", "-Wall", "-o", exe, src, "-lblas", "-lm"]
            # In bindir: ampicc (charmc) copies charmrun and ampirun into the current directory.
            r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               cwd=bindir if impl == "ampi" else None)
            if r.returncode != 0:
                die(f"building {app} for {impl} failed:\n  {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    return bindir


# ------------------------------------------------------------------------------ plan
def plan(args, ampi, bindir):
    """Configurations: dicts with everything needed to run and to tabulate."""
    confs = []
    for app in args.apps:
        for scaling in args.scaling:
            sizes = app_sizes(args, app, scaling)
            impls = []
            if not args.no_mpich:
                impls.append(("mpich", 1))
                if args.mpich_at_v:
                    impls += [("mpich", v) for v in args.vs if v > 1]
            impls += [("toucan", v) for v in args.vs]
            if scaling == "strong" and 1 in args.vs:
                impls.append(("toucan-ucx", 1))
            fortran = app in FORTRAN_APPS
            if args.baseline and 1 in args.vs and not fortran:
                impls.append(("toucan-base", 1))
            if args.workers > 1:
                impls += [("toucan-smp", v) for v in args.vs]
            if ampi and not fortran:
                impls += [("ampi", v) for v in args.vs]
            for impl, v in impls:
                for variant in VARIANTS:
                    confs.append(
                        dict(app=app, scaling=scaling, impl=impl, v=v, variant=variant, sizes=sizes,
                             exe=os.path.join(bindir, f"{app}.{'toucan-base' if impl == 'toucan-base' else impl.split('-')[0]}"))
                    )
    return confs


# Charm++ runtime options for AMPI runs on the emulated interconnect: no Cross Memory Attach
# (process_vm_readv between the processes of a host, which Charm++ uses for large messages,
# AMPI's through its zero-copy API: 1 MiB went that way here, 64 KiB did not), so that, as
# MPICH with MPIR_CVAR_NOLOCAL=1, every message between processes crosses the rate-limited
# loopback.
AMPI_NETNS_FLAGS = ["+cma_disable", "+noCMAForZC"]


def command(conf, np_, ampi, rate="none", workers=1):
    """argv and extra environment of one run."""
    impl, v = conf["impl"], conf["v"]
    prog = [conf["exe"], "-v", conf["variant"]] + shlex.split(conf["sizes"]) + VARIANT_APPS.get(conf["app"], ("", []))[1]
    mpirun = tool("MPIRUN", "mpirun", "mpirun.mpich")
    if impl == "mpich":
        return [mpirun, "-np", str(np_ * v)] + prog, {}
    if impl == "toucan":
        return [mpirun, "-np", str(np_)] + prog, {"TOUCAN_V": str(v)}
    if impl == "toucan-ucx":
        return [mpirun, "-np", str(np_)] + prog, {"TOUCAN_V": str(v), "UCX_RNDV_THRESH": "auto"}
    if impl == "toucan-base":
        return [mpirun, "-np", str(np_)] + prog, {"TOUCAN_V": str(v)}
    if impl == "toucan-smp":
        return [mpirun, "-np", str(np_ // workers)] + prog, {"TOUCAN_WORKERS": str(workers), "TOUCAN_V": str(v)}
    tmpl = os.environ.get("AMPI_RUN", AMPI_RUN)
    args = (AMPI_NETNS_FLAGS if rate != "none" and ampi_net(ampi[0])[0] else []) + prog[1:]
    line = tmpl.format(runner=ampi[1], n=np_, nv=np_ * v, exe=conf["exe"], args=shlex.join(args))
    return shlex.split(line), {}


def key(conf):
    return f"{conf['app']}.{conf['scaling']}.{conf['impl']}.v{conf['v']}.{conf['variant']}"


def parse_result(text):
    for line in text.splitlines():
        if line.startswith("RESULT "):
            return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    return None


FINALIZE_GRACE = 5.0  # seconds a run may take to exit after printing its RESULT line


def wait_run(p, out_path, timeout):
    """Waits for the launcher p; returns (exit status or "timeout", finalize_hang).

    MPICH 4.0.2 over UCX's TCP transport sometimes never returns from MPI_Finalize (one rank
    spins in ucp_worker_progress flushing an endpoint whose peer already sits in the PMI
    barrier; UCX bug openucx/ucx#8738, seen in about 1 run of 10 with plain MPICH). The RESULT
    line is printed before MPI_Finalize, so such a run has measured what it should: it is
    killed FINALIZE_GRACE seconds after its RESULT line, kept, and counted in the report."""
    t0 = time.monotonic()
    seen = None
    while True:
        try:
            return p.wait(timeout=0.2), False
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if seen is None:
            with open(out_path) as f:
                if parse_result(f.read()):
                    seen = now
        if now - t0 > timeout or (seen is not None and now - seen > FINALIZE_GRACE):
            os.killpg(p.pid, signal.SIGKILL)  # the launcher we started and its children
            p.wait()
            return "timeout", seen is not None


def run_one(conf, rate, run, args, ampi):
    rundir = os.path.join(OUT, "runs")
    os.makedirs(rundir, exist_ok=True)
    base = os.path.join(rundir, f"{rate}.{key(conf)}.{run}")
    argv, extra = command(conf, args.np, ampi, args.rate, args.workers)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **extra)
    if "TOUCAN_WORKERS" not in extra:
        env.pop("TOUCAN_WORKERS", None)  # one worker per process unless the row says otherwise
    report = base + ".json"
    if conf["impl"].startswith("toucan"):
        env["TOUCAN_REPORT"] = report
        if os.path.exists(report):
            os.remove(report)
    t0 = time.monotonic()
    with open(base + ".out", "w") as out, open(base + ".err", "w") as err:
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=err, start_new_session=True)
        rc, hang = wait_run(p, base + ".out", args.timeout)
    rec = dict(conf, rate=rate, run=run, rc=rc, wall=round(time.monotonic() - t0, 3), cmd=shlex.join(argv),
               env=" ".join(f"{k}={v}" for k, v in extra.items()))
    rec.pop("exe")
    with open(base + ".out") as f:
        res = parse_result(f.read())
    if hang:
        rec["finalize_hang"] = True
    if (rc == 0 or hang) and res:
        rec["time"] = float(res["time"])
        rec["checksum"] = res.get("checksum")
        rec["verified"] = res.get("verified")
        rec["ranks"] = res.get("ranks")
    if os.path.exists(report):
        try:
            with open(report) as f:
                rec["report"] = json.load(f)["total"]
        except (OSError, ValueError) as e:
            rec["report_error"] = str(e)
    return rec


def inner(args):
    """Runs the plan in the current environment (inside the namespace), appending to results."""
    ampi = find_ampi() if not args.no_ampi else None
    confs = plan(args, ampi, os.path.join(OUT, "bin"))
    total = len(confs) * args.runs
    done = 0
    with open(args.results, "a") as res:
        for run in range(1, args.runs + 1):
            for conf in confs:
                rec = run_one(conf, args.rate, run, args, ampi)
                done += 1
                status = f"{rec['time']:.4f} s" if "time" in rec else f"FAILED (exit {rec['rc']})"
                if rec.get("finalize_hang"):
                    status += f" (killed {FINALIZE_GRACE:.0f} s after its RESULT: hung in MPI_Finalize)"
                say(f"[{args.rate} {done}/{total}] {key(conf)} run {run}: {status}")
                res.write(json.dumps(rec) + "\n")
                res.flush()
    return 0


# ------------------------------------------------------------------------------ tables
def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, f="{:.4f}"):
    return "–" if x is None else f.format(x)


def pct(x):
    return "–" if x is None else f"{100 * x:.0f}%"


def check(recs, np_):
    """Correctness: checksums agree, cannon verifies, world sizes. Returns a list of problems."""
    problems = []
    for r in recs:
        if (r.get("rc") != 0 and not r.get("finalize_hang")) or "time" not in r:
            problems.append(f"{r['rate']} {key(r)} run {r['run']}: failed (exit {r.get('rc')}; see bench/out/overlap/runs)")
        elif r.get("ranks") is not None and int(r["ranks"]) != np_ * r["v"]:
            hint = " (this library ignores TOUCAN_WORKERS?)" if r["impl"] == "toucan-smp" else ""
            problems.append(f"{r['rate']} {key(r)} run {r['run']}: {r['ranks']} ranks, expected {np_ * r['v']}{hint}")
        elif r["app"] == "cannon2d" and r["variant"] != "nocomm" and r.get("verified") != "yes":
            problems.append(f"{r['rate']} {key(r)} run {r['run']}: C = A B does not verify")
    groups = {}
    for r in recs:
        if "checksum" not in r or r["variant"] == "nocomm":
            continue
        # strong: one problem per app; weak: one per world size
        g = (r["app"], r["scaling"]) + ((r.get("ranks"),) if r["scaling"] == "weak" else ())
        groups.setdefault(g, {}).setdefault(r["checksum"], []).append(f"{r['rate']} {key(r)}")
    for g, sums in groups.items():
        if len(sums) > 1:
            desc = "; ".join(f"{c} ({len(w)} runs, e.g. {w[0]})" for c, w in sums.items())
            problems.append(f"{'/'.join(str(x) for x in g)}: checksums differ: {desc}")
    return problems


def tabulate(recs, rates, args):
    """Markdown tables and the plot data: {(app, rate): [(V, hidden_toucan, hidden_original)]}."""
    med = {}
    rep = {}
    for r in recs:
        if "time" in r:
            med.setdefault((r["rate"], r["app"], r["scaling"], r["impl"], r["v"], r["variant"]), []).append(r["time"])
            if r["impl"] == "toucan" and r["variant"] == "toucan" and r.get("report"):
                h = r["report"].get("hidden_share")
                if h is not None:
                    rep.setdefault((r["rate"], r["app"], r["scaling"], r["v"]), []).append(h)
    med = {k: median(v) for k, v in med.items()}
    # SMP rows whose world was not N*V ranks (a library that ignores TOUCAN_WORKERS): not judged
    bad_smp = {(r["rate"], r["app"], r["scaling"], r["v"]) for r in recs if r["impl"] == "toucan-smp"
               and r.get("ranks") is not None and int(r["ranks"]) != args.np * r["v"]}
    lines, plot = [], {}
    hangs = sum(1 for r in recs if r.get("finalize_hang"))
    if hangs:
        by_impl = {}
        for r in recs:
            n, h = by_impl.get(r["impl"], (0, 0))
            by_impl[r["impl"]] = (n + 1, h + bool(r.get("finalize_hang")))
        per = ", ".join(f"{impl} {h} of {n}" for impl, (n, h) in sorted(by_impl.items()))
        lines.append(f"\n{hangs} of {len(recs)} runs ({per}) printed their RESULT and then hung in MPI_Finalize "
                     "(UCX TCP, openucx/ucx#8738); they were killed after it and their times kept.")
    for rate in rates:
        for app in args.apps:
            for scaling in args.scaling:
                rows = sorted({(k[3], k[4]) for k in med if k[:3] == (rate, app, scaling)},
                              key=lambda x: (["mpich", "toucan", "toucan-base", "toucan-ucx", "toucan-smp", "ampi"].index(x[0]), x[1]))
                if not rows:
                    continue
                sizes = app_sizes(args, app, scaling)
                where = "shared memory" if rate == "none" else f"emulated interconnect, {rate}"
                lines.append(f"\n**{app}, {scaling} scaling, {where}** (`{sizes}`; n = {args.np} processes)\n")
                lines.append("| run | V | ranks | T original | T toucan | T nocomm | T overlap | speedup original | "
                             "speedup toucan | speedup overlap | hidden original | hidden toucan | hidden overlap | "
                             "hidden (Toucan report) |")
                lines.append("|---|---:|---:|" + "---:|" * 11)
                for impl, v in rows:
                    t = {var: med.get((rate, app, scaling, impl, v, var)) for var in VARIANTS}
                    if scaling == "strong" and (rate, app, scaling, "mpich", 1, "original") in med:
                        ref_o = med[(rate, app, scaling, "mpich", 1, "original")]
                        ref_n = med.get((rate, app, scaling, "mpich", 1, "nocomm"))
                    else:
                        ref_o, ref_n = t["original"], t["nocomm"]
                    sp = {var: (ref_o / t[var] if ref_o and t[var] else None) for var in ("original", "toucan", "overlap")}
                    hid = {}
                    for var in ("original", "toucan", "overlap"):
                        ok = ref_o is not None and ref_n is not None and t[var] is not None and ref_o - ref_n > 0
                        hid[var] = (ref_o - t[var]) / (ref_o - ref_n) if ok else None
                    rh = median(rep.get((rate, app, scaling, v), [])) if impl == "toucan" else None
                    name = {"mpich": "MPICH", "toucan": "Toucan", "toucan-ucx": "Toucan (UCX defaults)", "ampi": "AMPI",
                            "toucan-base": "Toucan (baseline)",
                            "toucan-smp": f"Toucan {args.np // args.workers}×{args.workers} workers"}[impl]
                    ranks = args.np * v
                    lines.append(
                        f"| {name} | {v} | {ranks} | " + " | ".join(fmt(t[x]) for x in VARIANTS) + " | "
                        + " | ".join(fmt(sp[x], "{:.2f}") for x in ("original", "toucan", "overlap")) + " | "
                        + " | ".join(pct(hid[x]) for x in ("original", "toucan", "overlap")) + f" | {pct(rh)} |"
                    )
                    if impl == "toucan" and scaling == "strong":
                        plot.setdefault((app, rate), []).append((v, hid["toucan"], hid["original"]))
                if scaling == "strong":
                    lines.append(acceptance(med, rate, app, args.vs))
                if args.workers > 1:
                    lines.append(smp_line(med, rate, app, scaling, args, bad_smp))
                if args.baseline:
                    lines.append(base_line(med, rate, app, scaling))
    return "\n".join(lines), plot


def acceptance(med, rate, app, vs):
    """One line with the issue's acceptance measures for a strong-scaling table."""
    m = lambda impl, v, var: med.get((rate, app, "strong", impl, v, var))  # noqa: E731
    o, n, ov = m("mpich", 1, "original"), m("mpich", 1, "nocomm"), m("mpich", 1, "overlap")
    if o is None:
        return "\n(no MPICH reference: acceptance measures need it)"
    parts = []
    if n is not None:
        parts.append(f"MPICH original spends {pct((o - n) / o)} of its time communicating (acceptance needs >= 30%)")
    t1 = m("toucan", 1, "original")
    if t1 is not None:
        # The acceptance line bounds Toucan's own cost at V=1: slower by at most 3%. Faster
        # is not a failure (it happens where Toucan's algorithm beats MPICH's, see RESULTS.md).
        parts.append(f"Toucan V=1 original / MPICH original = {t1 / o:.3f} "
                     f"(at most 3% slower: {'yes' if t1 / o <= 1.03 else 'no'})")
    tu = m("toucan-ucx", 1, "original")
    if tu is not None:
        parts.append(f"the same with UCX's defaults = {tu / o:.3f} (at most 3% slower: {'yes' if tu / o <= 1.03 else 'no'})")
    cands = [(m("toucan", v, var), v, var) for v in vs for var in ("original", "toucan") if m("toucan", v, var) is not None]
    if cands and n is not None and o - n > 0:
        t, v, var = min(cands)
        h = (o - t) / (o - n)
        faster = "–" if ov is None else ("yes" if t < ov else "no")
        parts.append(f"best Toucan: V={v} {var}, {t:.4f} s, hidden {pct(h)} (>= 50%: {'yes' if h >= 0.5 else 'no'}), "
                     f"faster than MPICH overlap ({fmt(ov)} s): {faster}")
        amp = [(m("ampi", w, x), w, x) for w in vs for x in ("original", "toucan") if m("ampi", w, x) is not None]
        if amp:
            ta, va, xa = min(amp)
            parts.append(f"best AMPI: V={va} {xa}, {ta:.4f} s, hidden {pct((o - ta) / (o - n))}; "
                         f"best Toucan / best AMPI = {t / ta:.3f} (faster: {'yes' if t < ta else 'no'})")
    return "\nAcceptance measures: " + "; ".join(parts) + "."


def smp_line(med, rate, app, scaling, args, bad_smp):
    """Issue 14, benchmark 4: the SMP layout (N/W processes x W workers) against N processes x
    1 worker at the same V (same ranks): balanced codes must not lose."""
    parts = []
    for v in args.vs:
        for var in ("original", "toucan"):
            a = med.get((rate, app, scaling, "toucan-smp", v, var))
            b = med.get((rate, app, scaling, "toucan", v, var))
            if a is None or b is None:
                continue
            if (rate, app, scaling, v) in bad_smp:
                parts.append(f"V={v} {var} not judged (wrong world size: TOUCAN_WORKERS ignored?)")
                continue
            q = a / b
            verdict = "yes" if q <= 1.0 else ("within 3%" if q <= 1.03 else "no")
            parts.append(f"V={v} {var} {q:.3f} ({verdict})")
    if not parts:
        return "\n(no SMP rows to compare)"
    return (f"\nSMP mode (issue 14, benchmark 4): Toucan {args.np // args.workers}×{args.workers} workers / "
            f"Toucan {args.np}×1, same V, no slower: " + "; ".join(parts) + ".")


def base_line(med, rate, app, scaling):
    """Issue 14, benchmark 1: this library against the baseline at V=1 (one worker)."""
    parts = []
    for var in VARIANTS:
        a = med.get((rate, app, scaling, "toucan", 1, var))
        b = med.get((rate, app, scaling, "toucan-base", 1, var))
        if a is not None and b is not None:
            parts.append(f"{var} {a / b:.3f}")
    if not parts:
        return "\n(no baseline rows at V=1)"
    return "\nA/B at V=1 (issue 14, benchmark 1: unchanged within noise): Toucan / Toucan (baseline) = " + "; ".join(parts) + "."


def make_plot(plot, path):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        say("gnuplot not found (apt-get install gnuplot-nox, or scripts/ensure-deps.sh --bench): no plot")
        return False
    apps = sorted({a for a, _ in plot})
    if not apps:
        return False
    data = os.path.join(OUT, "plot")
    os.makedirs(data, exist_ok=True)
    script = [
        f"set terminal pngcairo size {520 * len(apps)},420 font 'sans,10'",
        f"set output '{path}'",
        f"set multiplot layout 1,{len(apps)}",
        "set key bottom right",
        "set xlabel 'V (subranks per process)'",
        "set ylabel 'share of communication hidden'",
        "set yrange [*:1.05]",
        "set logscale x 2",
        "set grid",
    ]
    for app in apps:
        curves = []
        for (a, rate), pts in sorted(plot.items()):
            if a != app:
                continue
            f = os.path.join(data, f"{app}.{rate}.dat")
            with open(f, "w") as fh:
                for v, ht, ho in sorted(pts):
                    fh.write(f"{v} {'NaN' if ht is None else ht} {'NaN' if ho is None else ho}\n")
            label = "shared memory" if rate == "none" else rate
            curves.append(f"'{f}' using 1:2 with linespoints title '{label}, toucan'")
            curves.append(f"'{f}' using 1:3 with linespoints dashtype 2 title '{label}, original'")
        script.append(f"set title '{app} (strong scaling; vs MPICH original)'")
        script.append("plot " + ", ".join(curves))
    script.append("unset multiplot")
    r = subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True, capture_output=True)
    if r.returncode != 0:
        say(f"gnuplot failed: {r.stderr.strip()}")
        return False
    return True


def git_desc(root=ROOT):
    try:
        c = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "libtoucanmpi", "bench"], capture_output=True,
                               text=True).stdout.strip()
        return c + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "unknown"


def update_results(section):
    path = os.path.join(HERE, "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n## Overlap: jacobi3d and cannon2d\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


# ------------------------------------------------------------------------------ main
def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lst = lambda s: [x for x in s.replace(",", " ").split() if x]  # noqa: E731
    p.add_argument("--apps", type=lst, default=APPS)
    p.add_argument("--scaling", type=lst, default=["strong", "weak"])
    p.add_argument("--vs", type=lambda s: [int(x) for x in lst(s)], default=[1, 2, 4, 8])
    p.add_argument("--rates", type=lst, default=["1gbit", "5gbit", "10gbit"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--no-mpich", action="store_true")
    p.add_argument("--no-ampi", action="store_true")
    p.add_argument("--mpich-at-v", action="store_true", help="also run MPICH with N*V processes (oversubscribed: slow)")
    p.add_argument("--baseline", help="a built checkout of another Toucan-MPI: its V=1 rows beside (A/B)")
    p.add_argument("--workers", type=int, default=1,
                   help="W > 1: also run Toucan as N/W processes of W workers (TOUCAN_WORKERS=W; SMP mode)")
    p.add_argument("--update-results", action="store_true")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--rate", default="none", help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    a = p.parse_args()
    bad = [x for x in a.apps if x not in APPS + FORTRAN_APPS + list(VARIANT_APPS)] + [x for x in a.scaling if x not in ("strong", "weak")]
    if bad or a.runs < 1 or a.np < 1 or any(v < 1 or v > 256 for v in a.vs):
        p.error(f"bad arguments {bad or ''}")
    if a.baseline:
        a.baseline = os.path.abspath(a.baseline)
    if a.workers < 1 or a.np % a.workers:
        p.error(f"--workers {a.workers} must divide --np {a.np}")
    return a


def forward(args):
    """The options the inner runs need."""
    f = ["--apps", ",".join(args.apps), "--scaling", ",".join(args.scaling), "--vs", ",".join(map(str, args.vs)),
         "--runs", str(args.runs), "--np", str(args.np), "--timeout", str(args.timeout), "--workers", str(args.workers)] + (
             ["--baseline", args.baseline] if args.baseline else [])
    for flag in ("quick", "no_mpich", "no_ampi", "mpich_at_v"):
        if getattr(args, flag):
            f.append("--" + flag.replace("_", "-"))
    return f


def main():
    args = parse_args()
    if args.inner:
        return inner(args)
    ampi = None if args.no_ampi else find_ampi()
    if ampi:
        say(f"AMPI: {ampi[0]} (runs with {ampi[1]} +p{args.np} ++local ++quiet ... +vp{args.np}*V)")
        net, tcp = ampi_net(ampi[0])
        if net and not tcp and any(r != "none" for r in args.rates):
            say("warning: this AMPI is a netlrts build over UDP; on the rate-limited loopback its own "
                "datagram protocol got about a fifth of the rate here (build AMPI with the `tcp` "
                "option for a fair comparison with MPICH over TCP; see bench/README.md)")
    else:
        say("AMPI: not found (no ampicc on PATH, AMPI_HOME unset): AMPI runs skipped")
    bindir = build(args, ampi)
    results = os.path.join(OUT, "results.jsonl")
    if os.path.exists(results):
        os.remove(results)
    shutil.rmtree(os.path.join(OUT, "runs"), ignore_errors=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    failed_rates = []
    for rate in args.rates:
        inner_cmd = [sys.executable, os.path.abspath(__file__), "--inner", "--rate", rate, "--results", results] + forward(args)
        if rate == "none":
            rc = subprocess.run(inner_cmd).returncode
        else:
            ns = [os.path.join(HERE, "netns.sh"), "--rate", rate] + ([] if args.no_check else ["--check"])
            rc = subprocess.run(ns + ["--"] + inner_cmd).returncode
        if rc != 0:
            failed_rates.append(rate)
            say(f"rate {rate}: the runs did not complete (exit {rc})")
    recs = []
    if os.path.exists(results):
        with open(results) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    problems = check(recs, args.np)
    tables, plot = tabulate(recs, args.rates, args)
    png = os.path.join(HERE if args.update_results else OUT, "overlap.png")
    have_plot = make_plot(plot, png)
    cmdline = "bench/run-overlap.py " + shlex.join(sys.argv[1:])
    head = [
        f"Produced by `{cmdline}` (from the repository root) on {started}.",
        "",
        f"- Machine: {os.cpu_count()} CPUs; load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        f"- Toucan-MPI: commit {git_desc()}. AMPI: {ampi_desc(ampi)}."
        + (f" Baseline (`--baseline`): {args.baseline}, commit {git_desc(args.baseline)}." if args.baseline else ""),
        f"- Median of {args.runs} run(s) per configuration, interleaved; times in seconds (timed loop from a barrier to a barrier, slowest rank).",
        "- Speedup = T_ref_original / T; hidden = (T_ref_original − T) / (T_ref_original − T_ref_nocomm); the "
        "reference is plain MPICH at n processes for strong scaling, the row's own original/nocomm for weak scaling. "
        "`hidden (Toucan report)` is the runtime's own estimate (TOUCAN_REPORT) for the toucan variant.",
    ]
    if failed_rates:
        head.append(f"- Rates whose runs did not complete: {', '.join(failed_rates)}.")
    if problems:
        head.append(f"- **{len(problems)} correctness problem(s)**: " + "; ".join(problems[:5]))
    if have_plot:
        head.append(f"\n![share hidden against V]({os.path.relpath(png, HERE)})")
    section = "\n".join(head) + "\n" + tables
    print(section)
    if args.update_results:
        update_results(section)
        say("bench/RESULTS.md updated")
    for p in problems:
        say(f"PROBLEM: {p}")
    if not problems and not failed_rates:
        say(f"all {len(recs)} runs succeeded; checksums agree")
    return 1 if problems or failed_rates else 0


if __name__ == "__main__":
    sys.exit(main())
