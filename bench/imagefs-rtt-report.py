#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The report of bench/imagefs-rtt: reads the guest's output (RESULT, RTT and SKIP lines of
bench/imagefs-rtt-guest.sh) and prints, per RTT, workload and mode, the median create, run and
total time with their spread (min-max over the repetitions) and their ratios to nfs (medians; and
the spread of the total's ratio, repetition by repetition). With --plot=PREFIX it also draws one
figure per workload with gnuplot, PREFIX-WORKLOAD.png: create, run and total time against the
RTT, one line per mode with the spread as error bars, as the paper's Figs 5-8. tonari-imagefs's
per-mount counters, when the RESULT lines have them, are shown as medians: metadata and content
round trips and MiB fetched from the relay (by reads, and by the prefetch stream). Then the
issue's goals, each with its verdict: ToC cold total <= 1.0x NFS at every RTT; no metadata round
trip with the ToC; sequential reads with a warm cache >= 0.8x local (SEQREAD lines); the nginx
image's ToC load <= 50 ms; a cold start with a prefetch list within local + 3 RTT + bytes /
bandwidth (BANDWIDTH line: the link's measured rate).

usage: imagefs-rtt-report.py [--plot=PREFIX] [LOG]   (LOG defaults to stdin)
"""

import collections
import os
import statistics
import subprocess
import sys
import tempfile

MODE_ORDER = ["local", "nfs", "service_toc_cold", "service_toc_warm", "service_notoc", "imagefs_toc_cold",
              "imagefs_toc_warm", "imagefs_notoc", "imagefs_toc_prefetch"]


def with_toc(mode):
    """A tonari-imagefs mode that answers metadata from the ToC (the service's or the command line's)."""
    return mode.startswith(("imagefs_toc", "service_toc"))
WORKLOAD_ORDER = ["base", "python3", "nginx", "mariadb"]
TITLES = {
    "base": "base: echo helloworld (the paper's Distro container, Fig. 8)",
    "python3": "python3: python3 -c 'print(2**32-1)' (Language, Fig. 7)",
    "nginx": "nginx: start until GET / answered (WEB, Fig. 5)",
    "mariadb": "mariadb: mariadbd start until it accepts a connection (DB, Fig. 6)",
}
METRICS = ["create", "run", "total"]
COUNTERS = ["MetadataRoundTrips", "ContentRoundTrips", "BytesFetched", "PrefetchBytes", "CacheHits", "CacheMisses",
            "ToCBytes", "ToCLoadUSec", "ToCLoadSumUSec", "Errors"]


def order(values, preferred):
    return sorted(values, key=lambda v: (preferred.index(v) if v in preferred else len(preferred), v))


def parse(lines):
    runs = collections.defaultdict(dict)  # (rtt, workload, mode) -> rep -> fields
    measured_rtt, skipped, seqread, bandwidth = {}, [], collections.defaultdict(list), None
    for line in lines:
        words = line.split()
        if words and words[0] == "FAILED":
            skipped.append(line.strip())
            continue
        if not words or words[0] not in ("RESULT", "RTT", "SKIP", "SEQREAD", "BANDWIDTH"):
            continue
        f = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if words[0] == "RESULT":
            key = (int(f["rtt"]), f["workload"], f["mode"])
            runs[key][int(f["rep"])] = {m: float(f[m]) for m in METRICS + ["mount"] + COUNTERS if m in f}
        elif words[0] == "RTT":
            measured_rtt[int(f["rtt"])] = f["measured"]
        elif words[0] == "SEQREAD":
            seqread[(f["workload"], f["mode"])].append(int(f["bytes"]) / float(f["seconds"]) / 1e6)
        elif words[0] == "BANDWIDTH":
            bandwidth = float(f["mbps"])
        else:
            skipped.append(line.strip())
    return runs, measured_rtt, skipped, seqread, bandwidth


def fmt_spread(values):
    return "%.3f [%.3f-%.3f]" % (statistics.median(values), min(values), max(values))


def report(runs, measured_rtt, skipped):
    if not runs:
        sys.exit("imagefs-rtt-report: no RESULT lines in the input")
    rtts = sorted({k[0] for k in runs})
    workloads = order({k[1] for k in runs}, WORKLOAD_ORDER)
    modes = order({k[2] for k in runs}, MODE_ORDER)
    for s in skipped:
        print(s)
    print("times in seconds: median [min-max] over the repetitions; ratios: median / median of nfs,")
    print("total/nfs also as the spread of the per-repetition ratio")
    for rtt in rtts:
        print("\nRTT %d ms (measured TCP connect: %s ms)" % (rtt, measured_rtt.get(rtt, "?")))
        print("%-8s %-20s %2s %22s %22s %22s %6s %6s %s" % ("workload", "mode", "n", "create", "run", "total",
                                                        "c/nfs", "r/nfs", "total/nfs"))
        for w in workloads:
            nfs = runs.get((rtt, w, "nfs"))
            for m in modes:
                r = runs.get((rtt, w, m))
                if not r:
                    continue
                cols = {x: [v[x] for v in r.values()] for x in METRICS}
                ratios = ["", "", ""]
                if nfs:
                    med = {x: statistics.median(v[x] for v in nfs.values()) for x in METRICS}
                    ratios[0] = "%.2f" % (statistics.median(cols["create"]) / med["create"])
                    ratios[1] = "%.2f" % (statistics.median(cols["run"]) / med["run"])
                    per_rep = [r[i]["total"] / nfs[i]["total"] for i in r if i in nfs]
                    ratios[2] = "%.2f [%.2f-%.2f]" % (statistics.median(cols["total"]) / med["total"],
                                                      min(per_rep), max(per_rep))
                counters = ""
                if all("MetadataRoundTrips" in v for v in r.values()):
                    med = lambda k: statistics.median(v.get(k, 0) for v in r.values())
                    counters = "  metadata rt %d, content rt %d, fetched %.1f MiB" % (
                        med("MetadataRoundTrips"), med("ContentRoundTrips"), med("BytesFetched") / 1048576)
                    if med("PrefetchBytes"):
                        counters += " + prefetched %.1f MiB" % (med("PrefetchBytes") / 1048576)
                    if med("ToCLoadUSec"):
                        counters += ", ToC load %.1f ms" % (med("ToCLoadUSec") / 1000)
                print("%-8s %-20s %2d %22s %22s %22s %6s %6s %s%s" % (
                    w, m, len(r), fmt_spread(cols["create"]), fmt_spread(cols["run"]),
                    fmt_spread(cols["total"]), *ratios, counters))
    return rtts, workloads, modes


def verdict(ok):
    return "MET" if ok else "MISSED"


def goals(runs, measured_rtt, seqread, bandwidth, rtts, workloads):
    """The issue's goals, from medians (and the worst case where it says so)."""
    print("\ngoals (issue 17):")
    med = lambda r, k: statistics.median(v[k] for v in r.values() if k in v)
    for cold in ("service_toc_cold", "imagefs_toc_cold"):
        for rtt in rtts:
            ratios = []
            for w in workloads:
                c, n = runs.get((rtt, w, cold)), runs.get((rtt, w, "nfs"))
                if c and n:
                    ratios.append((med(c, "total") / med(n, "total"), w))
            if ratios:
                worst = max(ratios)
                print("  ToC cold total <= 1.0x NFS at RTT %3d ms (%s): %s (worst %.2f, %s; %s)" % (
                    rtt, cold, verdict(worst[0] <= 1.0), worst[0], worst[1],
                    ", ".join("%s %.2f" % (w, x) for x, w in ratios)))
    rt = [v["MetadataRoundTrips"] for k, r in runs.items() if with_toc(k[2]) for v in r.values()
          if "MetadataRoundTrips" in v]
    if rt:
        print("  metadata round trips with the ToC = 0: %s (max %d over %d runs)" % (verdict(max(rt) == 0), max(rt),
                                                                                   len(rt)))
    for (w, m), v in sorted(seqread.items()):
        if m != "local" and (w, "local") in seqread:
            ratio = statistics.median(v) / statistics.median(seqread[(w, "local")])
            print("  warm-cache sequential read >= 0.8x local (%s): %s (%.2f: %.0f MB/s [%.0f-%.0f] against %.0f MB/s"
                  " [%.0f-%.0f])" % (w, verdict(ratio >= 0.8), ratio, statistics.median(v), min(v), max(v),
                                     statistics.median(seqread[(w, "local")]), min(seqread[(w, "local")]),
                                     max(seqread[(w, "local")])))
    for rtt in rtts:
        for kind in ("service_toc", "imagefs_toc"):
            # ToCLoadUSec: the image's load, its layers' ToCs at once (the service's log line, or the
            # slowest layer of the command line's); ToCLoadSumUSec: the layers' own times summed.
            loads = [v["ToCLoadUSec"] / 1000 for k, r in runs.items() if k[0] == rtt and k[1] == "nginx" and
                     k[2].startswith(kind) for v in r.values() if "ToCLoadUSec" in v]
            sums = [v["ToCLoadSumUSec"] / 1000 for k, r in runs.items() if k[0] == rtt and k[1] == "nginx" and
                    k[2].startswith(kind) for v in r.values() if "ToCLoadSumUSec" in v]
            if loads:
                print("  nginx ToC load <= 50 ms at RTT %3d ms (%s*): %s (the image's: median %.1f ms [%.1f-%.1f];"
                      " layers summed %.1f ms)" % (rtt, kind, verdict(statistics.median(loads) <= 50),
                                                   statistics.median(loads), min(loads), max(loads),
                                                   statistics.median(sums)))
    if bandwidth:
        print("  link bandwidth (one TCP stream, RTT 0): %.0f MB/s" % bandwidth)
    for rtt in rtts:
        for w in workloads:
            p, loc = runs.get((rtt, w, "imagefs_toc_prefetch")), runs.get((rtt, w, "local"))
            if not p or not loc or not bandwidth:
                continue
            try:
                rtt_s = float(measured_rtt.get(rtt, rtt)) / 1000
            except ValueError:
                rtt_s = rtt / 1000
            nbytes = med(p, "PrefetchBytes") + med(p, "BytesFetched")
            bound = med(loc, "total") + 3 * rtt_s + nbytes / (bandwidth * 1e6)
            got = med(p, "total")
            print("  prefetch cold start within local + 3 RTT + bytes/bandwidth, RTT %3d ms, %-7s: %s (%.2f s against"
                  " %.2f s = local %.2f + 3 x %.1f ms + %.1f MiB / %.0f MB/s; %.2fx)" % (
                      rtt, w, verdict(got <= bound), got, bound, med(loc, "total"), rtt_s * 1000, nbytes / 1048576,
                      bandwidth, got / bound))


def plot(prefix, runs, rtts, workloads, modes):
    with tempfile.TemporaryDirectory() as tmp:
        for w in workloads:
            script = [
                "set terminal pngcairo size 1500,480 font ',10' noenhanced",
                "set output '%s-%s.png'" % (prefix, w),
                "set multiplot layout 1,3 title \"%s; median of %d runs, bars min-max\"" % (
                    TITLES.get(w, w).replace('"', "'"), max(len(r) for k, r in runs.items() if k[1] == w)),
                "set xlabel 'RTT (ms)'",
                "set ylabel 'seconds'",
                "set yrange [0:*]",
                "set xrange [-2:%d]" % (max(rtts) + 2),
                "set xtics (%s)" % ", ".join(str(r) for r in rtts),
                "set key top left",
                "set grid ytics",
            ]
            # The modes' points side by side around each RTT, so that their error bars do not hide
            # each other.
            step = max(rtts) / 80.0 if max(rtts) > 0 else 0.2
            for metric in METRICS:
                plots = []
                for i, m in enumerate(modes):
                    shift = (i - (len(modes) - 1) / 2.0) * step
                    data = os.path.join(tmp, "%s-%s-%s.dat" % (w, m, metric))
                    with open(data, "w") as f:
                        for rtt in rtts:
                            r = runs.get((rtt, w, m))
                            if r:
                                v = [x[metric] for x in r.values()]
                                f.write("%f %f %f %f\n" % (rtt + shift, statistics.median(v), min(v), max(v)))
                    if os.path.getsize(data):
                        plots.append("'%s' using 1:2:3:4 with yerrorlines title '%s'" % (data, m))
                script.append("set title '%s time'" % metric)
                script.append("plot " + ", ".join(plots))
            script.append("unset multiplot")
            subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
            print("plot: %s-%s.png" % (prefix, w))


def main():
    args = sys.argv[1:]
    prefix = None
    if args and args[0].startswith("--plot="):
        prefix = args.pop(0)[len("--plot="):]
    if len(args) > 1:
        sys.exit(__doc__)
    lines = open(args[0]) if args else sys.stdin
    runs, measured_rtt, skipped, seqread, bandwidth = parse(lines)
    rtts, workloads, modes = report(runs, measured_rtt, skipped)
    goals(runs, measured_rtt, seqread, bandwidth, rtts, workloads)
    failed = [s for s in skipped if s.startswith("FAILED")]
    if failed:
        sys.exit("imagefs-rtt-report: %d runs failed:\n%s" % (len(failed), "\n".join(failed)))
    if prefix:
        plot(prefix, runs, rtts, workloads, modes)


if __name__ == "__main__":
    main()
