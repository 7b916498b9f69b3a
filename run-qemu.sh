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
#   ./run-qemu.sh --rootfs  a bash shell in the Debian root file system
#                           (build-aux/rootfs-*.sh: debootstrap, GDBus,
#                           dbus-python, busctl and the D-Bus fork), on a
#                           virtio disk beside the busybox initramfs;
#                           --check attaches it too and runs its tests
#                           (tests/rootfs/), --debug --check does not
#                           unless AFBUS_ROOTFS=1
#   ./run-qemu.sh --bench   the benchmarks (`make bench`; README.md,
#                           "Benchmarks"): one guest runs them all, then
#                           build-aux/bench-report.py writes
#                           build/bench/results.json and the plots and
#                           prints the table
#
# Environment:
#   AFBUS_CPUS=2            CPUs given to the guest (it checks it sees them)
#   AFBUS_TIMEOUT=1200      seconds before a --check run is declared hung
#   AFBUS_TEST_TIMEOUT=300  seconds allowed to each test program
#   AFBUS_KVM=1             use KVM instead of TCG (not on the CI machines)
#   AFBUS_APPEND="..."      extra kernel command line parameters
#   AFBUS_SKIP_BUILD=1      boot what is already built
#   AFBUS_BUILD=DIR         build directory (default: build/)
#   AFBUS_FUZZ_SECONDS=N    how long tests/fuzz/af_bus_fuzz runs (default
#                           30, and 120 with --debug; 0 skips it)
#   AFBUS_FUZZ_SEED=S       its seed (default: random, printed; replays a run)
#   AFBUS_STRESS_MSGS=N     multicasts each way in tests/kernel/af_bus_stress
#   AFBUS_ROOTFS=0|1        attach the Debian root file system to a --check
#                           run (default: 1, and 0 with --debug)
#   AFBUS_ROOTFS_MIRROR=URL the Debian mirror debootstrap uses
#   AFBUS_BENCH_RUNS=3, AFBUS_BENCH_CALLS=10000, AFBUS_BENCH_WARMUP=500,
#   AFBUS_BENCH_DELIVERIES=3000, AFBUS_BENCH_SUBS=1,4,16,64,
#   AFBUS_BENCH_GROWTH_CALLS=1000, AFBUS_BENCH_PEERS=1,16,64,256,
#   AFBUS_BENCH_RULES=1,16,64,256, AFBUS_BENCH_ONLY=rtt,raw,signals,peers,rules
#                           --bench: iterations and what runs (see
#                           tests/bench/run-bench)
set -eu
. "$(dirname "$0")/build-aux/common.sh"

CPUS=${AFBUS_CPUS:-2}
TIMEOUT=${AFBUS_TIMEOUT:-1200}
TEST_TIMEOUT=${AFBUS_TEST_TIMEOUT:-300}
KERNEL=$KERNEL_OBJ/arch/x86/boot/bzImage
INITRAMFS=$AFBUS_BUILD/initramfs.cpio.gz
LOG=$AFBUS_BUILD/guest.log
MEM=1G
FUZZ_SECONDS=${AFBUS_FUZZ_SECONDS:-30}
STRESS_MSGS=${AFBUS_STRESS_MSGS:-10000}
GUEST_APPEND=
CHECKPATCH_LOG=$AFBUS_BUILD/checkpatch.log
# The Debian root file system (build-aux/rootfs-image.sh), when attached.
ROOTFS_IMG=$AFBUS_BUILD/rootfs.img
ROOTFS=

# Kernel messages that mean something went wrong in the guest.  Matched
# against the guest's dmesg only (not against test output).
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

# run_qemu MODE [WRAPPER...]: boot the guest (through WRAPPER, such as
# `timeout N`); the serial console is on stdio and also logged to $LOG.
run_qemu() {
	# RDRAND, trusted, seeds the kernel's random generator at boot: it
	# would otherwise become ready only tens of seconds into the tests,
	# and its static key flip then races with running tasks under TCG
	# (an int3 oops in crng_make_state() was seen).
	local mode=$1 accel=(-accel tcg -cpu qemu64,+rdrand) disk=() append=
	shift
	[ "${AFBUS_KVM:-0}" = 1 ] && accel=(-accel kvm -cpu host)
	# snapshot=on: the guest's writes go to a temporary file, never the image
	if [ -n "$ROOTFS" ]; then
		disk=(-drive "file=$ROOTFS_IMG,format=raw,if=virtio,snapshot=on")
		append=afbus.rootfs=/dev/vda
	fi
	rm -f "$LOG"
	"$@" qemu-system-x86_64 "${accel[@]}" -smp "$CPUS" -m "$MEM" \
		-nographic -no-reboot \
		-chardev stdio,id=console,mux=on,signal=off,logfile="$LOG" \
		-serial chardev:console -mon chardev=console \
		-kernel "$KERNEL" -initrd "$INITRAMFS" ${disk[@]+"${disk[@]}"} \
		-append "console=ttyS0 panic=-1 random.trust_cpu=on $append afbus.mode=$mode afbus.cpus=$CPUS afbus.test_timeout=$TEST_TIMEOUT afbus.fuzz_seconds=$FUZZ_SECONDS afbus.fuzz_seed=${AFBUS_FUZZ_SEED:-} afbus.stress_msgs=$STRESS_MSGS $GUEST_APPEND ${AFBUS_APPEND:-}"
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

# Take the guest's counts, add the host's own verdicts, print the
# offending lines, and print the final count line.  Returns 0 if all passed.
report() {
	local qemu_rc=$1 checkpatch_rc=$2 passed failed skipped bad line
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
	if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
		echo "FAIL: guest timed out after ${TIMEOUT}s (AFBUS_TIMEOUT)"
		failed=$((failed + 1))
	elif [ "$qemu_rc" != 0 ]; then
		echo "FAIL: qemu exited with status $qemu_rc"
		failed=$((failed + 1))
	fi
	if grep -q 'Kernel panic' "$LOG"; then
		echo "FAIL: guest kernel panicked:"
		tr -d '\r' <"$LOG" | grep -A3 'Kernel panic' | head -n 8 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
	if ! tr -d '\r' <"$LOG" | grep -qx '=== afbus: dmesg end ==='; then
		echo "FAIL: the guest did not finish its test run"
		failed=$((failed + 1))
	else
		# The clean kernel log counts as one test.
		bad=$(guest_dmesg | grep -E "$BAD_KMSG" || true)
		if [ -n "$bad" ]; then
			echo "FAIL: guest kernel log has errors:"
			echo "$bad" | head -n 40 | sed 's/^/  /'
			failed=$((failed + 1))
		else
			echo "ok - guest kernel log is clean"
			passed=$((passed + 1))
		fi
	fi

	if [ -z "$ROOTFS" ]; then
		echo "skip - the Debian root file system's tests (AFBUS_ROOTFS=0)"
		skipped=$((skipped + 1))
	fi

	line="$passed passed, $failed failed"
	[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
	echo "$line"
	[ "$failed" = 0 ]
}

# --debug: the debug kernel and its defaults.
use_debug_kernel() {
	KERNEL=$KERNEL_OBJ_DEBUG/arch/x86/boot/bzImage
	LOG=$AFBUS_BUILD/guest-debug.log
	TIMEOUT=${AFBUS_TIMEOUT:-3600}
	TEST_TIMEOUT=${AFBUS_TEST_TIMEOUT:-1800}
	MEM=2G
	FUZZ_SECONDS=${AFBUS_FUZZ_SECONDS:-120}
	# 10000 each way take over 20 minutes under KASAN and lockdep
	STRESS_MSGS=${AFBUS_STRESS_MSGS:-2000}
	GUEST_APPEND="afbus.debug=1 kmemleak.verbose=1"
}

# --bench: the benchmark guest (tests/bench/run-bench) and its report.
BENCH_DIR=$AFBUS_BUILD/bench

use_bench() {
	local v opt
	INITRAMFS=$AFBUS_BUILD/initramfs-bench.cpio.gz
	LOG=$BENCH_DIR/guest.log
	TIMEOUT=${AFBUS_TIMEOUT:-3600}
	mkdir -p "$BENCH_DIR"
	for opt in runs calls warmup deliveries subs growth_calls peers rules only; do
		v=$(echo "$opt" | tr a-z A-Z)
		v=$(eval "echo \${AFBUS_BENCH_$v:-}")
		[ -z "$v" ] || GUEST_APPEND="$GUEST_APPEND afbus.bench_$opt=$v"
	done
}

run_bench() {
	local rc=0 bad
	run_qemu bench timeout --foreground -k 10 "$TIMEOUT" </dev/null || rc=$?
	if [ "$rc" != 0 ]; then
		echo "run-qemu.sh: the benchmark guest failed (status $rc; log: $LOG)" >&2
		return 1
	fi
	bad=$(guest_dmesg | grep -E "$BAD_KMSG" || true)
	if [ -n "$bad" ]; then
		echo "run-qemu.sh: the guest kernel log has errors:" >&2
		echo "$bad" | head -n 40 | sed 's/^/  /' >&2
		return 1
	fi
	python3 "$AFBUS_TOP/build-aux/bench-report.py" "$LOG" "$BENCH_DIR"
}

main() {
	local mode=shell rc=0 checkpatch_rc=0 debug=0 rootfs=0 arg
	for arg in "$@"; do
		case $arg in
		--check) mode=check ;;
		--rootfs) rootfs=1 ;;
		--bench) mode=bench ;;
		--debug) debug=1 ;;
		*) usage ;;
		esac
	done
	[ $debug = 0 ] || use_debug_kernel
	[ $mode != bench ] || use_bench
	if [ $mode = check ] && [ $rootfs = 0 ]; then
		rootfs=${AFBUS_ROOTFS:-$((1 - debug))}
	fi
	[ $mode != bench ] || rootfs=0

	if [ "${AFBUS_SKIP_BUILD:-0}" != 1 ]; then
		build >&2
		[ $debug = 0 ] || "$AFBUS_TOP/build-aux/kernel-build.sh" --debug >&2
	fi
	# the benchmark initramfs (cached): also with AFBUS_SKIP_BUILD (make bench)
	[ $mode != bench ] || "$AFBUS_TOP/build-aux/mk-initramfs.sh" --bench >&2
	# the Debian root file system (cached): also with AFBUS_SKIP_BUILD
	if [ "$rootfs" = 1 ]; then
		"$AFBUS_TOP/build-aux/rootfs-image.sh" >&2
		ROOTFS=$ROOTFS_IMG
	fi
	[ -f "$KERNEL" ] || die "no kernel at $KERNEL"
	[ -f "$INITRAMFS" ] || die "no initramfs at $INITRAMFS"

	if [ "$mode" = shell ]; then
		run_qemu shell
		return
	fi
	if [ "$mode" = bench ]; then
		run_bench
		return
	fi
	"$AFBUS_TOP/build-aux/checkpatch.sh" >"$CHECKPATCH_LOG" 2>&1 ||
		checkpatch_rc=$?
	run_qemu check timeout --foreground -k 10 "$TIMEOUT" </dev/null || rc=$?
	report "$rc" "$checkpatch_rc"
}

main "$@"
