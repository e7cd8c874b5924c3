#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/request-domains' report: reads the guest's OVERHEAD/FIG5/FIG4/MOVE lines from LOG, prints
# every measurement, then per part the median and spread (min-max) of the ratios, and draws
# PREFIX-overhead.png (per-pair req/s ratio, with the goal and the paper's ratio), PREFIX-fig5.png
# (CPU share of a request at CPUQuota=50% vs its length, next to the paper's finding) and
# PREFIX-fig4.png (a normal host's throughput next to a heavy one, limited or not). Also the
# server's CPU time per request of each side (OVERHEAD's *_cpu_us), mpm-itk as a third Apache (ITK
# lines) and perf's view of where the guest's time went (PROFILE_* lines).
#
# usage: request-domains-report.py LOG PREFIX
import atexit
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

log, prefix = sys.argv[1], sys.argv[2]


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def spread(xs, fmt="%.3f"):
    return (fmt + " (min " + fmt + ", max " + fmt + ", n=%d)") % (statistics.median(xs), min(xs), max(xs), len(xs))


over, overlap, unmapped = defaultdict(list), defaultdict(list), defaultdict(list)
mixed, moves = defaultdict(list), []
fig5, fig4, move = defaultdict(list), defaultdict(list), defaultdict(list)
cpu, itk, prof_incl, prof_top = defaultdict(list), [], defaultdict(dict), defaultdict(list)
header = []
for line in open(log, errors="replace"):
    line = line.strip()
    if line.startswith(("host:", "guest:", "command:")):
        header.append(line)
    elif line.startswith("OVERHEAD "):
        f = fields(line)
        over[f["mpm"]].append((int(f["pair"]), float(f["base_rps"]), float(f["tonari_rps"])))
        if "tonari_unmapped_rps" in f:
            unmapped[f["mpm"]].append(float(f["tonari_unmapped_rps"]) / float(f["base_rps"]))
        if "tonari_mixed_rps" in f:
            mixed[f["mpm"]].append(tuple(float(f[k]) for k in ("base_mixed_rps", "tonari_mixed_rps",
                                                               "base_mixed_cpu_us", "tonari_mixed_cpu_us")))
        if "base_cpu_us" in f:
            cpu[f["mpm"]].append(tuple(float(f[k]) for k in ("base_cpu_us", "tonari_cpu_us", "tonari_unmapped_cpu_us")))
    elif line.startswith("MOVES "):
        moves.append(fields(line))
    elif line.startswith("ITK "):
        itk.append(fields(line))
    elif line.startswith("PROFILE_INCL "):
        f = fields(line)
        prof_incl[(f["mpm"], f["side"])][f["sym"]] = float(f["pct"])
        prof_incl[(f["mpm"], f["side"])]["rps"] = f["rps"]
    elif line.startswith("PROFILE_TOP "):
        f = fields(line)
        prof_top[(f["mpm"], f["side"])].append((float(f["pct"]), f["sym"]))
    elif line.startswith("OVERLAP "):
        f = fields(line)
        overlap[f["mpm"]].append((int(f["pair"]), float(f["base_rps"]), float(f["tonari_rps"])))
    elif line.startswith("FIG5 "):
        f = fields(line)
        fig5[int(f["ms"])].append(f)
    elif line.startswith("FIG4 "):
        f = fields(line)
        fig4[f["heavy"]].append(f)
    elif line.startswith("MOVE "):
        f = fields(line)
        move[(f["mount"], f["kind"])].append(f)
if not (over or fig5 or fig4 or move or itk or prof_top):
    sys.exit("request-domains-report: no OVERHEAD, FIG5, FIG4 or MOVE lines in %s" % log)
print("\n".join(header))
tmp = tempfile.mkdtemp(prefix="request-domains-report.")
atexit.register(shutil.rmtree, tmp, True)


def gnuplot(script):
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write('set terminal pngcairo size 900,560 font ",11" noenhanced\n' + script)
    subprocess.run(["gnuplot", path], check=True)


if over:
    print("\n== §4 overhead: static page, 100 000 hosts mapped, req/s of Apache with mod_tonari ÷ the same Apache")
    print("   without it (peer; paper: mod_mruby+cgroup 32 322 ÷ 32 915 = 0.982; goal >= 0.995), alternating pairs")
    plot = []
    for i, (m, rows) in enumerate(sorted(over.items(), key=lambda kv: kv[0] != "prefork")):
        q = [t / b for _, b, t in rows]
        for (p, b, t), r in zip(rows, q):
            print("  %-7s pair %2d: base %7.1f req/s, tonari %7.1f req/s, ratio %.3f" % (m, p, b, t, r))
        base, ton = [b for _, b, _ in rows], [t for _, _, t in rows]
        print("  %-7s: ratio median %s" % (m, spread(q)))
        if unmapped.get(m):
            print("  %-7s: a host outside the map (no move) ÷ base, ratio median %s" % (m, spread(unmapped[m])))
        if cpu.get(m):
            # The server's CPU per request: base ÷ tonari is the req/s ratio a CPU-bound server would
            # reach (goal >= 0.995 means at most 0.5 % more CPU per request).
            for p, (b, t, u) in zip([p for p, _, _ in rows], cpu[m]):
                print("  %-7s pair %2d: server CPU per request base %.1f us, tonari %.1f us, tonari unmapped %.1f us"
                      % (m, p, b, t, u))
            print("  %-7s: CPU per request base ÷ tonari, median %s; base ÷ tonari unmapped %s"
                  % (m, spread([b / t for b, t, _ in cpu[m]]), spread([b / u for b, _, u in cpu[m]])))
        if mixed.get(m):
            # Four hosts in four domains at once (--parts=...,mixed): workers change domains.
            for p, (b, t, bc, tc) in zip([p for p, _, _ in rows], mixed[m]):
                print("  %-7s pair %2d, four domains at once: base %7.1f req/s, tonari %7.1f req/s, ratio %.3f;"
                      " CPU per request base %.1f us, tonari %.1f us" % (m, p, b, t, t / b, bc, tc))
            print("  %-7s: four domains at once, ratio median %s; CPU per request base ÷ tonari %s"
                  % (m, spread([t / b for b, t, _, _ in mixed[m]]), spread([bc / tc for _, _, bc, tc in mixed[m]])))
            dat = os.path.join(tmp, "mixed-%s.dat" % m)
            with open(dat, "w") as f:
                for p, (b, t, _, _) in zip([p for p, _, _ in rows], mixed[m]):
                    f.write("%d %f\n" % (p, t / b))
            plot.append('"%s" using ($1+%.2f):2 with points pt %d ps 1.3 title "%s, four domains at once: pair ratio (median %.3f)"'
                        % (dat, 0.15 * i + 0.45, 4 + 8 * i, m, statistics.median([t / b for b, t, _, _ in mixed[m]])))
        print("  %-7s: base req/s median %s; tonari %s; same-side spread max/min %.2f and %.2f"
              % (m, spread(base, "%.1f"), spread(ton, "%.1f"), max(base) / min(base), max(ton) / min(ton)))
        dat = os.path.join(tmp, "over-%s.dat" % m)
        with open(dat, "w") as f:
            for (p, b, t), r in zip(rows, q):
                f.write("%d %f\n" % (p, r))
        plot.append('"%s" using ($1+%.2f):2 with points pt %d ps 1.3 title "%s: pair ratio (median %.3f)"'
                    % (dat, 0.15 * i, 7 + 2 * i, m, statistics.median(q)))
        rows = overlap.get(m, [])
        if rows:
            q = [t / b for _, b, t in rows]
            for p, b, t in rows:
                print("  %-7s pair %2d, both at once: base %7.1f req/s, tonari %7.1f req/s, ratio %.3f" % (m, p, b, t, t / b))
            print("  %-7s: both at once, ratio median %s" % (m, spread(q)))
            dat = os.path.join(tmp, "overlap-%s.dat" % m)
            with open(dat, "w") as f:
                for (p, b, t), r in zip(rows, q):
                    f.write("%d %f\n" % (p, r))
            plot.append('"%s" using ($1+%.2f):2 with points pt %d ps 1.3 title "%s, both at once: pair ratio (median %.3f)"'
                        % (dat, 0.15 * i + 0.3, 6 + 2 * i, m, statistics.median(q)))
    gnuplot('''set output "%s-overhead.png"
set title "§4 overhead: static page, 100 000 hosts mapped; req/s with mod_tonari ÷ without (per alternating pair)"
set xlabel "pair (base and tonari runs back to back, order flipped every pair)"
set ylabel "req/s ratio tonari ÷ base"
set grid
set key below
plot 0.995 with lines dt 2 lc rgb "dark-green" title "goal 0.995", \\
     0.982 with lines dt 3 lc rgb "red" title "paper (mod_mruby + cgroup v1): 0.982", \\
     1 with lines lc rgb "gray" notitle, %s
''' % (prefix, ", ".join(plot)))
    print("  plot: %s-overhead.png" % prefix)

if moves:
    print("\n== Moves per request (the kernel's cgroup:cgroup_attach_task events over one ab run, whole guest)")
    for f in moves:
        print("  %-7s %-8s: %s moves, %s requests, %.3f moves per request"
              % (f["mpm"], f["shape"], f["moves"], f["requests"], int(f["moves"]) / max(1, int(f["requests"]))))

if itk:
    print("\n== mpm-itk for context: a third Apache (prefork + mpm_itk, one virtual host with AssignUserID), same page")
    print("   and ab, taking turns with the prefork peer (base) and mod_tonari's Apache (prefork, 100 000 hosts mapped)")
    for f in itk:
        print("  rep %s: req/s base %s, tonari %s, itk %s; server CPU per request (us) base %s, tonari %s, itk %s"
              % (f["rep"], f["base_rps"], f["tonari_rps"], f["itk_rps"], f["base_cpu_us"], f["tonari_cpu_us"], f["itk_cpu_us"]))
    print("  req/s itk ÷ base, median %s; tonari ÷ base %s; CPU per request base ÷ itk %s, base ÷ tonari %s"
          % (spread([float(f["itk_rps"]) / float(f["base_rps"]) for f in itk]),
             spread([float(f["tonari_rps"]) / float(f["base_rps"]) for f in itk]),
             spread([float(f["base_cpu_us"]) / float(f["itk_cpu_us"]) for f in itk]),
             spread([float(f["base_cpu_us"]) / float(f["tonari_cpu_us"]) for f in itk])))

if prof_top:
    print("\n== perf (cpu-clock, whole guest) while ab runs against one Apache: inclusive share of the cgroup move path,")
    print("   then the top symbols (self)")
    for key in sorted(prof_top):
        incl = prof_incl.get(key, {})
        print("  %s, %s (%s req/s): %s" % (key[0], key[1], incl.get("rps", "?"),
              ", ".join("%s %.2f %%" % (k, v) for k, v in sorted(incl.items(), key=lambda kv: str(kv[0])) if k != "rps") or "no samples in the move path"))
        for pct, sym in prof_top[key][:12]:
            print("      %6.2f %%  %s" % (pct, sym))

if fig5:
    print("\n== Fig 5 accuracy: one CGI request at a time, request time unlimited ÷ CPUQuota=50% (goal 50 ± 5 % for >= 2 ms;")
    print("   paper: below 50 % under 6 ms, 50 % from 6 ms); CPU time mod_tonari logged per limited request")
    dat = os.path.join(tmp, "fig5.dat")
    with open(dat, "w") as out:
        for ms in sorted(fig5):
            shares = [100 * float(f["unlimited_ms"]) / float(f["limited_ms"]) for f in fig5[ms]]
            for f, s in zip(fig5[ms], shares):
                print("  %2d ms rep %s: unlimited %.2f ms, limited %.2f ms, share %.1f %%, logged %s us (%s requests), unlimited logged %s us"
                      % (ms, f["rep"], float(f["unlimited_ms"]), float(f["limited_ms"]), s, f["logged_cpu_us"],
                         f.get("logged_n", "?"), f.get("unl_logged_cpu_us", "?")))
            logged = [int(f["logged_cpu_us"]) for f in fig5[ms]]
            # The CPU share each side's requests got: CPU time logged per request ÷ request time.
            got_lim = [int(f["logged_cpu_us"]) / 10 / float(f["limited_ms"]) for f in fig5[ms]]
            got_unl = [int(f.get("unl_logged_cpu_us", 0)) / 10 / float(f["unlimited_ms"]) for f in fig5[ms]]
            print("  %2d ms: CPU share the requests got (logged CPU ÷ request time): limited %s %%, unlimited %s %%"
                  % (ms, spread(got_lim, "%.1f"), spread(got_unl, "%.1f")))
            ok = "within" if all(45 <= s <= 55 for s in shares) else "OUTSIDE"
            print("  %2d ms: share median %s %%, %s 50 ± 5; logged CPU per request median %d us (the CGI's own loop: %d us)"
                  % (ms, spread(shares, "%.1f"), ok, statistics.median(logged), ms * 1000))
            out.write("%d %f %f %f %f %f %f %f %f %f\n" % (ms, statistics.median(shares), min(shares), max(shares),
                                                          statistics.median(got_lim), min(got_lim), max(got_lim),
                                                          statistics.median(got_unl), min(got_unl), max(got_unl)))
    gnuplot('''set output "%s-fig5.png"
set title "Fig 5: CPU share of one CGI request under CPUQuota=50%% (unlimited ÷ limited request time)"
set xlabel "CPU time of the CGI busy loop per request (ms)"
set ylabel "performance control rate, CPU share (%%)"
set yrange [0:110]
set xrange [0:21]
set grid
set key below
set arrow from 6,0 to 6,110 nohead dt 3 lc rgb "red"
set label "paper: accurate from 6 ms,\\nbelow 50 %% under 6 ms" at 6.3,15 tc rgb "red"
plot 55 with lines dt 2 lc rgb "dark-green" title "goal 50 ± 5 %% from 2 ms", 45 with lines dt 2 lc rgb "dark-green" notitle, \\
     50 with lines dt 3 lc rgb "red" title "paper (mod_mruby + cgroup v1) from 6 ms: 50 %%", \\
     "%s" using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb "blue" title "mod_tonari: unlimited ÷ limited request time (median, min-max)", \\
     "" using ($1+0.2):5:6:7 with yerrorlines lw 1 pt 5 lc rgb "purple" title "CPU share a limited request got (logged CPU ÷ its time)", \\
     "" using ($1+0.4):8:9:10 with yerrorlines lw 1 dt 4 pt 4 lc rgb "gray40" title "the same, unlimited"
''' % (prefix, dat))
    print("  plot: %s-fig5.png" % prefix)

if fig4:
    print("\n== Fig 4 isolation: a normal host's req/s next to a heavy host (4 CGI loops writing) ÷ alone; the heavy host's")
    print("   CPU and writes (goal: the normal host >= 0.95, the heavy one 25 % CPU and 30 MB/s ± 5 %)")
    dat = os.path.join(tmp, "fig4.dat")
    with open(dat, "w") as out:
        for i, h in enumerate(["heavy", "unl"]):
            rows = fig4.get(h, [])
            if not rows:
                continue
            q = [float(f["normal_loaded_rps"]) / float(f["normal_alone_rps"]) for f in rows]
            cpu = [float(f["heavy_cpu_pct"]) for f in rows]
            mb = [float(f["heavy_write_mbps"]) for f in rows]
            name = "limited (CPUQuota=25%, 30 MB/s)" if h == "heavy" else "unlimited domain"
            for f, r in zip(rows, q):
                print("  rep %s, heavy host %s: normal %.3f of alone (%s / %s req/s), heavy %s %% CPU, %s MB/s written"
                      % (f["rep"], name, r, f["normal_loaded_rps"], f["normal_alone_rps"], f["heavy_cpu_pct"], f["heavy_write_mbps"]))
            print("  heavy host %s: normal host keeps %s; heavy CPU %s %%; writes %s MB/s"
                  % (name, spread(q), spread(cpu, "%.1f"), spread(mb, "%.1f")))
            out.write('%d "%s" %f %f %f %f %f %f\n' % (i, "heavy " + ("limited" if h == "heavy" else "unlimited"),
                                                       100 * statistics.median(q), 100 * min(q), 100 * max(q),
                                                       statistics.median(cpu), min(cpu), max(cpu)))
    gnuplot('''set output "%s-fig4.png"
set title "Fig 4 isolation: a normal host next to a heavy host (4 CGI loops writing 2 MB each)"
set ylabel "%%"
set yrange [0:*]
set xrange [-0.6:1.6]
set grid y
set key below
set bmargin 7
set style fill solid 0.6
set boxwidth 0.3
set xtics ("heavy host limited\\n(CPUQuota=25%%%%, 30 MB/s)" 0, "heavy host unlimited" 1)
plot "%s" using ($1-0.17):3 with boxes lc rgb "blue" title "normal host req/s, %% of alone (median)", \\
     "" using ($1-0.17):3:4:5 with yerrorbars lc rgb "black" pt 0 notitle, \\
     "" using ($1+0.17):6 with boxes lc rgb "orange" title "heavy host CPU, %% of one CPU (median)", \\
     "" using ($1+0.17):6:7:8 with yerrorbars lc rgb "black" pt 0 notitle, \\
     95 with lines dt 2 lc rgb "dark-green" title "goal: normal host >= 95 %%", \\
     25 with lines dt 3 lc rgb "red" title "the heavy host's limit 25 %%"
''' % (prefix, dat))
    print("  plot: %s-fig4.png" % prefix)

if move:
    print("\n== Cost of one move (tonari_domain_enter/leave: one write), µs, median of the repetitions (min-max)")
    for (mount, kind), rows in sorted(move.items()):
        parts = []
        for k in ("enter_p50_us", "enter_p99_us", "leave_p50_us", "leave_p99_us"):
            parts.append("%s %s" % (k, spread([float(f[k]) for f in rows], "%.1f")))
        print("  %s, %s: %s" % (kind, mount, "; ".join(parts)))
