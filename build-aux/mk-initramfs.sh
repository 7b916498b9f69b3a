#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest's initramfs, build/initramfs.cpio.gz:
#   /init                         tests/guest/init
#   /usr/libexec/afbus/run-tests  tests/guest/run-tests
#   /usr/libexec/afbus/rootfs     tests/guest/rootfs
#   /usr/bin/guest-check          build/guest/guest-check
#   /usr/bin/nfdbus-ctl           build/nfdbus/nfdbus-ctl (with libmnl)
#   /usr/share/man/man8/nfdbus-ctl.8  nfdbus/nfdbus-ctl.8, its manual page
#   /sbin/apparmor_parser         the host's (package apparmor), which
#                                 tests/kernel/nfdbus_apparmor loads its
#                                 profiles with (run-qemu.sh's lsm=apparmor
#                                 boot); not with --bench or --profile
#   /usr/share/doc/afbus/         README.md and doc/*.md, whose blocks marked
#                                 runnable in the guest tests/dbus/doc-blocks.sh
#                                 runs with /usr/libexec/afbus/run-blocks
#                                 (tests/doc/run-blocks)
#   /tests/kernel/NAME            the test binaries given as arguments
#   /tests/fuzz/NAME              (those from a .../fuzz/ directory)
#   /tests/unbuilt                names of those that do not exist (failed
#                                 to compile)
#   /bin/busybox + applet links   from busybox-static
#   the shared libraries (and dynamic loader) the binaries need
#   /dev/console, /dev/null, /proc, /sys, /tmp, /root, /etc
#   the D-Bus fork when it is built (build/dbus-stage): dbus-daemon,
#   dbus-send, dbus-monitor, libdbus, the session bus configuration and
#   the system bus's (the tests take its default policy), and
#   the D-Bus tests: /tests/dbus/*.sh from tests/dbus/ and the programs
#   they use from build/tests/dbus/ (in /usr/bin)
#   the benchmark tools build/tests/bench/* (in /usr/bin) and
#   /usr/libexec/afbus/run-bench (tests/bench/run-bench)
#
# With --bench (first argument) it writes build/initramfs-bench.cpio.gz
# instead, for `make bench`, with Debian's own buses added (from
# build-aux/bench-debs.sh): /opt/debian/bin/dbus-daemon and its
# /opt/debian/lib/libdbus-1.so.3, /usr/bin/dbus-broker and
# /usr/bin/dbus-broker-launch.
#
# With --profile it writes build/initramfs-profile.cpio.gz, for
# `make profile`: the --bench one plus Debian's perf (/usr/bin/perf, from
# build-aux/bench-debs.sh --perf) and its libraries.
#
# The archive is written with the kernel's usr/gen_init_cpio, so device
# nodes and root ownership need no privileges.  It is rebuilt only when
# the hash of its contents changes.
#
# Usage: mk-initramfs.sh [--bench] [TEST-BINARY...]
set -eu
. "$(dirname "$0")/common.sh"

OUT=$AFBUS_BUILD/initramfs.cpio.gz
WORK=$AFBUS_BUILD/initramfs
BENCH=0 PROFILE=0
case ${1:-} in
--bench|--profile)
	BENCH=1
	[ "$1" = --profile ] && PROFILE=1
	OUT=$AFBUS_BUILD/initramfs-${1#--}.cpio.gz
	WORK=$AFBUS_BUILD/initramfs-${1#--}
	shift
	;;
esac
LIST=$WORK/list
BUSYBOX=${BUSYBOX:-/bin/busybox}
GUEST_CHECK=$AFBUS_BUILD/guest/guest-check
NFDBUS_CTL=$AFBUS_BUILD/nfdbus/nfdbus-ctl
APPARMOR_PARSER=${APPARMOR_PARSER:-/sbin/apparmor_parser}
GEN_INIT_CPIO=$AFBUS_BUILD/gen_init_cpio

declare -A have_dir

# add_dir PATH: a directory entry, after those of its parents.
add_dir() {
	local d=$1
	[ "$d" = / ] || [ -n "${have_dir[$d]:-}" ] && return 0
	add_dir "$(dirname "$d")"
	have_dir[$d]=1
	echo "dir $d ${2:-0755} 0 0" >>"$LIST"
}

declare -A have_file

# add_file DEST SOURCE [MODE]
add_file() {
	add_dir "$(dirname "$1")"
	[ -r "$2" ] || die "missing $2"
	have_file[$1]=1
	echo "file $1 $2 ${3:-0755} 0 0" >>"$LIST"
}

# add_libs BINARY...: the shared objects ldd lists, at the same paths.
add_libs() {
	local lib
	# ldd lines: "\tlibc.so.6 => /lib/.../libc.so.6 (0x...)" and
	# "\t/lib64/ld-linux-x86-64.so.2 (0x...)"; headers "FILE:" skipped.
	for lib in $(ldd "$@" 2>/dev/null |
		     awk '/^\t/ { if ($1 ~ /^\//) print $1; else if ($3 ~ /^\//) print $3 }' |
		     sort -u); do
		case ${lib##*/} in libdbus-1.so*) continue ;; esac
		add_file "$lib" "$(readlink -f "$lib")"
	done
}

DBUS_STAGE=$AFBUS_BUILD/dbus-stage
DBUS_LIBDIR=/usr/lib/x86_64-linux-gnu
DBUS_TEST_BIN=$AFBUS_BUILD/tests/dbus

# add_dbus: the D-Bus fork and its tests, if built.  libdbus comes from
# the staging directory, never from the host (add_libs skips it).
add_dbus() {
	local f lib
	[ -x "$DBUS_STAGE/usr/bin/dbus-daemon" ] || return 0
	for f in dbus-daemon dbus-send dbus-monitor dbus-cleanup-sockets; do
		add_file "/usr/bin/$f" "$DBUS_STAGE/usr/bin/$f"
		dbus_bins+=("$DBUS_STAGE/usr/bin/$f")
	done
	lib=$(cd "$DBUS_STAGE$DBUS_LIBDIR" && ls libdbus-1.so.3.*)
	add_file "$DBUS_LIBDIR/$lib" "$DBUS_STAGE$DBUS_LIBDIR/$lib"
	echo "slink $DBUS_LIBDIR/libdbus-1.so.3 $lib 0777 0 0" >>"$LIST"
	add_file /usr/share/dbus-1/session.conf "$DBUS_STAGE/usr/share/dbus-1/session.conf" 0644
	# (its policy, for the tests under the system bus's default policy)
	add_file /usr/share/dbus-1/system.conf "$DBUS_STAGE/usr/share/dbus-1/system.conf" 0644
	add_dir /usr/share/dbus-1/services
	add_dir /etc/dbus-1
	echo 0123456789abcdef0123456789abcdef >"$WORK/machine-id"
	add_file /etc/machine-id "$WORK/machine-id" 0444
	add_dir /tests/dbus
	add_file /usr/libexec/afbus/dbus-test-lib.sh "$AFBUS_TOP/tests/dbus/lib/dbus-test-lib.sh" 0644
	for f in "$AFBUS_TOP"/tests/dbus/*.sh; do
		[ -f "$f" ] && add_file "/tests/dbus/${f##*/}" "$f"
	done
	for f in "$DBUS_TEST_BIN"/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		add_file "/usr/bin/${f##*/}" "$f"
		dbus_bins+=("$f")
	done
}

# add_docs: the documentation, and the runner of its blocks.
add_docs() {
	local f
	add_file /usr/share/doc/afbus/README.md "$AFBUS_TOP/README.md" 0644
	for f in "$AFBUS_TOP"/doc/*.md; do
		[ -f "$f" ] && add_file "/usr/share/doc/afbus/doc/${f##*/}" "$f" 0644
	done
	add_file /usr/libexec/afbus/run-blocks "$AFBUS_TOP/tests/doc/run-blocks"
}

BENCH_BIN=$AFBUS_BUILD/tests/bench

# add_bench: the benchmark tools and the in-guest benchmark runner.
add_bench() {
	local f
	add_file /usr/libexec/afbus/run-bench "$AFBUS_TOP/tests/bench/run-bench"
	for f in "$BENCH_BIN"/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		add_file "/usr/bin/${f##*/}" "$f"
		dbus_bins+=("$f")
	done
}

# add_debian: Debian's dbus-daemon with its libdbus under /opt/debian
# (LD_LIBRARY_PATH=/opt/debian/lib; the fork's libdbus stays the
# default), and dbus-broker, whose launcher runs /usr/bin/dbus-broker.
add_debian() {
	local root lib f
	root=$("$AFBUS_TOP/build-aux/bench-debs.sh")
	add_file /opt/debian/bin/dbus-daemon "$root/usr/bin/dbus-daemon"
	lib=$(cd "$root/lib/x86_64-linux-gnu" && ls libdbus-1.so.3.*)
	add_file "/opt/debian/lib/$lib" "$root/lib/x86_64-linux-gnu/$lib"
	echo "slink /opt/debian/lib/libdbus-1.so.3 $lib 0777 0 0" >>"$LIST"
	for f in dbus-broker dbus-broker-launch; do
		add_file "/usr/bin/$f" "$root/usr/bin/$f"
	done
	dbus_bins+=("$root/usr/bin/dbus-daemon" "$root/usr/bin/dbus-broker"
		    "$root/usr/bin/dbus-broker-launch")
}

# add_perf: Debian's perf, with its libraries from its own packages
# (bench-debs.sh --perf) or else the host, at their usual paths.
add_perf() {
	local root lib libpath missing
	root=$("$AFBUS_TOP/build-aux/bench-debs.sh" --perf)
	add_file /usr/bin/perf "$root/usr/bin/perf"
	libpath=$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu
	missing=$(LD_LIBRARY_PATH=$libpath ldd "$root/usr/bin/perf" |
		  awk '/not found/ {print $1}' | xargs)
	[ -z "$missing" ] || die "perf needs $missing, which neither its" \
		"packages nor the host have (apt-get install them)"
	for lib in $(LD_LIBRARY_PATH=$libpath ldd "$root/usr/bin/perf" |
		     awk '/^\t/ { if ($1 ~ /^\//) print $1; else if ($3 ~ /^\//) print $3 }' |
		     sort -u); do
		[ -z "${have_file[${lib#"$root"}]:-}" ] || continue
		add_file "${lib#"$root"}" "$(readlink -f "$lib")"
	done
}

write_list() {
	local applet t built=()

	: >"$LIST"
	add_dir /dev
	echo "nod /dev/console 0600 0 0 c 5 1" >>"$LIST"
	echo "nod /dev/null 0666 0 0 c 1 3" >>"$LIST"
	add_dir /proc
	add_dir /sys
	add_dir /tmp 1777
	add_dir /root 0700

	# Minimal user database: root, and nobody for the tests of
	# unprivileged clients (dbus-daemon drops a client whose uid it
	# cannot look up).
	mkdir -p "$WORK/etc"
	printf '%s\n' "root:x:0:0:root:/root:/bin/sh" \
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false" >"$WORK/etc/passwd"
	printf '%s\n' "root:x:0:" "nogroup:x:65534:" >"$WORK/etc/group"
	add_file /etc/passwd "$WORK/etc/passwd" 0644
	add_file /etc/group "$WORK/etc/group" 0644

	# busybox must be static: nothing else provides its libraries.
	if ldd "$BUSYBOX" >/dev/null 2>&1; then
		die "$BUSYBOX is not static; install busybox-static"
	fi
	add_file /bin/busybox "$BUSYBOX"
	for applet in $("$BUSYBOX" --list-full | sort); do
		[ "$applet" = bin/busybox ] && continue
		add_dir "$(dirname "/$applet")"
		echo "slink /$applet /bin/busybox 0777 0 0" >>"$LIST"
	done

	add_file /init "$AFBUS_TOP/tests/guest/init"
	add_file /usr/libexec/afbus/run-tests "$AFBUS_TOP/tests/guest/run-tests"
	# the Debian root file system's disk (run-qemu.sh --rootfs)
	add_file /usr/libexec/afbus/rootfs "$AFBUS_TOP/tests/guest/rootfs"
	add_file /usr/bin/guest-check "$GUEST_CHECK"
	# nfdbus-ctl, the nfdbus rule tool, with libmnl, and its manual page
	if [ -x "$NFDBUS_CTL" ]; then
		add_file /usr/bin/nfdbus-ctl "$NFDBUS_CTL"
		add_file /usr/share/man/man8/nfdbus-ctl.8 "$AFBUS_TOP/nfdbus/nfdbus-ctl.8" 0644
	fi
	# AppArmor's policy compiler, for the AppArmor units (not in the
	# benchmarks' initramfs)
	parser=()
	if [ "$BENCH" = 0 ]; then
		[ -x "$APPARMOR_PARSER" ] || die "$APPARMOR_PARSER is missing;" \
			"install it with: apt-get install -y apparmor"
		add_file /sbin/apparmor_parser "$APPARMOR_PARSER"
		parser=("$APPARMOR_PARSER")
	fi
	# Tests that failed to compile are listed in /tests/unbuilt, so
	# the guest counts them as failed.
	add_dir /tests/kernel
	: >"$WORK/unbuilt"
	for t in "$@"; do
		dir=kernel
		[ "$(basename "$(dirname "$t")")" = fuzz ] && dir=fuzz
		if [ -f "$t" ]; then
			add_file "/tests/$dir/${t##*/}" "$t"
			built+=("$t")
		else
			echo "${t##*/}" >>"$WORK/unbuilt"
		fi
	done
	add_file /tests/unbuilt "$WORK/unbuilt" 0644
	add_docs
	dbus_bins=()
	add_dbus
	add_bench
	[ "$BENCH" = 0 ] || add_debian
	add_libs "$GUEST_CHECK" ${parser[@]+"${parser[@]}"} ${built[@]+"${built[@]}"} ${dbus_bins[@]+"${dbus_bins[@]}"} \
		$([ -x "$NFDBUS_CTL" ] && echo "$NFDBUS_CTL")
	[ "$PROFILE" = 0 ] || add_perf
}

# Hash of the list and of every file it names.
content_hash() {
	{
		cat "$LIST"
		awk '$1 == "file" {print $3}' "$LIST" | xargs -r sha256sum
	} | sha256sum | cut -d' ' -f1
}

build_gen_init_cpio() {
	local src=$KERNEL_SRC/usr/gen_init_cpio.c
	[ -f "$src" ] || die "$src is missing; run build-aux/kernel-build.sh first"
	if [ ! -x "$GEN_INIT_CPIO" ] || [ "$src" -nt "$GEN_INIT_CPIO" ]; then
		gcc -O2 -o "$GEN_INIT_CPIO" "$src"
	fi
}

main() {
	local key
	mkdir -p "$WORK"
	write_list "$@"
	key=$(content_hash)
	if [ -f "$OUT" ] && [ "$(cat "$OUT.key" 2>/dev/null)" = "$key" ]; then
		msg "initramfs is up to date ($OUT)"
		return 0
	fi
	build_gen_init_cpio
	"$GEN_INIT_CPIO" "$LIST" | gzip -9n >"$OUT.tmp"
	mv "$OUT.tmp" "$OUT"
	echo "$key" >"$OUT.key"
	msg "wrote $OUT ($(du -k "$OUT" | cut -f1) KiB, $# test program(s)," \
		"$(wc -l <"$WORK/unbuilt") not compiled)"
}

main "$@"
