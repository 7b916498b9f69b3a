#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian's own D-Bus buses for the benchmarks, taken from Debian's binary
# packages (never installed on the host): `apt-get download` of
# dbus-daemon, libdbus-1-3 and dbus-broker at the versions apt offers,
# unpacked with `dpkg-deb -x` into build/bench-debian/root.  Redone only
# when the versions change (build/bench-debian/key).  The libraries those
# binaries need besides libdbus (libsystemd, libexpat, ...) are the
# host's, which are Debian's too; mk-initramfs.sh --bench copies them.
#
# With --perf, Debian's perf for `make profile` instead: linux-perf and
# the shared-library packages it depends on, in build/bench-perf/root
# (mk-initramfs.sh --profile takes perf's libraries from there first,
# then from the host).
#
# Prints the root directory.
set -eu
. "$(dirname "$0")/common.sh"

PACKAGES="dbus-daemon libdbus-1-3 dbus-broker"
DIR=$AFBUS_BUILD/bench-debian
if [ "${1:-}" = --perf ]; then
	# linux-perf's direct dependencies that are libraries (not libc6,
	# nor the perl and python3 its scripts use)
	PACKAGES="linux-perf $(apt-cache depends linux-perf 2>/dev/null |
		sed -n 's/^ *Depends: \(lib[^<> ]*\|zlib1g\)$/\1/p' |
		grep -v '^libc6$' | sort -u | xargs)"
	DIR=$AFBUS_BUILD/bench-perf
fi

versions() {
	local p v
	for p in $PACKAGES; do
		v=$(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')
		[ -n "$v" ] && [ "$v" != "(none)" ] ||
			die "apt knows no version of $p (apt-get update?)"
		echo "$p=$v"
	done
}

main() {
	local want deb
	want=$(versions | xargs)
	if [ -d "$DIR/root" ] && [ "$(cat "$DIR/key" 2>/dev/null)" = "$want" ]; then
		echo "$DIR/root"
		return 0
	fi
	msg "downloading $want"
	rm -rf "$DIR"
	mkdir -p "$DIR/debs" "$DIR/root"
	# shellcheck disable=SC2086 # one word per package
	(cd "$DIR/debs" && apt-get download $want >&2) ||
		die "apt-get download $want failed"
	for deb in "$DIR"/debs/*.deb; do
		dpkg-deb -x "$deb" "$DIR/root"
	done
	echo "$want" >"$DIR/key"
	echo "$DIR/root"
}

main "$@"
