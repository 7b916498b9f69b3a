#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the AF_BUS test guest in QEMU, building whatever is missing or
# stale first (kernel, tests, initramfs: `make all`, after running the
# autotools and installing Debian packages when needed).
#
#   ./run-qemu.sh           interactive busybox shell in the guest
#                           (exit the shell to power off; Ctrl-A X kills QEMU)
#   ./run-qemu.sh --check   run every test; exit 0 only if all passed, the
#                           guest neither panicked nor timed out, and its
#                           kernel log is clean.  The last line printed is
#                           "N passed, N failed[, N skipped]".
#   ./run-qemu.sh --debug [--check]
#                           the same with the debug kernel (kernel-patches/
#                           debug.config: KASAN, lockdep, kmemleak, UBSAN,
#                           ...), 2 GiB of guest memory, a kmemleak scan
#                           after the tests (any leak fails the run), and
#                           the stress test with 2000 multicasts each way
#                           instead of 10000
#   ./run-qemu.sh --kcsan [--check]
#                           the same with the KCSAN kernel (kernel-patches/
#                           kcsan.config: the data-race detector, which
#                           excludes the debug kernel's KASAN; no kmemleak),
#                           on demand, not in CI: about 5x slower than
#                           the test kernel; a "BUG: KCSAN:" report fails
#                           it unless tests/kcsan-accepted accepts it (a
#                           reviewed pair of functions outside AF_BUS; the
#                           verdict prints each accepted report)
#   ./run-qemu.sh --kcsan-strict [--check]
#                           the same with KCSAN's strict mode (kcsan.config
#                           and kernel-patches/kcsan-strict.config, in
#                           build/kernel-obj-kcsan-strict; its log is
#                           build/guest-kcsan-strict.log)
#   ./run-qemu.sh --rootfs  a bash shell in the Debian root file system
#                           (build-aux/rootfs-*.sh: debootstrap, GDBus,
#                           dbus-python, busctl and the D-Bus fork), on a
#                           virtio disk beside the busybox initramfs;
#                           --check attaches it too and runs its tests
#                           (tests/rootfs/), --debug --check does not
#                           unless AFBUS_ROOTFS=1
#   ./run-qemu.sh --system  a Debian 12 system with systemd as init and the
#                           fork's dbus packages, on the AF_BUS kernel
#                           package (build-aux/rootfs-system.sh: `make debs`,
#                           `make kernel-deb`, debootstrap); log in as root
#                           on the console, `systemctl poweroff` to leave.
#                           --check runs its tests (tests/system/) on the
#                           AF_BUS kernel and again on Debian's own kernel
#                           (AFBUS_SYSTEM_KERNEL=stock boots that one for
#                           the shell).  A plain --check runs them too
#                           after the busybox guest's, --debug --check does
#                           not unless AFBUS_SYSTEM=1
#   ./run-qemu.sh --bench   the benchmarks (`make bench`; doc/benchmarks.md)
#                           on the benchmark kernel
#                           (kernel-patches/bench.config): one guest runs
#                           them all in each mode, deterministic (QEMU's
#                           instruction counter: guest time counts
#                           instructions) and wall-clock, then
#                           build-aux/bench-report.py writes
#                           build/bench/results.json and the plots and
#                           prints the tables
#   ./run-qemu.sh --system --bench
#                           the whole-system measure (`make bench-system`;
#                           doc/benchmarks.md): the system guest booted once
#                           per daemon of the system bus (the fork's,
#                           Debian's dbus-daemon, dbus-broker), in the
#                           deterministic mode, each running the same
#                           workload (tests/bench/system/), then
#                           build-aux/bench-system-report.py writes
#                           build/bench-system/results.json and prints the table
#   ./run-qemu.sh --upstream
#                           upstream D-Bus' modular tests (GLib), built from
#                           the fork (build-aux/dbus-check.sh --pack), in the
#                           Debian root file system, against the fork's
#                           daemon on unix: and again on afbus:
#                           (tests/upstream/; doc/testing.md, "Upstream's
#                           tests on AF_BUS"); the last line is "N passed, N failed"
#   ./run-qemu.sh --profile perf profiles (`make profile`) of the afbus round
#                           trip and signal fan-out, in the deterministic
#                           mode, into build/bench/profile/
#
# Environment:
#   AFBUS_CPUS=2            CPUs given to the guest (it checks it sees them)
#   AFBUS_TIMEOUT=1800      seconds before a --check run is declared hung (a
#                           whole busybox guest run takes ~950 s under TCG;
#                           a hang costs CI at most this, within its budget)
#   AFBUS_TEST_TIMEOUT=300  seconds allowed to each test program
#   AFBUS_KVM=1             use KVM instead of TCG (not on the CI machines)
#   AFBUS_APPEND="..."      extra kernel command line parameters
#   AFBUS_SKIP_BUILD=1      boot what is already built
#   AFBUS_LOG=FILE          the guest log (default: build/guest.log, or
#                           build/guest-debug.log with --debug)
#   AFBUS_BUILD=DIR         build directory (default: build/)
#   AFBUS_FUZZ_SECONDS=N    how long tests/fuzz/af_bus_fuzz runs (default
#                           30, and 120 with --debug; 0 skips it)
#   AFBUS_FUZZ_SEED=S       its seed (default: random, printed; replays a run)
#   AFBUS_STRESS_MSGS=N     multicasts each way in tests/kernel/af_bus_stress
#   AFBUS_ONLY=PATTERNS     --check of the busybox guest: run only the test
#                           units (file names in tests/kernel, tests/dbus,
#                           tests/rootfs, af_bus_fuzz) matching one of these
#                           comma-separated shell patterns, e.g.
#                           'af_bus_fds,dbus-*'; a development run, which
#                           CI never makes
#   AFBUS_ROOTFS=0|1        attach the Debian root file system to a --check
#                           run (default: 1, and 0 with --debug)
#   AFBUS_APPARMOR=0|1      boot the test kernel a second time with
#                           lsm=apparmor (af_bus.config builds AppArmor in;
#                           Smack is the one started by default) and run
#                           only the AppArmor units (tests/kernel/
#                           nfdbus_apparmor) in a --check run (default: 1,
#                           and 0 with --debug); a case they skip fails
#                           the run there
#   AFBUS_SELINUX=0|1       the same with lsm=selinux for the SELinux unit
#                           (tests/kernel/af_bus_selinux, which loads its own
#                           policies, tests/selinux/) (default: 1, and 0
#                           with --debug)
#   AFBUS_CGROUP_V1=0|1     the same with afbus.cgroup_v1=1 for the unit
#                           of cgroup v1's memory controller (tests/kernel/
#                           af_bus_memcg_v1, which needs a boot where no v2
#                           cgroup used it) (default: 1, and 0 with --debug)
#   AFBUS_LSM_TIMEOUT=600   seconds before such a guest is declared hung
#   AFBUS_SYSTEM=0|1        run the system guest's tests in a --check run
#                           (default: 1, and 0 with --debug)
#   AFBUS_SYSTEM_TIMEOUT=900  seconds before a system guest is declared hung
#   AFBUS_PREBUILD_DEBUG=1  a --check run also builds the debug kernel, beside
#                           its guests at nice 19 (the system guest's image
#                           is always built that way): for a --debug --check
#                           run that follows (.ci/run)
#   AFBUS_SYSTEM_DEB_PROFILES="noudeb nodoc noinsttest"
#                           the build profiles of the fork's packages the
#                           system guest builds when `make debs` is stale
#   AFBUS_ROOTFS_MIRROR=URL the Debian mirror debootstrap uses
#   AFBUS_BENCH_RUNS=3, AFBUS_BENCH_CALLS=10000, AFBUS_BENCH_WARMUP=500,
#   AFBUS_BENCH_DELIVERIES=3000, AFBUS_BENCH_SUBS=1,4,16,64,
#   AFBUS_BENCH_GROWTH_CALLS=1000, AFBUS_BENCH_PEERS=1,16,64,256,
#   AFBUS_BENCH_RULES=1,16,64,256,
#   AFBUS_BENCH_ONLY=rtt,raw,signals,peers,rules,gdbus,sdbus
#                           --bench: iterations and what runs (see
#                           tests/bench/run-bench)
#   AFBUS_BENCH_MODES=icount,wall
#                           --bench: the deterministic mode (icount), the
#                           wall-clock one (wall), or both, in that order
#   AFBUS_BENCH_ICOUNT_CPUS=1, AFBUS_BENCH_ICOUNT_RUNS=1
#                           CPUs and rounds of the deterministic mode (the
#                           wall-clock mode takes AFBUS_CPUS and
#                           AFBUS_BENCH_RUNS)
#   AFBUS_PROFILE=rtt,rtt4k,signals4,signals64
#                           --profile: what is profiled
#   AFBUS_PROFILE_PERIOD=100000
#                           --profile: instructions between two samples;
#                           several (comma-separated): each profile once
#                           per period (files NAME.pPERIOD), whose samples
#                           fall on different places of a repeating loop
#   AFBUS_BENCH_KERNEL=FILE --bench, --profile: boot this bzImage (a copy of
#                           an earlier benchmark kernel, say) instead of
#                           building the benchmark kernel
#   AFBUS_BENCH_DIR=DIR     --bench: where its logs, results.json, tables
#                           and plots go (default build/bench)
#   AFBUS_BENCH_INITRAMFS=FILE  --bench, --profile: boot this initramfs (a
#                           saved build/initramfs-bench.cpio.gz) instead of
#                           building it: the same user space for two kernels
#   AFBUS_BENCH_SYSBUS=fork,bridge,debian,broker, AFBUS_BENCH_ROUNDS=20,
#   AFBUS_BENCH_SYSTEM_JOBS=1, AFBUS_BENCH_SYSTEM_TIMEOUT=3600,
#   AFBUS_BENCH_SYSTEM_DIR=build/bench-system
#                           --system --bench: the daemons measured, the
#                           workload's rounds, how many guests run at once
#                           (each is one host thread; the figures do not
#                           depend on it), seconds before one is declared
#                           hung, where the logs and results go
set -eu
. "$(dirname "$0")/build-aux/common.sh"

CPUS=${AFBUS_CPUS:-2}
TIMEOUT=${AFBUS_TIMEOUT:-1800}
TEST_TIMEOUT=${AFBUS_TEST_TIMEOUT:-300}
KERNEL=$KERNEL_OBJ/arch/x86/boot/bzImage
INITRAMFS=$AFBUS_BUILD/initramfs.cpio.gz
LOG=${AFBUS_LOG:-$AFBUS_BUILD/guest.log}
MEM=1G
FUZZ_SECONDS=${AFBUS_FUZZ_SECONDS:-30}
STRESS_MSGS=${AFBUS_STRESS_MSGS:-10000}
GUEST_APPEND=
CHECKPATCH_LOG=$AFBUS_BUILD/checkpatch.log
# The documentation's shell blocks marked to run on the host
# (tests/doc/run-blocks; doc/testing.md, "The documentation's commands").
DOC_LOG=$AFBUS_BUILD/doc-blocks.log
# The Debian root file system (build-aux/rootfs-image.sh), when attached.
ROOTFS_IMG=$AFBUS_BUILD/rootfs.img
ROOTFS=
# QEMU's -icount option in the benchmarks' deterministic mode.
ICOUNT=
# A raw disk the guest writes its results to (--profile), as a tar archive.
OUT_DISK=
# A tar archive the guest reads as a raw disk after the root file
# system's (--upstream: build-aux/dbus-check.sh --pack).
IN_DISK=

# Kernel messages that mean something went wrong in the guest.  Matched
# against the guest's dmesg only (not against test output), once the
# KCSAN reports that KCSAN_ACCEPTED accepts are taken out of it
# (build-aux/kcsan-filter.awk; doc/testing.md, "Accepted KCSAN reports").
KCSAN_ACCEPTED=$AFBUS_TOP/tests/kcsan-accepted
BAD_KMSG='(BUG|WARNING|INFO|Oops|UBSAN):|kernel BUG at|cut here|Call Trace|KASAN|kmemleak: [0-9]+ new suspected memory leak|unreferenced object|possible circular locking|general protection fault|Kernel panic|RIP: [0-9a-f]{4}:'

usage() {
	sed -n '4,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p;}' "$0"
	exit 2
}

build() {
	"$AFBUS_TOP/build-aux/install-deps.sh"
	cd "$AFBUS_TOP"
	if [ ! -f Makefile ]; then
		msg "running autoreconf and configure"
		autoreconf -fi
		./configure
	fi
	make all
}

# console_args: CONSOLE, the guest's serial console and QEMU's monitor
# on stdio, logged to $LOG; no display, and no reboot.
console_args() {
	CONSOLE=(-nographic -no-reboot
		-chardev "stdio,id=console,mux=on,signal=off,logfile=$LOG"
		-serial chardev:console -mon chardev=console)
}

# accel_args: ACCEL, QEMU's accelerator and CPU options: TCG, KVM with
# AFBUS_KVM=1, or the deterministic mode of the benchmarks when ICOUNT is
# set: guest time is the instruction count (1 ns each), never the host's
# clock, and an idle guest jumps to its next timer; its random numbers
# (RDRAND, virtio-rng's built-in source) come from a seeded generator and
# its real-time clock starts at a fixed date, so that two boots run the
# same instructions.
accel_args() {
	ACCEL=(-accel tcg -cpu qemu64,+rdrand)
	[ "${AFBUS_KVM:-0}" = 1 ] && ACCEL=(-accel kvm -cpu host)
	[ -z "$ICOUNT" ] || ACCEL=(-accel tcg -icount "$ICOUNT" -cpu qemu64,+rdrand
		-seed 1 -rtc base=2026-01-01T00:00:00,clock=vm)
}

# run_qemu MODE [WRAPPER...]: boot the guest (through WRAPPER, such as
# `timeout N`); the serial console is on stdio and also logged to $LOG.
run_qemu() {
	# RDRAND, trusted, seeds the kernel's random generator at boot: it
	# would otherwise become ready only tens of seconds into the tests,
	# and its static key flip then races with running tasks under TCG
	# (an int3 oops in crng_make_state() was seen).
	local mode=$1 disk=() append=
	shift
	accel_args
	[ -n "$OUT_DISK" ] && disk+=(-drive "file=$OUT_DISK,format=raw,if=virtio")
	# snapshot=on: the guest's writes go to a temporary file, never the image
	if [ -n "$ROOTFS" ]; then
		disk+=(-drive "file=$ROOTFS_IMG,format=raw,if=virtio,snapshot=on")
		append=afbus.rootfs=/dev/vda
	fi
	if [ -n "$IN_DISK" ]; then
		disk+=(-drive "file=$IN_DISK,format=raw,if=virtio,readonly=on")
		append="$append afbus.upstream=/dev/vdb"
	fi
	rm -f "$LOG"
	console_args
	"$@" qemu-system-x86_64 "${ACCEL[@]}" -smp "$CPUS" -m "$MEM" "${CONSOLE[@]}" \
		-kernel "$KERNEL" -initrd "$INITRAMFS" ${disk[@]+"${disk[@]}"} \
		-append "console=ttyS0 panic=-1 random.trust_cpu=on $append afbus.mode=$mode afbus.cpus=$CPUS afbus.test_timeout=$TEST_TIMEOUT afbus.fuzz_seconds=$FUZZ_SECONDS afbus.fuzz_seed=${AFBUS_FUZZ_SEED:-} afbus.stress_msgs=$STRESS_MSGS ${AFBUS_ONLY:+afbus.only=$AFBUS_ONLY} $GUEST_APPEND ${AFBUS_APPEND:-}"
}

# The kernel log the guest dumped at the end, without \r.
guest_dmesg() {
	tr -d '\r' <"$LOG" |
		sed -n '/^=== afbus: dmesg begin ===$/,/^=== afbus: dmesg end ===$/p'
}

# The guest's counts as "PASSED FAILED SKIPPED": its summary line when
# it got that far and the line is intact, else the sum of the per-unit
# result lines seen (a kernel message can split a console line).
guest_counts() {
	tr -d '\r' <"$LOG" | awk '
		/^afbus-result: [^ ]* pass=[0-9]+ fail=[0-9]+ skip=[0-9]+$/ {
			split($0, f, /[ =]/); p += f[4]; x += f[6]; s += f[8]
		}
		prev == "=== afbus: summary" &&
		/^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ {
			sp = $1; sf = $3; ss = ($5 == "" ? 0 : $5); summary = 1
		}
		{ prev = $0 }
		END {
			if (summary) print sp, sf, ss
			else print p + 0, x + 0, s + 0
		}'
}

# guest_verdicts WHAT QEMU-STATUS TIMEOUT VARIABLE: the host's verdicts on the
# guest run logged in $LOG, added to the totals: a timeout, a failed
# qemu, a panic and an unfinished run fail; a finished run's clean
# kernel log counts as one test.
guest_verdicts() {
	local what=$1 rc=$2 bad unit
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		# the test unit it was running, and that unit's last lines
		unit=$(tr -d '\r' <"$LOG" | sed -n 's/^=== afbus: running //p' | tail -n 1)
		echo "FAIL: $what timed out after ${3}s ($4) while running ${unit:-no test unit}"
		[ -z "$unit" ] ||
			tr -d '\r' <"$LOG" | sed -n "/^=== afbus: running $unit\$/,\$p" |
			grep -v '^\[ *[0-9.]*\] ' | tail -n 15 | sed 's/^/  /'
		failed=$((failed + 1))
	elif [ "$rc" != 0 ]; then
		echo "FAIL: qemu exited with status $rc"
		failed=$((failed + 1))
	fi
	if grep -q 'Kernel panic' "$LOG"; then
		echo "FAIL: $what kernel panicked:"
		tr -d '\r' <"$LOG" | grep -A3 'Kernel panic' | head -n 8 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
	if ! tr -d '\r' <"$LOG" | grep -qx '=== afbus: dmesg end ==='; then
		echo "FAIL: the $what did not finish its test run"
		failed=$((failed + 1))
		return
	fi
	local notes accepted= kmsg
	notes=$(mktemp)
	if ! kmsg=$(guest_dmesg |
		awk -v accepted="$KCSAN_ACCEPTED" -v notes="$notes" \
			-f "$AFBUS_TOP/build-aux/kcsan-filter.awk"); then
		echo "# build-aux/kcsan-filter.awk failed: no KCSAN report is accepted"
		: >"$notes"
		kmsg=$(guest_dmesg)
	fi
	bad=$(printf '%s\n' "$kmsg" | grep -E "$BAD_KMSG" || true)
	if [ -s "$notes" ]; then
		accepted=" (KCSAN reports accepted: $(grep -c "^accepted: " "$notes" || true), tests/kcsan-accepted)"
		sed 's/^/  /' "$notes"
	fi
	rm -f "$notes"
	if [ -n "$bad" ]; then
		echo "FAIL: $what kernel log has errors$accepted:"
		echo "$bad" | head -n 40 | sed 's/^/  /'
		failed=$((failed + 1))
	else
		echo "ok - $what kernel log is clean$accepted"
		passed=$((passed + 1))
	fi
}

# doc_verdicts: the documentation's host blocks, one test each, added
# to the totals; the failed ones are printed with their output.
doc_verdicts() {
	local p f
	p=$(grep -c '^ok ' "$DOC_LOG" || true)
	f=$(grep -c '^not ok ' "$DOC_LOG" || true)
	if [ "$p" -gt 0 ] && [ "$f" = 0 ]; then
		echo "ok - the documentation's $p host blocks run ($DOC_LOG)"
	elif [ "$((p + f))" = 0 ]; then
		echo "FAIL: the documentation's host blocks did not run ($DOC_LOG):"
		head -n 5 "$DOC_LOG" | sed 's/^/  /'
		f=1
	else
		echo "FAIL: $f of the documentation's host blocks fail ($DOC_LOG):"
		sed -n '/^not ok /,/^ok /{/^ok /d;p;}' "$DOC_LOG" | head -n 60 | sed 's/^/  /'
	fi
	passed=$((passed + p)) failed=$((failed + f))
}

# Take the guest's counts, add the host's own verdicts, print the
# offending lines, and print the final count line.  Returns 0 if all passed.
report() {
	local qemu_rc=$1 checkpatch_rc=$2
	read -r passed failed skipped < <(guest_counts)

	echo
	echo "=== run-qemu.sh: verdict (guest log: $LOG)"
	# The series passing checkpatch --strict counts as one test.
	if [ "$checkpatch_rc" = 0 ]; then
		echo "ok - kernel patches pass checkpatch --strict"
		passed=$((passed + 1))
	else
		echo "FAIL: kernel patches fail checkpatch --strict:"
		grep -E '^(!!! |checkpatch: |[^ ]+: error: )' "$CHECKPATCH_LOG" |
			head -n 20 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
	doc_verdicts
	guest_verdicts guest "$qemu_rc" "$TIMEOUT" AFBUS_TIMEOUT

	if [ -z "$ROOTFS" ]; then
		echo "skip - the Debian root file system's tests (AFBUS_ROOTFS=0)"
		skipped=$((skipped + 1))
	fi
}

# The units of another major LSM than the test kernel's default (Smack),
# which the first boot skips: af_bus.config builds them in, and boot_check
# boots the same kernel again with lsm=LSM for them.
APPARMOR_UNITS=nfdbus_apparmor
SELINUX_UNITS=af_bus_selinux
# and the unit of cgroup v1's memory controller, which can be mounted on
# a v1 hierarchy only in a boot where no v2 cgroup used it
CGROUP_V1_UNITS=af_bus_memcg_v1
LSM_TIMEOUT=${AFBUS_LSM_TIMEOUT:-600}

# boot_check NAME UNITS [APPEND]: the same kernel and initramfs booted
# again with the kernel parameters APPEND (default lsm=NAME: NAME is an
# LSM), running only UNITS (comma-separated; those AFBUS_ONLY selects,
# in a development run), logged in build/guest-NAME.log, their counts
# and the host's verdicts added to the totals.  Here a skipped case
# fails: it means the LSM, or what the boot is for, or its tools are
# missing from the guest.
boot_check() {
	local lsm=$1 units=$2 append=${3:-lsm=$1} rc=0 p f s only pat sel
	if [ -n "${AFBUS_ONLY:-}" ]; then
		sel=
		set -f
		for only in ${units//,/ }; do
			for pat in ${AFBUS_ONLY//,/ }; do
				# shellcheck disable=SC2254  # the pattern is meant to match
				case $only in $pat) sel="$sel${sel:+,}$only"; break ;; esac
			done
		done
		set +f
		[ -n "$sel" ] || return 0
		units=$sel
	fi
	LOG=$AFBUS_BUILD/guest-$lsm.log
	msg "$lsm guest: the test kernel with $append, $units (log: $LOG)"
	(ROOTFS='' FUZZ_SECONDS=0 AFBUS_ONLY=$units GUEST_APPEND="$GUEST_APPEND $append"
	 run_qemu check timeout --foreground -k 10 "$LSM_TIMEOUT" </dev/null) || rc=$?
	read -r p f s < <(guest_counts)
	echo
	echo "=== run-qemu.sh: $lsm guest: $p passed, $f failed, $s skipped (log: $LOG)"
	tr -d '\r' <"$LOG" | grep -a -E '^[# ]*not ok |# SKIP' | head -n 20 || true
	if [ "$s" != 0 ] || [ "$p" = 0 ]; then
		echo "FAIL: the $lsm guest skipped $s case(s) and passed $p:" \
			"$append did not take, or its tools are missing"
		f=$((f + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f))
	guest_verdicts "$lsm guest" "$rc" "$LSM_TIMEOUT" AFBUS_LSM_TIMEOUT
}

# The totals of every guest of the run, in the last line printed.
passed=0 failed=0 skipped=0

final_line() {
	local line="$passed passed, $failed failed"
	[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
	echo "$line"
	[ "$failed" = 0 ]
}

# --system: the Debian system (build-aux/rootfs-system.sh), booted as a
# boot loader would boot it: a kernel of its /boot and its initrd.
SYSTEM_IMG=$AFBUS_BUILD/system.img
SYSTEM_BOOT=$AFBUS_BUILD/system/boot

# system_qemu afbus|stock shell|check|bench [WRAPPER...]: bench takes
# the kernel command line's afbus.sysbus= and afbus.bench_rounds= from
# SYSTEM_BENCH_APPEND
system_qemu() {
	local kind=$1 mode=$2 append="root=/dev/vda rw console=ttyS0 panic=-1 random.trust_cpu=on"
	shift 2
	[ "$mode" = check ] &&
		append="$append afbus.check=1 systemd.mask=serial-getty@ttyS0.service"
	[ "$mode" = bench ] &&
		append="$append $SYSTEM_BENCH_APPEND systemd.mask=serial-getty@ttyS0.service"
	rm -f "$LOG"
	console_args
	# TCG (AFBUS_KVM is not for the system guest), deterministic with ICOUNT
	ACCEL=(-accel tcg -cpu qemu64,+rdrand)
	[ -z "$ICOUNT" ] || accel_args
	"$@" qemu-system-x86_64 "${ACCEL[@]}" -smp "$CPUS" -m "$MEM" \
		"${CONSOLE[@]}" -kernel "$SYSTEM_BOOT/vmlinuz-$kind" -initrd "$SYSTEM_BOOT/initrd.img-$kind" \
		-drive "file=$SYSTEM_IMG,format=raw,if=virtio,snapshot=on" \
		-device virtio-rng-pci \
		-append "$append ${AFBUS_APPEND:-}"
}

# system_check afbus|stock: boot the system with that kernel, run its
# tests, add their counts and the host's verdicts to the totals.
system_check() {
	local kind=$1 rc=0 p f s
	LOG=$AFBUS_BUILD/system-$kind.log
	msg "system guest on the $kind kernel ($(cat "$SYSTEM_BOOT/version-$kind"); log: $LOG)"
	system_qemu "$kind" check timeout --foreground -k 10 "$SYSTEM_TIMEOUT" </dev/null || rc=$?
	read -r p f s < <(guest_counts)
	echo
	echo "=== run-qemu.sh: system guest on the $kind kernel: $p passed, $f failed (log: $LOG)"
	# Its failed tests' lines: they are in $LOG only, not on the console.
	tr -d '\r' <"$LOG" | grep -a -E '^[# ]*not ok ' | head -n 40 || true
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	guest_verdicts "system guest ($kind)" "$rc" "$SYSTEM_TIMEOUT" AFBUS_SYSTEM_TIMEOUT
	[ "$kind" = stock ] && system_modules_verdict
	return 0
}

# system_modules_verdict: the AF_BUS kernel of the system guest has the
# modules of kernel-patches/system.modules (build-aux/kernel-build.sh
# --system): Debian's kernel must not have loaded one that is not in it.
# The stock guest's lsmod is kept in build/system-stock.lsmod (the new
# list, when one is missing).
system_modules_verdict() {
	local missing
	tr -d '\r' <"$LOG" | sed -n '/^=== afbus: lsmod begin ===$/,/^=== afbus: lsmod end ===$/p' |
		sed '1d;$d' >"$AFBUS_BUILD/system-stock.lsmod"
	missing=$(awk 'NR == FNR { if (FNR > 1) have[$1] = 1; next }
		FNR > 1 && !($1 in have) { print $1 }' \
		"$KERNEL_PATCHES/system.modules" "$AFBUS_BUILD/system-stock.lsmod" | xargs)
	if [ ! -s "$AFBUS_BUILD/system-stock.lsmod" ]; then
		echo "FAIL: the system guest (stock) printed no lsmod"
		failed=$((failed + 1))
	elif [ -n "$missing" ]; then
		echo "FAIL: Debian's kernel loaded modules kernel-patches/system.modules lacks: $missing" \
			"(its lsmod: build/system-stock.lsmod)"
		failed=$((failed + 1))
	else
		echo "ok - kernel-patches/system.modules has every module Debian's kernel loaded"
		passed=$((passed + 1))
	fi
}

# The system guest's image and what it is made of (cached).
system_build() {
	if [ "${AFBUS_SKIP_BUILD:-0}" != 1 ]; then
		# `make debs` if it is up to date, else (half the time) the
		# packages the system installs, without documentation
		"$AFBUS_TOP/build-aux/debs.sh" --status >/dev/null 2>&1 ||
			DEB_BUILD_PROFILES=${AFBUS_SYSTEM_DEB_PROFILES-noudeb nodoc noinsttest} \
			"$AFBUS_TOP/build-aux/debs.sh" >&2 || return
		"$AFBUS_TOP/build-aux/kernel-deb.sh" >&2 || return
	fi
	"$AFBUS_TOP/build-aux/rootfs-system.sh" >&2
}
SYSTEM_TIMEOUT=${AFBUS_SYSTEM_TIMEOUT:-900}

# The builds a --check needs only after its busybox guest, started beside
# that guest at the lowest CPU priority (nice 19): the guest keeps the CPU
# it uses and the builds take what it leaves, which on 2 cores is most of
# one.  First the system guest's (system_build), then, with
# AFBUS_PREBUILD_DEBUG=1 (.ci/run, whose next run is --debug --check), the
# debug kernel and its modules.  Their output goes to logs in build/,
# printed when they are waited for.
BG_PID=
BG_SYSTEM_LOG=$AFBUS_BUILD/background-system.log
BG_SYSTEM_RC=$AFBUS_BUILD/background-system.rc
BG_DEBUG_LOG=$AFBUS_BUILD/background-debug.log
background_builds() {
	rm -f "$BG_SYSTEM_RC" "$BG_DEBUG_LOG"
	msg "building beside the guest at nice 19: the system guest's image" \
		"(log: $BG_SYSTEM_LOG)$([ "${AFBUS_PREBUILD_DEBUG:-0}" = 1 ] &&
			echo ", then the debug kernel (log: $BG_DEBUG_LOG)")"
	# its own process group (set -m), which kill_background stops
	set -m
	(
		renice -n 19 -p "$BASHPID" >/dev/null
		rc=0
		system_build >"$BG_SYSTEM_LOG" 2>&1 || rc=$?
		echo "$rc" >"$BG_SYSTEM_RC"
		[ "${AFBUS_PREBUILD_DEBUG:-0}" = 1 ] || exit 0
		{ "$AFBUS_TOP/build-aux/kernel-build.sh" --debug &&
		  "$AFBUS_TOP/build-aux/kernel-modules.sh" --debug; } >"$BG_DEBUG_LOG" 2>&1
	) </dev/null &
	BG_PID=$!
	set +m
	trap kill_background EXIT
}

# kill_background: a run that ends early (an error, ^C) stops them.
kill_background() {
	[ -z "$BG_PID" ] || kill -TERM -- "-$BG_PID" 2>/dev/null || true
}

# wait_system_build: the system guest's build, in the background or now;
# its status.
wait_system_build() {
	local rc=0
	if [ -z "$BG_PID" ]; then
		system_build
		return
	fi
	msg "waiting for the system guest's build (log: $BG_SYSTEM_LOG)"
	while [ ! -s "$BG_SYSTEM_RC" ] && kill -0 "$BG_PID" 2>/dev/null; do
		sleep 2
	done
	cat "$BG_SYSTEM_LOG" >&2
	rc=$(cat "$BG_SYSTEM_RC" 2>/dev/null || echo 1)
	return "$rc"
}

# wait_background: the rest (the debug kernel), before the run ends.
wait_background() {
	local rc=0
	[ -n "$BG_PID" ] || return 0
	kill -0 "$BG_PID" 2>/dev/null &&
		msg "waiting for the debug kernel's build (log: $BG_DEBUG_LOG)"
	wait "$BG_PID" || rc=$?
	BG_PID=
	[ ! -f "$BG_DEBUG_LOG" ] || cat "$BG_DEBUG_LOG" >&2
	# not a test: the debug run that follows builds it again and fails there
	[ "$rc" = 0 ] || msg "the debug kernel's build failed (log: $BG_DEBUG_LOG)"
}

# --system --bench: the whole-system measure (doc/benchmarks.md,
# "Whole-system measure"; tests/bench/system/): the system guest on the
# AF_BUS kernel, in the deterministic mode, booted once per daemon of the
# system bus (afbus.sysbus=), then its report.
SYSTEM_BENCH_DIR=${AFBUS_BENCH_SYSTEM_DIR:-$AFBUS_BUILD/bench-system}
SYSTEM_BENCH_APPEND=

# system_bench_guest SYSBUS: one boot, logged in build/bench-system/guest-SYSBUS.log;
# fails if the guest did not finish or its kernel log has errors
system_bench_guest() {
	local sysbus=$1 rc=0 start bad timeout=${AFBUS_BENCH_SYSTEM_TIMEOUT:-3600}
	LOG=$SYSTEM_BENCH_DIR/guest-$sysbus.log
	SYSTEM_BENCH_APPEND="afbus.sysbus=$sysbus afbus.bench_rounds=${AFBUS_BENCH_ROUNDS:-20}"
	msg "system guest, system bus $sysbus, -icount $ICOUNT, 1 CPU (log: $LOG)"
	start=$(date +%s)
	system_qemu afbus bench timeout --foreground -k 10 "$timeout" </dev/null >/dev/null || rc=$?
	echo "afbus-bench-info: host mode=icount icount=$ICOUNT accel=tcg qemu_cpus=$CPUS" \
		"wall_seconds=$(($(date +%s) - start)) kernel=$(cat "$SYSTEM_BOOT/version-afbus")" \
		"vmlinuz=$(sha256sum "$SYSTEM_BOOT/vmlinuz-afbus" | cut -c1-12)" \
		"image_key=$(cut -c1-12 "$SYSTEM_IMG.key")" >>"$LOG"
	msg "system guest, system bus $sysbus: done in $(($(date +%s) - start)) s, status $rc"
	[ "$rc" = 0 ] || { echo "run-qemu.sh: the $sysbus guest failed (status $rc; log: $LOG)" >&2; return 1; }
	tr -d '\r' <"$LOG" | grep -qx '=== afbus: dmesg end ===' ||
		{ echo "run-qemu.sh: the $sysbus guest did not finish (log: $LOG)" >&2; return 1; }
	bad=$(guest_dmesg | grep -E "$BAD_KMSG" || true)
	[ -z "$bad" ] || { echo "run-qemu.sh: the $sysbus guest's kernel log has errors ($LOG):" >&2
		echo "$bad" | head -n 40 | sed 's/^/  /' >&2; return 1; }
}

run_system_bench() {
	local sysbus pid failed=0 logs=() pids=() jobs=${AFBUS_BENCH_SYSTEM_JOBS:-1}
	[ "${AFBUS_KVM:-0}" != 1 ] || die "the deterministic mode needs TCG (AFBUS_KVM=1 is set)"
	mkdir -p "$SYSTEM_BENCH_DIR"
	CPUS=1 ICOUNT=$ICOUNT_OPTS
	for sysbus in $(echo "${AFBUS_BENCH_SYSBUS:-fork,bridge,debian,broker}" | tr , ' '); do
		system_bench_guest "$sysbus" &
		pids+=($!)
		logs+=("$sysbus=$SYSTEM_BENCH_DIR/guest-$sysbus.log")
		if [ ${#pids[@]} -ge "$jobs" ]; then
			wait "${pids[0]}" || failed=1
			pids=("${pids[@]:1}")
		fi
	done
	for pid in ${pids[@]+"${pids[@]}"}; do
		wait "$pid" || failed=1
	done
	python3 "$AFBUS_TOP/build-aux/bench-system-report.py" "$SYSTEM_BENCH_DIR" "${logs[@]}" || failed=1
	return $failed
}

# --debug: the debug kernel and its defaults.
use_debug_kernel() {
	KERNEL=$KERNEL_OBJ_DEBUG/arch/x86/boot/bzImage
	LOG=${AFBUS_LOG:-$AFBUS_BUILD/guest-debug.log}
	TIMEOUT=${AFBUS_TIMEOUT:-3600}
	TEST_TIMEOUT=${AFBUS_TEST_TIMEOUT:-1800}
	MEM=2G
	FUZZ_SECONDS=${AFBUS_FUZZ_SECONDS:-120}
	# 10000 each way take over 20 minutes under KASAN and lockdep
	STRESS_MSGS=${AFBUS_STRESS_MSGS:-2000}
	GUEST_APPEND="afbus.debug=1 kmemleak.verbose=1"
}

# A kernel built with modules (debug.config: nfdbus) has them in
# modules.cpio.gz of its object directory (build-aux/kernel-modules.sh):
# the guest boots the initramfs with that archive appended (the kernel
# unpacks one after the other), and its init loads them.
with_kernel_modules() {
	local modules=${KERNEL%/arch/x86/boot/bzImage}/modules.cpio.gz
	local out=$AFBUS_BUILD/initramfs-modules.cpio.gz

	[ -f "$modules" ] || return 0
	cat "$INITRAMFS" "$modules" >"$out.tmp"
	mv "$out.tmp" "$out"
	INITRAMFS=$out
}

# --kcsan, --kcsan-strict: the KCSAN kernel (kcsan or kcsan-strict), with
# the debug run's defaults but no kmemleak scan (kcsan.config has no
# kmemleak).
use_kcsan_kernel() {
	KERNEL=$AFBUS_BUILD/kernel-obj-$1/arch/x86/boot/bzImage
	LOG=${AFBUS_LOG:-$AFBUS_BUILD/guest-$1.log}
	GUEST_APPEND=
}

# --bench: the benchmark guests (tests/bench/run-bench) and their report.
BENCH_DIR=${AFBUS_BENCH_DIR:-$AFBUS_BUILD/bench}
# Under -icount with -smp 2, QEMU 7.2's round-robin TCG never gives the
# second CPU time once it waits for the first one during boot, so the
# deterministic mode has one CPU (doc/benchmarks.md, "Deterministic mode").
ICOUNT_OPTS=shift=0,sleep=off

# use_bench bench|profile
use_bench() {
	KERNEL=$KERNEL_OBJ_BENCH/arch/x86/boot/bzImage
	INITRAMFS=$AFBUS_BUILD/initramfs-$1.cpio.gz
	TIMEOUT=${AFBUS_TIMEOUT:-3600}
	mkdir -p "$BENCH_DIR"
}

# bench_options RUNS: the afbus.bench_* parameters from AFBUS_BENCH_*.
bench_options() {
	local v opt out="afbus.bench_runs=$1"
	for opt in calls warmup deliveries subs growth_calls peers rules only; do
		v=$(echo "$opt" | tr a-z A-Z)
		v=$(eval "echo \${AFBUS_BENCH_$v:-}")
		[ -z "$v" ] || out="$out afbus.bench_$opt=$v"
	done
	echo "$out"
}

# bench_guest MODE [LOG]: one benchmark boot, icount or wall, logged in
# LOG (build/bench/guest-MODE.log); fails if the guest did or its kernel
# log has errors.
bench_guest() {
	local mode=$1 rc=0 bad start runs
	case $mode in
	icount)
		[ "${AFBUS_KVM:-0}" != 1 ] ||
			die "the deterministic mode needs TCG (AFBUS_KVM=1 is set)"
		CPUS=${AFBUS_BENCH_ICOUNT_CPUS:-1}
		ICOUNT=$ICOUNT_OPTS
		runs=${AFBUS_BENCH_ICOUNT_RUNS:-1}
		;;
	wall)
		CPUS=${AFBUS_CPUS:-2}
		ICOUNT=
		runs=${AFBUS_BENCH_RUNS:-3}
		;;
	*) die "AFBUS_BENCH_MODES: unknown mode $mode (icount, wall)" ;;
	esac
	LOG=${2:-$BENCH_DIR/guest-$mode.log}
	GUEST_APPEND="afbus.bench_clock=$mode $(bench_options "$runs") $BENCH_EXTRA"
	msg "benchmark guest, $mode mode: $CPUS CPU(s)${ICOUNT:+, -icount $ICOUNT} (log: $LOG)"
	start=$(date +%s)
	run_qemu bench timeout --foreground -k 10 "$TIMEOUT" </dev/null || rc=$?
	# the host's side of the run, for bench-report.py
	echo "afbus-bench-info: host mode=$mode icount=${ICOUNT:-none}" \
		"accel=$([ "${AFBUS_KVM:-0}" = 1 ] && echo kvm || echo tcg)" \
		"qemu_cpus=$CPUS wall_seconds=$(( $(date +%s) - start ))" \
		"bzimage=$(sha256sum "$KERNEL" | cut -c1-12)" >>"$LOG"
	if [ "$rc" != 0 ]; then
		echo "run-qemu.sh: the $mode benchmark guest failed (status $rc; log: $LOG)" >&2
		return 1
	fi
	bad=$(guest_dmesg | grep -E "$BAD_KMSG" || true)
	if [ -n "$bad" ]; then
		echo "run-qemu.sh: the guest kernel log has errors ($LOG):" >&2
		echo "$bad" | head -n 40 | sed 's/^/  /' >&2
		return 1
	fi
}

BENCH_EXTRA=

run_bench() {
	local mode logs=()
	for mode in $(echo "${AFBUS_BENCH_MODES:-icount,wall}" | tr , ' '); do
		bench_guest "$mode" || return 1
		logs+=("$mode=$LOG")
	done
	python3 "$AFBUS_TOP/build-aux/bench-report.py" "$BENCH_DIR" "${logs[@]}"
}

# --profile: perf in the deterministic mode; the guest writes its reports
# as a tar archive to a raw disk, unpacked into build/bench/profile/.
PROFILE_DIR=$BENCH_DIR/profile

run_profile() {
	OUT_DISK=$BENCH_DIR/profile.disk
	rm -f "$OUT_DISK"
	truncate -s 512M "$OUT_DISK"
	BENCH_EXTRA="afbus.bench_profile=${AFBUS_PROFILE:-rtt,rtt4k,signals4,signals64} afbus.bench_period=${AFBUS_PROFILE_PERIOD:-100000} afbus.bench_out=/dev/vda"
	bench_guest icount "$BENCH_DIR/guest-profile.log" || return 1
	rm -rf "$PROFILE_DIR"
	mkdir -p "$PROFILE_DIR"
	tar -xf "$OUT_DISK" -C "$PROFILE_DIR" ||
		die "no profile archive on $OUT_DISK (guest log: $LOG)"
	rm -f "$OUT_DISK"
	cp "$LOG" "$PROFILE_DIR/guest.log"
	msg "profiles in $PROFILE_DIR:"
	(cd "$PROFILE_DIR" && ls -l) >&2
	[ -s "$PROFILE_DIR/summary.txt" ] && cat "$PROFILE_DIR/summary.txt"
	! grep -q '^afbus-bench-fail: ' "$LOG"
}

# --upstream: upstream's modular tests in the Debian root file system
# (tests/upstream/run-upstream), with their counts and the host's
# verdicts on the guest.
run_upstream() {
	local rc=0
	IN_DISK=$AFBUS_BUILD/upstream-tests.tar
	"$AFBUS_TOP/build-aux/dbus-check.sh" --pack "$IN_DISK" >&2
	LOG=${AFBUS_LOG:-$AFBUS_BUILD/guest-upstream.log}
	TIMEOUT=${AFBUS_TIMEOUT:-3600}
	# above run-upstream's own limit on an embedded case (1200 s)
	TEST_TIMEOUT=${AFBUS_TEST_TIMEOUT:-1800}
	msg "upstream's tests on unix: and afbus: (log: $LOG)"
	run_qemu check timeout --foreground -k 10 "$TIMEOUT" </dev/null || rc=$?
	read -r passed failed skipped < <(guest_counts)
	echo
	echo "=== run-qemu.sh: verdict (guest log: $LOG)"
	guest_verdicts guest "$rc" "$TIMEOUT" AFBUS_TIMEOUT
	final_line
}

main() {
	local mode=shell rc=0 checkpatch_rc=0 debug=0 rootfs=0 system= arg
	local debug_kernel=--debug
	for arg in "$@"; do
		case $arg in
		--check) mode=check ;;
		--rootfs) rootfs=1 ;;
		--system) system=only ;;
		--bench) mode=bench ;;
		--profile) mode=profile ;;
		--upstream) mode=upstream ;;
		--debug) debug=1 ;;
		--kcsan|--kcsan-strict) debug=1 debug_kernel=$arg ;;
		*) usage ;;
		esac
	done
	[ $debug = 0 ] || use_debug_kernel
	[ $debug_kernel = --debug ] || use_kcsan_kernel "${debug_kernel#--}"
	if [ "$system" = only ]; then
		[ $debug = 0 ] || die "--system boots the AF_BUS kernel package, not the debug kernel"
		# the test programs the image carries (build/tests) are make
		# all's; a stale one would be tested in the image
		if [ "${AFBUS_SKIP_BUILD:-0}" != 1 ]; then
			build >&2
		else
			"$AFBUS_TOP/build-aux/install-deps.sh" >&2
		fi
		system_build
		if [ "$mode" = shell ]; then
			system_qemu "${AFBUS_SYSTEM_KERNEL:-afbus}" shell
			return
		fi
		if [ "$mode" = bench ]; then
			run_system_bench
			return
		fi
		[ "$mode" = check ] || usage
		system_check afbus
		system_check stock
		final_line
		return
	fi
	case $mode in bench|profile) use_bench $mode; rootfs=0 ;; esac
	[ $mode = upstream ] && rootfs=1
	if [ $mode = check ] && [ $rootfs = 0 ]; then
		rootfs=${AFBUS_ROOTFS:-$((1 - debug))}
	fi

	if [ "${AFBUS_SKIP_BUILD:-0}" != 1 ]; then
		build >&2
		if [ $debug = 1 ]; then
			"$AFBUS_TOP/build-aux/kernel-build.sh" $debug_kernel >&2
			"$AFBUS_TOP/build-aux/kernel-modules.sh" $debug_kernel >&2
		fi
	fi
	# the benchmark kernel and initramfs (cached): also with
	# AFBUS_SKIP_BUILD (make bench); --check never builds them
	case $mode in
	bench|profile)
		if [ -n "${AFBUS_BENCH_KERNEL:-}" ]; then
			KERNEL=$AFBUS_BENCH_KERNEL
		else
			"$AFBUS_TOP/build-aux/kernel-build.sh" --bench >&2
		fi
		if [ -n "${AFBUS_BENCH_INITRAMFS:-}" ]; then
			INITRAMFS=$AFBUS_BENCH_INITRAMFS
		else
			"$AFBUS_TOP/build-aux/mk-initramfs.sh" --$mode >&2
		fi
		;;
	esac
	# the Debian root file system (cached): also with AFBUS_SKIP_BUILD
	if [ "$rootfs" = 1 ]; then
		"$AFBUS_TOP/build-aux/rootfs-image.sh" >&2
		ROOTFS=$ROOTFS_IMG
	fi
	[ -f "$KERNEL" ] || die "no kernel at $KERNEL"
	[ -f "$INITRAMFS" ] || die "no initramfs at $INITRAMFS"
	with_kernel_modules
	if [ "$mode" = check ] && [ "${AFBUS_SKIP_BUILD:-0}" != 1 ] &&
	   [ "${AFBUS_SYSTEM:-$((1 - debug))}" = 1 ]; then
		background_builds
	fi

	if [ "$mode" = shell ]; then
		run_qemu shell
		return
	fi
	if [ "$mode" = bench ]; then
		run_bench
		return
	fi
	if [ "$mode" = profile ]; then
		run_profile
		return
	fi
	if [ "$mode" = upstream ]; then
		run_upstream
		return
	fi
	"$AFBUS_TOP/build-aux/checkpatch.sh" >"$CHECKPATCH_LOG" 2>&1 ||
		checkpatch_rc=$?
	(cd "$AFBUS_TOP" && tests/doc/run-blocks host README.md doc/*.md) \
		>"$DOC_LOG" 2>&1 </dev/null || true
	run_qemu check timeout --foreground -k 10 "$TIMEOUT" </dev/null || rc=$?
	report "$rc" "$checkpatch_rc"
	if [ "${AFBUS_APPARMOR:-$((1 - debug))}" = 1 ]; then
		boot_check apparmor "$APPARMOR_UNITS"
	else
		echo "skip - the AppArmor guest's tests (AFBUS_APPARMOR=0)"
		skipped=$((skipped + 1))
	fi
	if [ "${AFBUS_SELINUX:-$((1 - debug))}" = 1 ]; then
		boot_check selinux "$SELINUX_UNITS"
	else
		echo "skip - the SELinux guest's tests (AFBUS_SELINUX=0)"
		skipped=$((skipped + 1))
	fi
	if [ "${AFBUS_CGROUP_V1:-$((1 - debug))}" = 1 ]; then
		boot_check cgroup-v1 "$CGROUP_V1_UNITS" afbus.cgroup_v1=1
	else
		echo "skip - the cgroup v1 guest's tests (AFBUS_CGROUP_V1=0)"
		skipped=$((skipped + 1))
	fi
	if [ "${AFBUS_SYSTEM:-$((1 - debug))}" = 1 ]; then
		if wait_system_build; then
			system_check afbus
			system_check stock
		else
			echo "FAIL: the system guest could not be built (see above)"
			failed=$((failed + 1))
		fi
	else
		echo "skip - the system guest's tests (AFBUS_SYSTEM=0)"
		skipped=$((skipped + 1))
	fi
	wait_background
	final_line
}

main "$@"
