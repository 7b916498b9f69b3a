#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark guests' logs into results.json, plots and tables.

Usage: bench-report.py OUT-DIR MODE=GUEST-LOG...
       bench-report.py GUEST-LOG OUT-DIR        (one log of unknown mode)

MODE is "icount" (the deterministic mode: QEMU's instruction counter is
the guest's clock, so its figures repeat across boots; these are the ones
to judge by) or "wall" (the host's clock: the second opinion, and the
only one with two CPUs).  The guest (tests/bench/run-bench) prints one
line per measurement, "afbus-bench: bench=... bus=... run=N KEY=VALUE...",
and "afbus-bench-info: ..." lines about itself (run-qemu.sh adds one for
the host's side).  For each mode this groups the runs of each figure,
reports min, median and max over the runs, computes the ratios
afbus/dbus-daemon (Debian's), afbus/dbus-daemon-fork, afbus/dbus-broker
and afbus/peer-to-peer of the medians (AF_BUS/AF_UNIX for the raw
sockets; and for each path through the bridge, a fork daemon on unix: and
afbus: at once, the path against dbus-daemon, dbus-broker, afbus and
peer-to-peer), draws OUT-DIR/*-MODE.svg with gnuplot and prints a table; it
writes every mode into OUT-DIR/results.json ("modes", and "judge_by"
naming the deterministic one; "sources": the hash of the measured
sources, tests/bench/bench-fresh) and the tables into OUT-DIR/table.txt.
Failed measurements are listed (and kept in results.json); the exit
status is 1 if one of AF_BUS's own (bus=afbus,
or the bridge's paths, or the raw sockets) failed in any mode.  A daemon that run-bench had to restart because it
exited is listed too ("restarts").
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

BUSES = ["afbus", "dbus-daemon-fork", "dbus-daemon", "dbus-broker", "peer-to-peer"]
REFERENCES = ["dbus-daemon", "dbus-daemon-fork", "dbus-broker", "peer-to-peer"]
# The paths through one fork daemon listening on unix: and afbus: at once
# (run-bench's "bridge"): legacy/native client or emitter to legacy/native
# service or subscribers; each against these.
BRIDGE = ["bridge-ll", "bridge-ln", "bridge-nl"]
BRIDGE_REFERENCES = ["dbus-daemon", "dbus-broker", "afbus", "peer-to-peer"]
TAGS = ["bench", "bus", "family", "size", "mode", "subscribers", "receivers",
        "peers", "rules"]
# Figures of each benchmark worth a ratio, and whether lower is better.
METRICS = {
    "rtt": ["median_us", "p99_us", "calls_per_s", "ctxt_per_op", "cpu_us_per_op",
            "client_cpu_us_per_op", "service_cpu_us_per_op", "daemon_cpu_us_per_op"],
    "raw-pingpong": ["median_us", "p99_us", "rounds_per_s", "ctxt_per_op"],
    "raw-fanout": ["msgs_per_s", "ctxt_per_op", "cpu_us_per_op", "lost", "reordered"],
    "raw-slow": ["msgs_per_s", "send_ms", "lost", "slow_lost", "reordered"],
    "signals": ["msgs_per_s", "ctxt_per_op", "cpu_us_per_op", "daemon_cpu_us_per_op"],
    "peers-rtt": ["median_us", "calls_per_s"],
    "peers-signals": ["msgs_per_s"],
    "rules-rtt": ["median_us", "calls_per_s"],
    "rules-signals": ["msgs_per_s"],
}
# Other libraries at both ends (bench-gdbus, bench-sdbus): as libdbus's rows.
for _lib in ("gdbus", "sdbus"):
    METRICS[_lib + "-rtt"] = METRICS["rtt"]
    METRICS[_lib + "-signals"] = METRICS["signals"]
LABEL = {
    "median_us": "median latency (us)", "p99_us": "p99 latency (us)",
    "calls_per_s": "calls/s", "rounds_per_s": "round trips/s",
    "msgs_per_s": "delivered/s", "ctxt_per_op": "context switches per op",
    "cpu_us_per_op": "CPU us per op",
    "client_cpu_us_per_op": "client CPU us", "service_cpu_us_per_op": "service CPU us",
    "daemon_cpu_us_per_op": "daemon CPU us",
}
MODES = {
    "icount": "DETERMINISTIC (the figures to judge by): QEMU -icount shift=0,sleep=off,"
              " guest time = instructions executed, 1 ns each; repeats across boots",
    "wall": "WALL-CLOCK (second opinion): QEMU TCG on the host's clock;"
            " varies with the host's load",
}
SHORT = {"dbus-daemon": "daemon", "dbus-daemon-fork": "fork-unix",
         "dbus-broker": "broker", "peer-to-peer": "p2p",
         "bridge-ll": "legacy>leg", "bridge-ln": "legacy>nat", "bridge-nl": "native>leg"}


def parse_fields(text):
    fields = {}
    for word in text.split():
        if "=" in word:
            k, v = word.split("=", 1)
            fields[k] = v
    return fields


def number(v):
    try:
        return float(v)
    except ValueError:
        return None


def read_log(path):
    results, failures, info = [], [], []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").rstrip("\n")
            if line.startswith("afbus-bench: "):
                results.append(parse_fields(line[len("afbus-bench: "):]))
            elif line.startswith("afbus-bench-fail: "):
                failures.append(line[len("afbus-bench-fail: "):])
            elif line.startswith("afbus-bench-info: "):
                info.append(line[len("afbus-bench-info: "):])
    return results, failures, info


def group(results):
    """{key tuple: {"tags": {...}, "runs": [fields...]}} in log order."""
    groups = {}
    for r in results:
        tags = {t: r[t] for t in TAGS if t in r}
        key = tuple(sorted(tags.items()))
        groups.setdefault(key, {"tags": tags, "runs": []})["runs"].append(r)
    return groups


def summarize(g):
    figures = {}
    for k in g["runs"][0]:
        if k in TAGS or k == "run":
            continue
        vals = [number(r.get(k, "")) for r in g["runs"]]
        vals = [v for v in vals if v is not None]
        if vals:
            figures[k] = {"min": min(vals), "median": statistics.median(vals),
                          "max": max(vals)}
    return figures


def guest_info(info):
    guest = {}
    for line in info:
        f = parse_fields(line)
        if "cpus" in f and "clocksource" in f:
            guest.update(cpus=int(f["cpus"]), clocksource=f["clocksource"],
                         kernel=f.get("kernel"), clock=f.get("clock"))
        elif line.startswith("options "):
            guest["options"] = parse_fields(line[len("options "):])
        elif line.startswith("seconds="):
            guest["benchmark_seconds"] = int(f["seconds"])
        elif line.startswith("check "):
            guest.setdefault("checks", []).append(line[len("check "):])
            if "=FAILED:" in line:
                guest.setdefault("failed_checks", []).append(line[len("check "):])
        elif line.startswith("host "):
            guest["host_run"] = parse_fields(line[len("host "):])
        elif "bus" in f:
            guest.setdefault("buses", {})[f["bus"]] = {
                k: v for k, v in f.items() if k != "bus"}
            if "failed to start" in line:
                guest["buses"][f["bus"]]["failed"] = True
    return guest


def host_info():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                          text=True, check=False).stdout.split("\n")[0]
    accel = "kvm" if os.environ.get("AFBUS_KVM") == "1" else "tcg"
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(),
            "qemu": qemu, "accel": accel,
            "note": "TCG emulation: compare ratios within one boot, not absolute times"
            if accel == "tcg" else ""}


def ratios(entries):
    """afbus against each reference, and AF_BUS against AF_UNIX."""
    out = []
    index = {}
    for e in entries:
        t = dict(e["tags"])
        who = t.pop("bus", None) or t.pop("family", None)
        index[(tuple(sorted(t.items())), who)] = e
    for (key, who), e in index.items():
        tags = dict(key)
        pairs = []
        if who == "afbus":
            pairs = [("afbus/" + ref, index.get((key, ref))) for ref in REFERENCES]
        elif who in BRIDGE:
            pairs = [(who + "/" + ref, index.get((key, ref))) for ref in BRIDGE_REFERENCES]
        elif who == "bus":
            pairs = [("AF_BUS/AF_UNIX", index.get((key, "unix"))),
                     ("AF_BUS/UDP", index.get((key, "udp")))]
        for metric in METRICS.get(tags["bench"], []):
            if metric not in e["figures"]:
                continue
            r = dict(tags, metric=metric)
            for name, other in pairs:
                if other and other["figures"].get(metric, {}).get("median"):
                    r[name] = round(e["figures"][metric]["median"] /
                                    other["figures"][metric]["median"], 3)
            if len(r) > len(tags) + 1:
                out.append(r)
    return out


def fmt(v):
    if v is None:
        return "-"
    if v >= 1000:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def cell(e, metric):
    """median ±half the range in percent of it."""
    if not e or metric not in e["figures"]:
        return "-"
    f = e["figures"][metric]
    spread = (f["max"] - f["min"]) / 2 / f["median"] * 100 if f["median"] else 0
    return "%s ±%.0f%%" % (fmt(f["median"]), spread)


def find(entries, **tags):
    for e in entries:
        if all(e["tags"].get(k) == str(v) for k, v in tags.items()):
            return e
    return None


def ratio_of(rat, name, metric, **tags):
    for r in rat:
        if r["metric"] == metric and name in r and \
                all(r.get(k) == str(v) for k, v in tags.items()):
            return r[name]
    return None


def mem_median(entries, grp, k, bus, metric):
    e = find(entries, bench=grp + "-mem", bus=bus, **{grp: k})
    if not e or metric not in e["figures"]:
        return None
    return e["figures"][metric]["median"]


def memory_table(entries, w0, w):
    """Memory per idle peer (the deltas with the most peers, divided by
    their number) and per match rule (with the most rules, less with the
    fewest, divided by the difference), kernel slab and daemon RSS."""
    lines = []
    buses = [b for b in BUSES if b != "peer-to-peer"]
    peers = sorted({int(e["tags"]["peers"]) for e in entries
                    if e["tags"]["bench"] == "peers-mem"})
    rules = sorted({int(e["tags"]["rules"]) for e in entries
                    if e["tags"]["bench"] == "rules-mem"})
    if not peers and not rules:
        return lines
    lines.append("")
    lines.append("Memory: kernel slab (/proc/meminfo Slab) and the daemon's RSS,"
                 " deltas as the idle peers and rules are set up")
    lines.append(("%-*s" % (w0, "")) + "".join("%*s" % (w, SHORT.get(b, b)) for b in buses))

    def row(label, vals):
        lines.append(("%-*s" % (w0, label)) +
                     "".join("%*s" % (w, "-" if v is None else "%.2f" % v) for v in vals))

    if peers:
        k = peers[-1]
        for metric, what in (("slab_kb", "kernel"), ("daemon_rss_kb", "daemon")):
            vals = []
            for b in buses:
                v = mem_median(entries, "peers", k, b, metric)
                vals.append(None if v is None else v / k)
            row("per idle peer (P=%d): %s KiB" % (k, what), vals)
    if len(rules) > 1:
        lo, hi = rules[0], rules[-1]
        for metric, what in (("slab_kb", "kernel"), ("daemon_rss_kb", "daemon")):
            vals = []
            for b in buses:
                a = mem_median(entries, "rules", hi, b, metric)
                z = mem_median(entries, "rules", lo, b, metric)
                vals.append(None if a is None or z is None else (a - z) * 1024 / (hi - lo))
            row("per rule (R=%d-%d): %s bytes" % (lo, hi, what), vals)
    return lines


def bridge_table(entries, rat, o, w0, w):
    """The paths through the bridge beside the buses: round trip and
    signals, each path against dbus-daemon and dbus-broker."""
    if not any(e["tags"].get("bus") in BRIDGE for e in entries):
        return []
    cols = BRIDGE + ["afbus", "dbus-daemon", "dbus-broker", "peer-to-peer"]
    refs = [(b, r) for r in ("dbus-daemon", "dbus-broker") for b in BRIDGE]
    lines = ["", "Through the bridge: one fork daemon on unix: and afbus: at once (as the"
             " system bus);", "legacy = the fork's libdbus on its unix: address, native ="
             " on afbus:.  Last 6 columns: path / daemon, path / broker.",
             ("%-*s" % (w0, "")) + "".join("%*s" % (w, SHORT.get(c, c)) for c in cols) +
             "".join("%*s" % (8, {"bridge-ll": "ll", "bridge-ln": "ln", "bridge-nl": "nl"}[b] +
                              "/" + SHORT[r][0]) for b, r in refs)]

    def row(label, metric, **tags):
        line = "%-*s" % (w0, label)
        line += "".join("%*s" % (w, cell(find(entries, bus=c, **tags), metric)) for c in cols)
        for b, r in refs:
            v = ratio_of(rat, b + "/" + r, metric, **tags)
            line += "%*s" % (8, "-" if v is None else "%.2f" % v)
        lines.append(line)

    for size, name in (("0", "rtt empty"), ("4096", "rtt 4 KiB")):
        if not find(entries, bench="rtt", bus="bridge-ll", size=size):
            continue
        for m in ("median_us", "calls_per_s", "cpu_us_per_op", "client_cpu_us_per_op",
                  "service_cpu_us_per_op", "daemon_cpu_us_per_op"):
            row("%s: %s" % (name, LABEL[m]), m, bench="rtt", size=size)
    for e in entries:
        t = e["tags"]
        if t["bench"] == "signals" and t["bus"] == "bridge-ll":
            row("signals N=%s %s: delivered/s" % (t["subscribers"], t["mode"]), "msgs_per_s",
                bench="signals", subscribers=t["subscribers"], mode=t["mode"])
    for e in entries:
        t = e["tags"]
        if t["bench"] == "signals" and t["bus"] == "bridge-ll":
            row("signals N=%s %s: daemon CPU us" % (t["subscribers"], t["mode"]),
                "daemon_cpu_us_per_op", bench="signals", subscribers=t["subscribers"],
                mode=t["mode"])
    return lines


def table(entries, rat, guest, mode):
    lines = []
    w0, w = 32, 14
    cols = BUSES
    head = ("%-*s" % (w0, "")) + "".join("%*s" % (w, SHORT.get(c, c)) for c in cols) + \
        "".join("%*s" % (12, SHORT[r]) for r in REFERENCES)

    def bus_row(label, metric, **tags):
        row = "%-*s" % (w0, label)
        row += "".join("%*s" % (w, cell(find(entries, bus=b, **tags), metric)) for b in cols)
        for ref in REFERENCES:
            v = ratio_of(rat, "afbus/" + ref, metric, **tags)
            row += "%*s" % (12, "-" if v is None else "%.2f" % v)
        lines.append(row)

    o = guest.get("options", {})
    lines.append("=== " + MODES.get(mode, "mode %s" % mode))
    lines.append("AF_BUS benchmarks: %s CPUs, clocksource %s, kernel %s; median of %s runs"
                 " ±half the min-max range" % (guest.get("cpus"), guest.get("clocksource"),
                                                guest.get("kernel"), o.get("runs")))
    hr = guest.get("host_run", {})
    if hr:
        lines.append("QEMU: %s, -icount %s, %s CPU(s); %s s of host time; bzImage sha256 %s" % (
            hr.get("accel"), hr.get("icount"), hr.get("qemu_cpus"), hr.get("wall_seconds"),
            hr.get("bzimage", "?")))
    for c in guest.get("failed_checks", []):
        lines.append("WARNING: guest check failed, figures are suspect: " + c)
    lines.append("Buses: afbus = fork's dbus-daemon on afbus:; fork-unix = the fork on unix:;"
                 " daemon = Debian's dbus-daemon;")
    lines.append("broker = Debian's dbus-broker; p2p = direct connection, no bus."
                 "  Last 4 columns: afbus / that column (ratio of medians).")
    if find(entries, bench="rtt"):
        lines.append("")
        lines.append("Method-call round trip, %s calls after %s warm-up" %
                     (o.get("calls"), o.get("warmup")))
        lines.append(head)
        for size, name in (("0", "empty"), ("4096", "4 KiB")):
            for m in ("median_us", "p99_us", "calls_per_s", "ctxt_per_op", "cpu_us_per_op",
                      "client_cpu_us_per_op", "service_cpu_us_per_op",
                      "daemon_cpu_us_per_op"):
                bus_row("%s: %s" % (name, LABEL[m]), m, bench="rtt", size=size)
    sigs = [e for e in entries if e["tags"]["bench"] == "signals" and e["tags"]["bus"] == "afbus"]
    if sigs:
        lines.append("")
        lines.append("Signals, one emitter to N subscribers: delivered signals/s")
        lines.append(head)
        for e in sigs:
            t = e["tags"]
            bus_row("N=%s %s matching" % (t["subscribers"], t["mode"]), "msgs_per_s",
                    bench="signals", subscribers=t["subscribers"], mode=t["mode"])
        for e in sigs:
            t = e["tags"]
            bus_row("N=%s %s: ctxt/signal" % (t["subscribers"], t["mode"]), "ctxt_per_op",
                    bench="signals", subscribers=t["subscribers"], mode=t["mode"])
    lines.extend(bridge_table(entries, rat, o, w0, w))
    for lib, name in (("gdbus", "GDBus"), ("sdbus", "sd-bus")):
        if not find(entries, bench=lib + "-rtt"):
            continue
        lines.append("")
        lines.append("%s at both ends: round trip (%s calls, empty) and signals to 4 subscribers"
                     % (name, o.get("calls")))
        lines.append(head)
        for m in ("median_us", "p99_us", "calls_per_s", "ctxt_per_op", "cpu_us_per_op",
                  "client_cpu_us_per_op", "service_cpu_us_per_op", "daemon_cpu_us_per_op"):
            bus_row("rtt: %s" % LABEL[m], m, bench=lib + "-rtt", size="0")
        for m in ("msgs_per_s", "ctxt_per_op", "cpu_us_per_op", "daemon_cpu_us_per_op"):
            bus_row("signals: %s" % LABEL[m], m, bench=lib + "-signals", subscribers="4")
    for grp, what in (("peers", "idle peers"), ("rules", "match rules")):
        rows = [e for e in entries if e["tags"]["bench"] == grp + "-rtt"
                and e["tags"]["bus"] == "afbus"]
        if not rows:
            continue
        lines.append("")
        lines.append("Growth with %s %s: round trip (%s calls) and signals to 1 subscriber"
                     % (grp[0].upper(), what, o.get("growth_calls")))
        lines.append(head)
        for e in rows:
            k = e["tags"][grp]
            bus_row("%s=%s rtt median us" % (grp[0].upper(), k), "median_us",
                    bench=grp + "-rtt", **{grp: k})
        for e in rows:
            k = e["tags"][grp]
            bus_row("%s=%s signals delivered/s" % (grp[0].upper(), k), "msgs_per_s",
                    bench=grp + "-signals", **{grp: k})
    lines.extend(memory_table(entries, w0, w))
    raw = [e for e in entries if e["tags"]["bench"].startswith("raw-")
           and e["tags"].get("family") == "bus"]
    if raw:
        lines.append("")
        lines.append("Raw sockets, no D-Bus (UDP: IPv4 multicast on lo, one send per message;"
                     " lost = sent, never delivered)")
        lines.append("%-*s%*s%*s%*s%*s%*s" % (w0, "", w, "AF_BUS", w, "AF_UNIX", 16,
                                             "AF_BUS/AF_UNIX", w, "UDP", 12, "AF_BUS/UDP"))
        for e in raw:
            t = dict(e["tags"])
            t.pop("family")
            if t["bench"] == "raw-pingpong":
                ms = [("ping-pong %s B: median us" % t["size"], "median_us"),
                      ("ping-pong %s B: round trips/s" % t["size"], "rounds_per_s")]
            elif t["bench"] == "raw-slow":
                n = t["receivers"]
                ms = [("slow 1 of %s: delivered/s" % n, "msgs_per_s"),
                      ("slow 1 of %s: sender ms" % n, "send_ms"),
                      ("slow 1 of %s: lost, all" % n, "lost"),
                      ("slow 1 of %s: lost, slow" % n, "slow_lost"),
                      ("slow 1 of %s: reordered" % n, "reordered")]
            else:
                ms = [("fan-out N=%s: delivered/s" % t["receivers"], "msgs_per_s"),
                      ("fan-out N=%s: lost" % t["receivers"], "lost")]
            for label, m in ms:
                other = find(entries, family="unix", **t)
                udp = find(entries, family="udp", **t)
                v = ratio_of(rat, "AF_BUS/AF_UNIX", m, **t)
                u = ratio_of(rat, "AF_BUS/UDP", m, **t)
                if m in ("lost", "slow_lost", "reordered"):
                    # AF_BUS and AF_UNIX report no loss: they lose nothing
                    lines.append("%-*s%*s%*s%*s%*s%*s" % (
                        w0, label, w, cell(e, m) if e["figures"].get(m) else "0", w, "0",
                        16, "", w, cell(udp, m), 12, ""))
                    continue
                lines.append("%-*s%*s%*s%*s%*s%*s" % (
                    w0, label, w, cell(e, m), w, cell(other, m),
                    16, "-" if v is None else "%.2f" % v, w, cell(udp, m),
                    12, "-" if u is None else "%.2f" % u))
    return "\n".join(lines)


def series(entries, bench, x, y, **tags):
    pts = []
    for e in entries:
        if e["tags"]["bench"] != bench or any(e["tags"].get(k) != v for k, v in tags.items()):
            continue
        if y in e["figures"] and x in e["tags"]:
            f = e["figures"][y]
            pts.append((int(e["tags"][x]), f["median"], f["min"], f["max"]))
    return sorted(pts)


def plots(entries, out, clock):
    """SVG plots with gnuplot, NAME-CLOCK.svg: throughput and latency against N."""
    what = {"icount": "deterministic (-icount)", "wall": "wall-clock"}.get(clock, clock)
    specs = []   # (file, title, xlabel, [(panel ylabel, [(title, points)])])
    sig = []
    for b in BUSES + BRIDGE:
        for mode in ("all", "half"):
            pts = series(entries, "signals", "subscribers", "msgs_per_s", bus=b, mode=mode)
            if pts:
                sig.append(("%s, %s matching" % (b, mode), pts))
    if sig:
        specs.append(("signals.svg", "Signal fan-out", "subscribers N",
                      [("delivered signals/s", sig)]))
    for grp, xl in (("peers", "idle peers K"), ("rules", "match rules R")):
        lat = [(b, series(entries, grp + "-rtt", grp, "median_us", bus=b)) for b in BUSES]
        thr = [(b, series(entries, grp + "-signals", grp, "msgs_per_s", bus=b)) for b in BUSES]
        lat = [s for s in lat if s[1]]
        thr = [s for s in thr if s[1]]
        if lat or thr:
            specs.append((grp + ".svg", "Cost growth with " + xl, xl,
                          [("round-trip median latency (us)", lat),
                           ("signals delivered/s to 1 subscriber", thr)]))
    raw = [(f, series(entries, "raw-fanout", "receivers", "msgs_per_s", family=f))
           for f in ("bus", "unix", "udp")]
    raw = [({"bus": "AF_BUS multicast", "unix": "AF_UNIX, one send each",
             "udp": "UDP multicast on lo (delivered only)"}[f], p)
           for f, p in raw if p]
    if raw:
        specs.append(("raw-fanout.svg", "Raw fan-out, no D-Bus", "receivers N",
                      [("delivered messages/s", raw)]))
    made = []
    for fname, title, xlabel, panels in specs:
        fname = fname.replace(".svg", "-%s.svg" % clock)
        title = "%s, %s" % (title, what)
        script = ["set terminal svg size 900,%d dynamic font 'sans,11'" % (420 * len(panels)),
                  "set output '%s'" % os.path.join(out, fname),
                  "set logscale x 2", "set grid", "set key outside right",
                  "set xlabel '%s'" % xlabel]
        if len(panels) > 1:
            script.append("set multiplot layout %d,1 title '%s'" % (len(panels), title))
        else:
            script.append("set title '%s'" % title)
        for ylabel, ss in panels:
            script.append("set ylabel '%s'" % ylabel)
            script.append("plot " + ", ".join(
                "'-' using 1:2:3:4 with yerrorlines title '%s'" % t for t, _ in ss))
            for _, pts in ss:
                script.extend("%d %g %g %g" % p for p in pts)
                script.append("e")
        if len(panels) > 1:
            script.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                           capture_output=True, check=False)
        if r.returncode:
            print("gnuplot failed for %s: %s" % (fname, r.stderr.strip()), file=sys.stderr)
        else:
            made.append(fname)
    return made


def sources():
    """What the figures are of: the hash of the measured sources
    (tests/bench/bench-fresh), which `make bench-check` compares with
    the tree's."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bench",
                        "bench-fresh")
    r = subprocess.run([sys.executable, tool, "sources"], capture_output=True, text=True,
                       check=False)
    if r.returncode:
        print("bench-report: bench-fresh sources failed: %s" % r.stderr.strip(),
              file=sys.stderr)
        return {}
    return json.loads(r.stdout)


def report_mode(mode, log, out):
    """The figures of one guest log: its part of results.json, its table."""
    results, failures, info = read_log(log)
    if not results:
        print("bench-report: no results in %s" % log, file=sys.stderr)
        return None, None
    entries = []
    for g in group(results).values():
        entries.append({"tags": g["tags"], "runs": len(g["runs"]),
                        "figures": summarize(g), "raw": g["runs"]})
    rat = ratios(entries)
    guest = guest_info(info)
    mode = mode or guest.get("clock") or "wall"
    made = plots(entries, out, mode)
    doc = {
        "mode": mode,
        "clock": MODES.get(mode, ""),
        "log": log,
        "guest": guest,
        "cpus": guest.get("cpus"),
        "clocksource": guest.get("clocksource"),
        "results": entries,
        "ratios": rat,
        "failures": failures,
        "restarts": [x for x in info if x.startswith("restart ")],
        "plots": made,
    }
    return doc, table(entries, rat, guest, mode)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and "=" not in args[1] and os.path.isfile(args[0]):
        out, logs = args[1], [(None, args[0])]
    elif len(args) >= 2 and all("=" in a for a in args[1:]):
        out = args[0]
        logs = [tuple(a.split("=", 1)) for a in args[1:]]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    modes, texts = {}, []
    for mode, log in logs:
        doc, text = report_mode(mode, log, out)
        if doc is None:
            return 1
        modes[doc["mode"]] = doc
        texts.append(text)
    judge = "icount" if "icount" in modes else next(iter(modes))
    doc = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": host_info(),
        "judge_by": judge,
        "modes_note": "icount: deterministic, the figures to judge by; "
                      "wall: the host's clock, a second opinion",
        "buses": {
            "afbus": "the fork's dbus-daemon on afbus:, fork's libdbus",
            "dbus-daemon-fork": "the fork's dbus-daemon on unix:, fork's libdbus",
            "dbus-daemon": "Debian's dbus-daemon on unix:, Debian's libdbus",
            "dbus-broker": "Debian's dbus-broker on unix:, Debian's libdbus",
            "peer-to-peer": "direct libdbus connection over a unix socket, fork's libdbus",
            "bridge-ll": "one fork dbus-daemon on unix: and afbus: at once: legacy client"
                         " (fork's libdbus on unix:) to legacy service (or emitter to"
                         " subscribers), both bridged",
            "bridge-ln": "the same daemon: legacy client to native service (afbus:)",
            "bridge-nl": "the same daemon: native client to legacy service",
        },
        "sources": sources(),
        "summary": "per mode: figures min/median/max over the runs; ratios of the medians",
        "modes": modes,
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    text = "\n\n".join(texts)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    print()
    made = [p for m in modes.values() for p in m["plots"]]
    print("wrote %s, table.txt and %s" % (os.path.join(out, "results.json"),
                                          ", ".join(made) or "no plots"))
    ours = []
    for mode, m in modes.items():
        for c in m["guest"].get("failed_checks", []):
            print("WARNING (%s): guest check failed, figures are suspect: %s" % (mode, c))
        for x in m["restarts"]:
            print("NOTE (%s): %s" % (mode, x))
        # The command fails for AF_BUS's own figures (and the raw
        # sockets'); a bus compared against that fails is listed and
        # left out.
        mine = [x for x in m["failures"]
                if " bus=afbus " in " %s " % x or x.startswith("bench=raw")
                or " bus=bridge-" in " %s " % x]
        ours += mine
        if m["failures"]:
            print("%s: %d measurement(s) failed%s:" % (
                mode, len(m["failures"]), "" if mine else " (none of AF_BUS's own)"))
            for x in m["failures"]:
                print("  " + x)
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
