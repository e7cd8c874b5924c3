#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The report of bench/borrow-logflood: reads the guest's output (CASE lines of
bench/borrow-logflood-guest.sh, one set per run, and its "tonarid CPU time" lines) and prints, per
N, flood and mode, the median and the spread (min-max over the runs) of the victim's ratio to the
baseline and of the charge fidelity, charged / copiers' CPU, over sysbench's run (window) and over
the copiers' lives (life), tonarid's CPU over sysbench's run per case (tonarid) and over each
whole run. With --plot=FILE it draws the charge
fidelity (--metric=, default life) per flood and mode with gnuplot (one panel per N, the spread
as error bars, the goal of 0.95 as a line); --ratio[=cpuratio|ratio] adds a row with the victim's ratio to
the baseline per flood and mode, 'none' (no borrowing) included: by default its CPU share's
(cpuratio), or its events/s' (ratio). Several logs are read as one (their
runs pooled).

usage: borrow-logflood-report.py [--plot=FILE] [--metric=life|window|scope] [--ratio[=cpuratio|ratio]] [LOG...]   (stdin without LOG)
"""

import collections
import re
import statistics
import subprocess
import sys
import tempfile

GOAL = 0.95
METRICS = ("ratio", "share", "cpuratio", "window", "life", "scope", "tonarid")
TITLES = {
    "life": "from registration to exit",
    "window": "over sysbench\'s run",
    "scope": "whole scope, start-up included",
}


def parse(lines):
    cases = collections.defaultdict(lambda: collections.defaultdict(list))  # (n, flood, mode) -> metric -> values
    order = []
    tonarid = []
    baseline_share = {}  # n -> the baseline's CPU share in the run being read
    for line in lines:
        line = line.strip()
        m = re.match(r"^SYSBENCH n=([0-9]+) flood=- mode=baseline cpu_share=([0-9.]+)", line)
        if m:
            baseline_share[int(m.group(1))] = float(m.group(2))
            continue
        m = re.match(r"^CASE (.*)$", line)
        if m:
            fields = dict(kv.split("=", 1) for kv in m.group(1).split())
            base = baseline_share.get(int(fields["n"]))
            if base and "cpuratio" not in fields and fields.get("share", "-") != "-":
                fields["cpuratio"] = f"{float(fields['share']) / base:.3f}"
            key = (int(fields["n"]), fields["flood"], fields["mode"])
            if key not in order:
                order.append(key)
            for metric in METRICS:
                try:
                    cases[key][metric].append(float(fields.get(metric, "-")))
                except ValueError:
                    pass
            continue
        m = re.search(r"tonarid CPU time during the runs: .*\(([0-9.]+)% of one CPU\)", line)
        if m:
            tonarid.append(float(m.group(1)))
    return cases, order, tonarid


def summary(values, digits=2):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def panel_data(data, cases, ns, floods, modes, metric):
    """One block per N; a row per flood: per mode, median, min and max of metric."""
    for n in ns:
        for i, f in enumerate(floods):
            row = [str(i), f]
            for mo in modes:
                v = cases.get((n, f, mo), {}).get(metric, [])
                row += [f"{statistics.median(v):.4f}", f"{min(v):.4f}", f"{max(v):.4f}"] if v else ["NaN"] * 3
            data.write(" ".join(row) + "\n")
        data.write("\n\n")


def panel_plots(name, block, modes, colours, width, goal, goal_title):
    plots = []
    for j, mo in enumerate(modes):
        off = -0.4 + width * (j + 0.5)
        c = 3 + 3 * j
        plots.append(
            f"'{name}' index {block} using ($1+{off:.3f}):{c}:({width:.3f}) with boxes lc {colours[mo]} title '{mo}'"
            + ", "
            + f"'' index {block} using ($1+{off:.3f}):{c}:{c + 1}:{c + 2}"
            + (":xtic(2)" if j == 0 else "")
            + " with yerrorbars notitle lc 'black' pt 0"
        )
    plots.append(f"{goal} with lines dt 2 lc 'red' title '{goal_title}'")
    return "plot " + ", ".join(plots)


def plot(path, cases, order, metric, ratio=None):
    """The charge fidelity (metric) of the borrowing modes per flood, one panel per N; with ratio
    ('ratio' or 'cpuratio'), a second row with that victim ratio for every mode, 'none' included."""
    ns = sorted({k[0] for k in order})
    floods = [f for f in dict.fromkeys(k[1] for k in order)]
    all_modes = list(dict.fromkeys(k[2] for k in order))
    modes = [m for m in all_modes if not m.startswith("none") and not m.startswith("inside")]
    if not modes:
        return
    rows = 2 if ratio else 1
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        panel_data(data, cases, ns, floods, modes, metric)
        if ratio:
            panel_data(data, cases, ns, floods, all_modes, ratio)
    title = "Charge fidelity: charged / helper CPU, %s" % TITLES[metric]
    if ratio:
        title += "; victim's " + ("events/s" if ratio == "ratio" else "CPU share") + " / baseline's"
    script = [
        "set terminal pngcairo size %d,%d font ',10'" % (460 * len(ns) + 120, 460 * rows),
        f"set output '{path}'",
        'set multiplot layout %d,%d title "%s (median, min-max)"' % (rows, len(ns), title),
        "set xtics rotate by -30",
        "set key below horizontal",
        "set grid ytics",
        "set style fill solid 0.6",
        f"set xrange [-0.6:{len(floods) - 0.4}]",
        "set yrange [0:1.1]",
        "set ylabel 'charged / helper CPU'",
    ]
    # Modes keep their colours in both rows: a mode's colour is its place among all modes.
    colours = {mo: i + 1 for i, mo in enumerate(all_modes)}
    for b, n in enumerate(ns):
        script.append(f"set title 'N = {n}: charged / helper CPU'")
        script.append(panel_plots(data.name, b, modes, colours, 0.8 / len(modes), GOAL, f"goal {GOAL}"))
    if ratio:
        what = "events/s" if ratio == "ratio" else "CPU share"
        script += ["set yrange [0:1.6]", f"set ylabel 'victim {what} / baseline'"]
        for b, n in enumerate(ns):
            script.append(f"set title 'N = {n}: victim {what} / baseline'")
            script.append(panel_plots(data.name, len(ns) + b, all_modes, colours, 0.8 / len(all_modes), GOAL,
                                      f"{GOAL} of baseline"))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)


def main(argv):
    plot_path = None
    metric = "life"
    ratio = None
    args = []
    for a in argv[1:]:
        if a.startswith("--plot="):
            plot_path = a.split("=", 1)[1]
        elif a == "--ratio" or a.startswith("--ratio="):
            ratio = a.split("=", 1)[1] if "=" in a else "cpuratio"
            if ratio not in ("ratio", "cpuratio"):
                print(f"borrow-logflood-report: invalid --ratio= value '{ratio}': expected ratio or cpuratio",
                      file=sys.stderr)
                return 2
        elif a.startswith("--metric="):
            metric = a.split("=", 1)[1]
            if metric not in TITLES:
                print(f"borrow-logflood-report: invalid --metric= value '{metric}': expected life, window or scope",
                      file=sys.stderr)
                return 2
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    lines = []
    for path in args or ["-"]:
        with open(path) if path != "-" else sys.stdin as f:
            lines += f.readlines()
    cases, order, tonarid = parse(lines)
    if not order:
        print("borrow-logflood-report: no CASE lines in the log", file=sys.stderr)
        return 1
    runs = max(len(cases[k]["ratio"]) for k in order)
    print(f"Per case over {runs} run(s): median (min-max). ratio: victim's events/s / baseline's; share: its CPU")
    print("share; cpuratio: its CPU share / the baseline's of the same run; window, life, scope: charged /")
    print("copiers' CPU over sysbench's run, from registration to exit,")
    print("and over everything the copiers' scopes ran (their start-up before registration included);")
    print("tonarid: tonarid's CPU time over sysbench's run, in CPUs (goal <= 0.030)")
    print(f"{'N':>2} {'flood':<12} {'mode':<16} " + " ".join(f"{m:<17}" for m in METRICS))
    for k in order:
        c = cases[k]
        print(f"{k[0]:>2} {k[1]:<12} {k[2]:<16} " + " ".join(f"{summary(c[m], 3 if m == 'tonarid' else 2):<17}" for m in METRICS))
    if tonarid:
        print("tonarid CPU per run (% of one CPU): " + ", ".join(f"{t:.2f}" for t in tonarid))
    low = [(k, min(cases[k][metric])) for k in order if cases[k][metric] and min(cases[k][metric]) < GOAL]
    for k, v in low:
        print(f"BELOW GOAL n={k[0]} flood={k[1]} mode={k[2]} {metric}={v:.3f}")
    if plot_path:
        plot(plot_path, cases, order, metric, ratio)
        print(f"wrote {plot_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
