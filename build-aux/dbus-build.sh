#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the AF_BUS fork of D-Bus and install it into a staging directory:
#   1. fetch Debian's dbus 1.14.10 source package (apt-get source, after
#      adding a deb-src entry for the running suite when there is none)
#      into build/dbus-debian, once;
#   2. build/dbus-src = that source tree (Debian's patches applied), the
#      dbus/series patches applied on top, transport-afbus/dbus/ and
#      transport-afbus/bus/ copied into its dbus/ and bus/ directories,
#      and autoreconf run for the patched Makefile.am files and
#      configure.ac;
#   3. configure it in build/dbus-obj (out of tree; no docs, X11, systemd,
#      SELinux, AppArmor or modular tests) and make;
#   4. make install DESTDIR=build/dbus-stage.
# Steps 2 and 3 are redone only when their inputs change (the Debian
# source, the series, this script); transport-afbus/ is copied with
# content comparison, so editing one file recompiles only that file.
#
# Outputs: $DBUS_STAGE/usr/{bin,lib,libexec,share}, $DBUS_STAGE/etc.
# With --fetch-source it only does step 1 and prints the .dsc's path.
set -eu
. "$(dirname "$0")/common.sh"

DBUS_UPSTREAM_VERSION=1.14.10
DBUS_PATCHES=$AFBUS_TOP/dbus
DBUS_SERIES=$DBUS_PATCHES/series
DBUS_NEW=$AFBUS_TOP/transport-afbus
DBUS_DEBIAN=$AFBUS_BUILD/dbus-debian
DBUS_SRC=$AFBUS_BUILD/dbus-src
DBUS_OBJ=$AFBUS_BUILD/dbus-obj
DBUS_STAGE=$AFBUS_BUILD/dbus-stage
KEY_FILE=$DBUS_OBJ/.afbus-build-key
LOG=$AFBUS_BUILD/dbus-build.log
DEB_SRC_LIST=/etc/apt/sources.list.d/afbus-deb-src.sources

CONFIGURE_FLAGS=(
	--prefix=/usr --sysconfdir=/etc --localstatedir=/var
	--runstatedir=/run --libexecdir=/usr/libexec
	--libdir=/usr/lib/x86_64-linux-gnu
	--disable-static
	--disable-doxygen-docs --disable-xml-docs --disable-ducktype-docs
	--without-x --disable-x11-autolaunch --disable-systemd
	--disable-selinux --disable-apparmor --disable-libaudit
	--disable-launchd --disable-user-session
	--disable-modular-tests --disable-embedded-tests --disable-installed-tests
	--disable-code-coverage --disable-stats
	--with-system-socket=/run/dbus/system_bus_socket
	# the system bus on AF_BUS when its daemon listens there (doc/design.md,
	# "The system, session and user buses"), else the usual unix socket
	--with-system-bus-default-address='afbus:file=/run/dbus/system_bus.afbus;unix:path=/var/run/dbus/system_bus_socket'
)

# The patch files named in dbus/series, in order.
dbus_series_patches() {
	[ -f "$DBUS_SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
		"$DBUS_SERIES" | grep -v '^$' || true
}

# Make sure apt knows a deb-src entry for the suite the deb entries use.
ensure_deb_src() {
	apt-cache showsrc dbus 2>/dev/null | grep -q "^Version: $DBUS_UPSTREAM_VERSION-" &&
		return 0
	[ "$(id -u)" = 0 ] ||
		die "no deb-src entry for dbus $DBUS_UPSTREAM_VERSION; as root, add one" \
			"to /etc/apt/sources.list.d and run apt-get update"
	msg "adding $DEB_SRC_LIST and updating the package lists"
	awk '
		/^Types:/ { if ($0 ~ /deb/) keep = 1; else keep = 0 }
		/^URIs:|^Suites:|^Components:|^Signed-By:/ && keep { f[$1] = $0 }
		/^$/ { emit() }
		END { emit() }
		function emit() {
			if (f["URIs:"] ~ /debian/ && f["Suites:"] != "" && !seen[f["URIs:"]]++) {
				print "Types: deb-src"
				print f["URIs:"]; print f["Suites:"]; print f["Components:"]
				if (f["Signed-By:"] != "") print f["Signed-By:"]
				print ""
			}
			delete f; keep = 0
		}' /etc/apt/sources.list.d/debian.sources >"$DEB_SRC_LIST.tmp"
	[ -s "$DEB_SRC_LIST.tmp" ] ||
		die "cannot derive a deb-src entry from /etc/apt/sources.list.d/debian.sources"
	mv "$DEB_SRC_LIST.tmp" "$DEB_SRC_LIST"
	apt-get update >/dev/null
}

# Download the source package once; print the .dsc path.
fetch_source() {
	local dsc
	dsc=$(ls "$DBUS_DEBIAN"/dbus_"$DBUS_UPSTREAM_VERSION"-*.dsc 2>/dev/null | tail -n 1 || true)
	if [ -z "$dsc" ]; then
		ensure_deb_src
		mkdir -p "$DBUS_DEBIAN"
		local version
		version=$(apt-cache showsrc dbus | sed -n "s/^Version: \($DBUS_UPSTREAM_VERSION-.*\)/\1/p" |
			sort -V | tail -n 1)
		[ -n "$version" ] || die "Debian has no dbus $DBUS_UPSTREAM_VERSION source"
		msg "fetching Debian source package dbus $version"
		(cd "$DBUS_DEBIAN" && apt-get source --download-only "dbus=$version" >&2)
		dsc=$(ls "$DBUS_DEBIAN"/dbus_"$DBUS_UPSTREAM_VERSION"-*.dsc | tail -n 1)
	fi
	echo "$dsc"
}

build_key() {
	local p
	{
		basename "$1"
		sha256sum "$1" | cut -d' ' -f1
		for p in $(dbus_series_patches); do
			[ -f "$DBUS_PATCHES/$p" ] || die "dbus/series names $p, which does not exist"
			echo "== $p"
			cat "$DBUS_PATCHES/$p"
		done
		printf '%s\n' "${CONFIGURE_FLAGS[@]}"
		# without -ffile-prefix-map, which names the directory the
		# build started from
		for p in CFLAGS LDFLAGS CPPFLAGS; do
			dpkg-buildflags --get $p | sed 's/ *-ffile-prefix-map=[^ ]*//g'
		done
		sha256sum <"$0"
		gcc --version | head -1
	} | sha256sum | cut -d' ' -f1
}

# Fresh source tree: Debian source, our series, automake, configure.
prepare_tree() {
	local dsc=$1 p
	rm -rf "$DBUS_SRC" "$DBUS_OBJ"
	msg "unpacking $(basename "$dsc")"
	dpkg-source --no-check -x "$dsc" "$DBUS_SRC" >/dev/null
	for p in $(dbus_series_patches); do
		patch -d "$DBUS_SRC" -p1 --quiet --no-backup-if-mismatch \
			<"$DBUS_PATCHES/$p" || die "dbus/$p does not apply to dbus $DBUS_UPSTREAM_VERSION"
	done
	sync_new_sources
	# The series changes Makefile.am files and configure.ac, so the
	# autotools regenerate everything, as Debian's own build of the
	# package does (dh_autoreconf).
	(cd "$DBUS_SRC" && autoreconf -fi) >>"$LOG" 2>&1 ||
		die "autoreconf failed (see $LOG)"
	mkdir -p "$DBUS_OBJ"
	# Debian's own build flags (-O2, hardening), as its dbus package is
	# built: without them configure compiles everything at -O0, and the
	# fork would be compared with Debian's optimised binaries (make bench).
	(cd "$DBUS_OBJ" && CFLAGS="$(dpkg-buildflags --get CFLAGS)" \
		LDFLAGS="$(dpkg-buildflags --get LDFLAGS)" \
		CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS) -I$DBUS_OBJ/afbus-include" \
		"$DBUS_SRC/configure" "${CONFIGURE_FLAGS[@]}") >>"$LOG" 2>&1 ||
		die "configure failed (see $LOG)"
}

# transport-afbus/ into the tree, keeping the timestamps of files whose
# content did not change: its dbus/ beside libdbus' sources, its bus/,
# policy/bus-* and nfdbus/libnfdbus.[ch] beside dbus-daemon's; the
# AF_BUS and nfdbus UAPI headers in an include directory of their own.
sync_new_sources() {
	mkdir -p "$DBUS_OBJ/afbus-include/linux"
	rsync -c "$DBUS_NEW"/dbus/*.[ch] "$DBUS_SRC/dbus/"
	rsync -c "$DBUS_NEW"/bus/*.[ch] "$DBUS_SRC/bus/"
	# policy/: the bus policy of AF_BUS clients in the kernel
	rsync -c "$AFBUS_TOP"/policy/bus-*.[ch] "$DBUS_SRC/bus/"
	[ -f "$KERNEL_HDR/include/linux/bus.h" ] ||
		die "$KERNEL_HDR/include/linux/bus.h is missing; build the kernel first"
	rsync -c "$KERNEL_HDR/include/linux/bus.h" "$DBUS_OBJ/afbus-include/linux/bus.h"
	# libnfdbus (match rules in the kernel) goes into dbus-daemon.
	rsync -c "$AFBUS_TOP"/nfdbus/libnfdbus.[ch] "$DBUS_SRC/bus/"
	mkdir -p "$DBUS_OBJ/afbus-include/linux/netfilter"
	rsync -c "$KERNEL_HDR/include/linux/netfilter/nfdbus.h" \
		"$DBUS_OBJ/afbus-include/linux/netfilter/nfdbus.h"
}

main() {
	local dsc key
	mkdir -p "$AFBUS_BUILD"
	# --fetch-source: only step 1, and print the .dsc (build-aux/dbus-tree.sh)
	if [ "${1:-}" = --fetch-source ]; then
		fetch_source
		return 0
	fi
	: >"$LOG"
	dsc=$(fetch_source)
	key=$(build_key "$dsc")
	if [ ! -f "$DBUS_OBJ/Makefile" ] || [ "$(cat "$KEY_FILE" 2>/dev/null)" != "$key" ]; then
		prepare_tree "$dsc"
		echo "$key" >"$KEY_FILE"
	else
		sync_new_sources
	fi
	msg "building D-Bus in $DBUS_OBJ (log: $LOG)"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$DBUS_OBJ" -j"$(nproc)" >>"$LOG" 2>&1 || {
		grep -E 'error|Error' "$LOG" | head -n 30 >&2
		die "D-Bus build failed (see $LOG)"
	}
	rm -rf "$DBUS_STAGE.tmp"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$DBUS_OBJ" install DESTDIR="$DBUS_STAGE.tmp" >>"$LOG" 2>&1 ||
		die "D-Bus install failed (see $LOG)"
	rm -rf "$DBUS_STAGE"
	mv "$DBUS_STAGE.tmp" "$DBUS_STAGE"
	msg "D-Bus installed in $DBUS_STAGE"
}

main "$@"
