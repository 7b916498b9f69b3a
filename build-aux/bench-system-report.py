#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the whole-system measure's guest logs into results.json and a table.

Usage: bench-system-report.py OUT-DIR SYSBUS=GUEST-LOG...

SYSBUS is the daemon of the system bus in that boot of the system guest
(run-qemu.sh --system --bench; tests/bench/system/): "fork" (the fork's
dbus-daemon), "bridge" (the same, every client bridged), "debian" (Debian's dbus-daemon and libdbus) or "broker"
(Debian's dbus-broker), each booted in the deterministic mode (QEMU
-icount: guest time is the instruction count, 1 ns each).  The guest
prints one line of figures, "afbus-bench: bench=system bus=SYSBUS ...",
"afbus-bench-info: ..." lines, and "afbus-bench-fail: ..." when the
workload or the set-up failed.  This writes OUT-DIR/results.json (every
figure, the ratios fork/dbus-daemon and fork/dbus-broker (and bridge/...), the guests'
info, "sources": the hash of the measured sources, tests/bench/bench-fresh
sources --system) and OUT-DIR/table.txt, and prints the table.  Exit
status 1 when a boot failed or printed no figures.
"""

import datetime
import json
import os
import subprocess
import sys

ORDER = ["fork", "bridge", "debian", "broker"]
SHORT = {"fork": "fork", "bridge": "bridged", "debian": "daemon", "broker": "broker"}
OURS = ["fork", "bridge"]
BUSES = {
    "fork": "the fork's dbus-daemon (1.14.10-1~deb12u1+afbus1, its packages as installed):"
            " afbus: and the unix socket, legacy clients bridged",
    "bridge": "the same fork's dbus-daemon with its AF_BUS bus file out of the clients' sight:"
              " every client on the unix socket, bridged onto the AF_BUS bus (legacy clients)",
    "debian": "Debian's dbus-daemon and libdbus 1.14.10-1~deb12u1 (unpacked under /opt/debian),"
              " the unix socket",
    "broker": "Debian's dbus-broker (dbus-broker-launch and dbus-broker), the unix socket",
}
# (figure, label); lower is better for every one
ROWS = [
    ("boot_ms", "boot to multi-user.target (ms)"),
    ("userspace_ms", "  of which userspace (ms)"),
    ("wall_ms", "workload wall time (ms)"),
    ("daemon_cpu_ms", "bus daemon CPU (ms)"),
    ("clients_cpu_ms", "clients CPU (ms)"),
    ("commands_cpu_ms", "  commands (ms)"),
    ("services_cpu_ms", "  services (ms)"),
    ("init_cpu_ms", "    PID 1 (ms)"),
    ("systemd-logind_cpu_ms", "    logind (ms)"),
    ("systemd-hostnamed_cpu_ms", "    hostnamed (ms)"),
    ("systemd-timedated_cpu_ms", "    timedated (ms)"),
    ("polkit_cpu_ms", "    polkitd (ms)"),
    ("other_cpu_ms", "other CPU (ms)"),
    ("busy_ms", "guest CPU, all (ms)"),
]
HEADER = ("=== WHOLE SYSTEM, DETERMINISTIC: the Debian 12 system guest (run-qemu.sh --system"
          " --bench), QEMU -icount shift=0,sleep=off, 1 CPU; guest time = instructions"
          " executed, 1 ns each")


def fields(text):
    return dict(w.split("=", 1) for w in text.split() if "=" in w)


def read_log(path):
    res = {"figures": {}, "info": [], "failures": [], "host": {}}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").rstrip("\n")
            if line.startswith("afbus-bench: "):
                f_ = fields(line[len("afbus-bench: "):])
                res["figures"] = {k: float(v) for k, v in f_.items()
                                  if k not in ("bench", "bus", "run")}
            elif line.startswith("afbus-bench-fail: "):
                res["failures"].append(line[len("afbus-bench-fail: "):])
            elif line.startswith("afbus-bench-info: host "):
                res["host"] = fields(line[len("afbus-bench-info: host "):])
            elif line.startswith("afbus-bench-info: "):
                res["info"].append(line[len("afbus-bench-info: "):])
    fig = res["figures"]
    if "commands_cpu_ms" in fig and "services_cpu_ms" in fig:
        fig["clients_cpu_ms"] = round(fig["commands_cpu_ms"] + fig["services_cpu_ms"], 1)
    for i in res["info"]:
        if " connections " in i:
            res["connections"] = fields(i.split(" connections ", 1)[1])
        elif " services_cpu_ms " in i:
            # each service's part (run-system-bench: by cgroup)
            for k, v in fields(i.split(" services_cpu_ms ", 1)[1]).items():
                fig[k + "_cpu_ms"] = float(v)
    return res


def sources():
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bench",
                        "bench-fresh")
    r = subprocess.run([sys.executable, tool, "sources", "--system"], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        print("bench-system-report: bench-fresh sources --system failed: " + r.stderr,
              file=sys.stderr)
        return None
    return json.loads(r.stdout)


def fmt(v):
    return "-" if v is None else ("%.1f" % v)


def table(results, rounds):
    buses = [b for b in ORDER if b in results] + [b for b in results if b not in ORDER]
    refs = [(o, b) for o in OURS for b in ("debian", "broker") if b in results and o in results]
    lines = [HEADER]
    host = ", ".join("%s %s s" % (SHORT.get(b, b), results[b]["host"].get("wall_seconds", "?"))
                     for b in buses)
    kernel = sorted({results[b]["host"].get("kernel", "?") for b in buses})
    lines.append("Kernel %s (the AF_BUS kernel package) in every boot; %s rounds of the workload"
                 " after one to warm up; host time per boot: %s" % (", ".join(kernel), rounds, host))
    lines.append("System bus: fork = the fork's dbus-daemon (clients native where their library"
                 " speaks afbus:); bridged = the same, every client on unix: and bridged;"
                 " daemon = Debian's dbus-daemon and libdbus; broker = Debian's dbus-broker."
                 "  Clients: the image's own in every boot.")
    w0, w = 38, 12
    head = "%-*s" % (w0, "") + "".join("%*s" % (w, SHORT.get(b, b)) for b in buses)
    head += "".join("%*s" % (w, "%s/%s" % (SHORT[o][:4], SHORT[r])) for o, r in refs)
    lines.append(head)
    ratios = {}
    for key, label in ROWS:
        vals = [results[b]["figures"].get(key) for b in buses]
        if all(v is None for v in vals):
            continue
        row = "%-*s" % (w0, label) + "".join("%*s" % (w, fmt(v)) for v in vals)
        for o, r in refs:
            a, b = results[o]["figures"].get(key), results[r]["figures"].get(key)
            q = a / b if a is not None and b else None
            ratios.setdefault("%s/%s" % (o, r), {})[key] = q
            row += "%*s" % (w, "-" if q is None else "%.2f" % q)
        lines.append(row)
    row = "%-*s" % (w0, "connections: native/bridged/names")
    for b in buses:
        c = results[b].get("connections", {})
        row += "%*s" % (w, "%s/%s/%s" % (c.get("native", "?"), c.get("bridged", "?"),
                                         c.get("unique_names", "?")) if c else "-")
    lines.append(row)
    lines.append("Boot: the kernel and systemd read the disk, whose reads complete at the host's pace:"
                 " not deterministic.  The rest is over the rounds, which read nothing from it.")
    return "\n".join(lines), ratios


def main():
    args = sys.argv[1:]
    if len(args) < 2 or not all("=" in a for a in args[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    out = args[0]
    os.makedirs(out, exist_ok=True)
    results, bad = {}, []
    for a in args[1:]:
        bus, log = a.split("=", 1)
        if not os.path.isfile(log):
            bad.append("%s: no log %s" % (bus, log))
            continue
        results[bus] = read_log(log)
        results[bus]["log"] = log
        if not results[bus]["figures"]:
            bad.append("%s: no figures in %s" % (bus, log))
        bad += ["%s: %s" % (bus, x) for x in results[bus]["failures"]]
    ok = {b: r for b, r in results.items() if r["figures"]}
    rounds = sorted({int(r["figures"].get("rounds", 0)) for r in ok.values()})
    text, ratios = table(ok, "/".join(map(str, rounds)) or "?")
    doc = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "icount",
        "clock": HEADER,
        "buses": BUSES,
        "figures_note": "ms of guest time over the workload's rounds (boot_ms, userspace_ms:"
                        " the boot); CPU from cgroup v2 cpu.stat usage_usec; clients ="
                        " commands + services (tests/bench/system/run-system-bench)",
        "sources": sources(),
        "results": results,
        "ratios": ratios,
        "failures": bad,
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    print()
    print("wrote %s and table.txt" % os.path.join(out, "results.json"))
    for x in bad:
        print("FAILED: " + x)
    return 1 if bad or "fork" not in ok else 0


if __name__ == "__main__":
    sys.exit(main())
