#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/hog-limit's report: reads the guest's RUN/COST lines from LOG, prints per experiment and
# setting the median (min-max) progress of process 1, the others and their sum for each mode,
# the ratio of the sums to no manager in the same repetition (median, min-max), and draws the
# paper's Figures 6-9 with gnuplot into PREFIX-fig6-io.png ... PREFIX-fig9-nprocs.png.
#
# usage: hog-limit-report.py LOG PREFIX
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

log, prefix = sys.argv[1], sys.argv[2]
runs = []
cost = None
lat = defaultdict(list)
for line in open(log, errors="replace"):
    m = re.match(r"RUN exp=(\S+) mode=(\S+) param=(\S+) rep=(\d+) p1=(\S+) p2=(\S+) sum=(\S+)", line)
    if m:
        runs.append(dict(exp=m[1], mode=m[2], param=m[3], rep=int(m[4]), p1=float(m[5]), p2=float(m[6]),
                         sum=float(m[7])))
    m = re.match(r"LAT mode=(\S+) rep=(\d+) p99_ms=(\S+)", line)
    if m:
        lat[m[1]].append(float(m[3]))
    m = re.match(r"COST (.*)", line)
    if m:
        cost = m[1]
if not runs:
    sys.exit("hog-limit-report: no RUN lines in " + log)

cells = defaultdict(list)
for r in runs:
    cells[(r["exp"], r["mode"], r["param"])].append(r)


def none_sum(exp, param, rep):
    """The no-manager run the ratio compares with: same experiment, same repetition."""
    key = param if exp == "nprocs" else "-"
    ex = "cpu" if exp == "interval" else exp  # §5.2 runs §5.1.2's workload
    for r in cells.get((ex, "none", key), []):
        if r["rep"] == rep:
            return r["sum"]
    return None


def fmt(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def sortkey(k):
    try:
        return (k[0], k[1], float(k[2]))
    except ValueError:
        return (k[0], k[1], -1.0)


ratios = {}
print()
print(f"{'exp':9} {'mode':7} {'param':>6}  {'n':>2}  {'p1':>18}  {'others':>18}  {'sum':>18}  {'sum/none':>18}")
for key in sorted(cells, key=sortkey):
    exp, mode, param = key
    rs = cells[key]
    rr = [r["sum"] / ns for r in rs if (ns := none_sum(exp, param, r["rep"]))]
    ratios[key] = rr
    print(f"{exp:9} {mode:7} {param:>6}  {len(rs):>2}  {fmt([r['p1'] for r in rs]):>18}  "
          f"{fmt([r['p2'] for r in rs]):>18}  {fmt([r['sum'] for r in rs]):>18}  "
          f"{fmt(rr) if rr else '-':>18}")
if lat:
    print()
    alone = statistics.median(lat["alone"]) if lat.get("alone") else None
    for mode in ("alone", "none", "tonari"):
        if lat.get(mode):
            ratio = f", /alone {statistics.median(lat[mode]) / alone:.2f}" if alone else ""
            print(f"victim p99 {mode:7} {fmt(lat[mode])} ms{ratio}")
if cost:
    print()
    print("COST", cost)

# Figures: progress (median over repetitions) against the setting, tonari's three curves and the
# sums of no manager and of the static limit as flat references.
tmp = tempfile.mkdtemp(prefix="hog-limit-plot.")


def series(exp, mode, field):
    pts = []
    for (e, m, p), rs in cells.items():
        if e == exp and m == mode and p != "-":
            pts.append((float(p), statistics.median(r[field] for r in rs)))
    return sorted(pts)


def flat(exp, mode):
    for (e, m, p), rs in cells.items():
        if e == exp and m == mode:
            return statistics.median(r["sum"] for r in rs)
    return None


def write(name, pts):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        for x, y in pts:
            f.write(f"{x} {y}\n")
    return path


def figure(out, title, xlabel, exp, ref_exp, logx=False):
    s1, s2, ss = (write(f"{exp}-{f}", series(exp, "tonari", f)) for f in ("p1", "p2", "sum"))
    none, static = flat(ref_exp, "none"), flat(ref_exp, "static")
    plots = [f"'{ss}' with linespoints lw 2 title 'tonari: sum'",
             f"'{s1}' with linespoints title 'tonari: process 1 (hog)'",
             f"'{s2}' with linespoints title 'tonari: process 2'"]
    if none is not None:
        plots.append(f"{none} with lines dt 2 lw 2 title 'no manager: sum'")
    if static is not None:
        plots.append(f"{static} with lines dt 3 lw 2 title 'static limit: sum'")
    script = f"""set terminal pngcairo size 900,560 font ',11'
set output '{out}'
set title '{title}'
set xlabel '{xlabel}'
set ylabel 'tasks completed (median of repetitions)'
set key outside bottom center horizontal
set grid
{'set logscale x' if logx else ''}
plot {', '.join(plots)}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wrote", out)


os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
if series("io", "tonari", "sum"):
    figure(prefix + "-fig6-io.png", "Fig. 6: I/O limit of io-limited (process 1 writes, process 2 writes then computes)",
           "io.max of io-limited (MB/s)", "io", "io", logx=True)
if series("cpu", "tonari", "sum"):
    figure(prefix + "-fig7-cpu.png", "Fig. 7: cpu.weight of cpu-limited (process 1 computes, process 2 writes then computes)",
           "cpu.weight of cpu-limited", "cpu", "cpu")
if series("interval", "tonari", "sum"):
    figure(prefix + "-fig8-interval.png", "Fig. 8: monitor interval (workload of Fig. 7)", "MonitorIntervalSec (s)",
           "interval", "cpu")
pts = []
for (e, m, p), rr in ratios.items():
    if e == "nprocs" and m == "tonari" and rr:
        pts.append((float(p), statistics.median(rr), min(rr), max(rr)))
if pts:
    path = os.path.join(tmp, "nprocs")
    with open(path, "w") as f:
        for x, y, lo, hi in sorted(pts):
            f.write(f"{x} {y} {lo} {hi}\n")
    out = prefix + "-fig9-nprocs.png"
    script = f"""set terminal pngcairo size 900,560 font ',11'
set output '{out}'
set title 'Fig. 9: tasks completed with tonari / without a manager, by number of processes (A: 1 s CPU; B: 0.5 s CPU, 3 s writes)'
set xlabel 'processes'
set ylabel 'ratio (median, min-max)'
set grid
set xrange [1.5:7.5]
plot '{path}' with yerrorlines lw 2 title 'tonari / no manager', 1 with lines dt 2 title 'no manager'
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wrote", out)
