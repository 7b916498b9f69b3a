#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian packages of the D-Bus fork (`make debs`; packaging/README):
#   1. Debian's dbus 1.14.10 source package, as build-aux/dbus-build.sh
#      fetches it (build/dbus-debian), unpacked with dpkg-source;
#   2. the fork added with quilt under debian/patches/afbus/: the dbus/
#      series, then one patch per group of new files, giving the tree
#      dbus-build.sh assembles by hand (transport-afbus/dbus/ in dbus/,
#      transport-afbus/bus/, policy/bus-* and nfdbus/libnfdbus.[ch] in
#      bus/; the kernel's linux/bus.h and linux/netfilter/nfdbus.h in
#      afbus-include/);
#   3. debian/: packaging/debian-dir.patch (libmnl-dev, the system bus
#      address, -Iafbus-include) and a changelog entry (dch) for version
#      1.14.10-1~deb12u1+afbus1;
#   4. dpkg-source -b: the source package; a fresh dpkg-source -x of it
#      built with `dpkg-buildpackage -b -uc -us` (Debian's rules and flags;
#      DEB_BUILD_OPTIONS=nocheck unless AFBUS_DEBS_CHECK=1: upstream's
#      tests run in build-aux/dbus-check.sh), and with the build profiles
#      in DEB_BUILD_PROFILES, if set (run-qemu.sh's system guest sets
#      "noudeb nodoc noinsttest" unless build/debs is already up to date:
#      the packages it installs, without their documentation, in half
#      the time).
# Outputs: build/debs/ (the .debs, .udebs, the source package, .changes,
# .buildinfo), redone only when an input changes (build/debs/.key, the
# checksum of the list of inputs build/debs/.key-inputs).  --status only
# says whether build/debs is up to date (exit 0) and what changed.
# Log: build/debs.log.
set -eu
. "$(dirname "$0")/common.sh"

DBUS_UPSTREAM_VERSION=1.14.10
AFBUS_SUFFIX=+afbus1
DBUS_DEBIAN=$AFBUS_BUILD/dbus-debian
DBUS_PATCHES=$AFBUS_TOP/dbus
DBUS_SERIES=$DBUS_PATCHES/series
PACKAGING=$AFBUS_TOP/packaging
DEBS=$AFBUS_BUILD/debs
WORK=$AFBUS_BUILD/debs-work
KEY_FILE=$DEBS/.key
LOG=$AFBUS_BUILD/debs.log
# Who signs the changelog entry: DEBFULLNAME/DEBEMAIL as for dch, else
# git's user.name/user.email, else a placeholder (lintian calls its
# localhost address bogus-mail-host, an error).
DEBFULLNAME=${DEBFULLNAME:-$(git -C "$AFBUS_TOP" config user.name 2>/dev/null || echo AF_BUS)}
DEBEMAIL=${DEBEMAIL:-$(git -C "$AFBUS_TOP" config user.email 2>/dev/null || echo afbus@localhost)}
export DEBFULLNAME DEBEMAIL
DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-$([ "${AFBUS_DEBS_CHECK:-0}" = 1 ] || echo nocheck)}
export DEB_BUILD_OPTIONS

# What the patches take from the project, "source destination" (in the tree),
# by patch (packaging/patch-headers/NAME gives each its DEP-3 header).
new_files() {
	local f
	case $1 in
	libdbus-afbus-sources)
		for f in "$AFBUS_TOP"/transport-afbus/dbus/*.[ch]; do echo "$f dbus/${f##*/}"; done ;;
	dbus-daemon-afbus-sources)
		for f in "$AFBUS_TOP"/transport-afbus/bus/*.[ch]; do echo "$f bus/${f##*/}"; done ;;
	policy-sources)
		for f in "$AFBUS_TOP"/policy/bus-*.[ch]; do echo "$f bus/${f##*/}"; done ;;
	libnfdbus)
		echo "$AFBUS_TOP/nfdbus/libnfdbus.c bus/libnfdbus.c"
		echo "$AFBUS_TOP/nfdbus/libnfdbus.h bus/libnfdbus.h" ;;
	kernel-uapi-headers)
		echo "$KERNEL_HDR/include/linux/bus.h afbus-include/linux/bus.h"
		echo "$KERNEL_HDR/include/linux/netfilter/nfdbus.h afbus-include/linux/netfilter/nfdbus.h" ;;
	esac
}
NEW_PATCHES="libdbus-afbus-sources dbus-daemon-afbus-sources policy-sources libnfdbus kernel-uapi-headers"

dbus_series_patches() {
	[ -f "$DBUS_SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
		"$DBUS_SERIES" | grep -v '^$' || true
}

# Tools: quilt, dch (devscripts), lintian (for the check after the build).
ensure_tools() {
	local missing= p
	for p in quilt devscripts dpkg-dev lintian fakeroot; do
		[ "$(dpkg-query -W -f='${db:Status-Status}' $p 2>/dev/null)" = installed ] ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing:$missing; as root: apt-get install$missing"
	msg "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >>"$LOG" 2>&1 ||
		die "apt-get install$missing failed (see $LOG)"
}

# The .dsc build-aux/dbus-build.sh downloads (it adds a deb-src entry
# when there is none); downloaded here too if that never ran.
fetch_source() {
	local dsc
	dsc=$(ls "$DBUS_DEBIAN"/dbus_"$DBUS_UPSTREAM_VERSION"-*.dsc 2>/dev/null | tail -n 1 || true)
	if [ -z "$dsc" ]; then
		apt-cache showsrc dbus 2>/dev/null | grep -q "^Version: $DBUS_UPSTREAM_VERSION-" ||
			die "no deb-src entry for dbus $DBUS_UPSTREAM_VERSION: run build-aux/dbus-build.sh (make dbus) once, which adds it"
		mkdir -p "$DBUS_DEBIAN"
		(cd "$DBUS_DEBIAN" && apt-get source --download-only "dbus=$(apt-cache showsrc dbus |
			sed -n "s/^Version: \($DBUS_UPSTREAM_VERSION-.*\)/\1/p" | sort -V | tail -n 1)" >&2)
		dsc=$(ls "$DBUS_DEBIAN"/dbus_"$DBUS_UPSTREAM_VERSION"-*.dsc | tail -n 1)
	fi
	echo "$dsc"
}

# The inputs, one "checksum  name" line each (build/debs/.key-inputs);
# the key is the checksum of the list.
key_inputs() {
	local p src dst
	sha256sum "$1" | sed "s|  .*|  $(basename "$1")|"
	for p in $(dbus_series_patches); do
		[ -f "$DBUS_PATCHES/$p" ] || die "dbus/series names $p, which does not exist"
		(cd "$AFBUS_TOP" && sha256sum "dbus/$p")
	done
	for p in $NEW_PATCHES; do
		new_files "$p" | while read -r src dst; do
			echo "$(sha256sum <"$src" | cut -d' ' -f1)  $dst"
		done
	done
	(cd "$AFBUS_TOP" && sha256sum packaging/debian-dir.patch packaging/changelog-entry \
		policy/system-afbus.conf policy/session-afbus.conf \
		$(for p in $NEW_PATCHES; do echo "packaging/patch-headers/$p"; done))
	echo "$(sha256sum <"$0" | cut -d' ' -f1)  build-aux/debs.sh"
	echo "$(echo "$DEB_BUILD_OPTIONS $DEBFULLNAME <$DEBEMAIL> ${DEB_BUILD_PROFILES:-}" | sha256sum | cut -d' ' -f1)  DEB_BUILD_OPTIONS, DEBFULLNAME, DEBEMAIL, DEB_BUILD_PROFILES"
	echo "$({ gcc --version | head -1; dpkg-query -W -f='${Version}\n' dpkg-dev debhelper; } |
		sha256sum | cut -d' ' -f1)  gcc, dpkg-dev, debhelper"
}

# quilt in the unpacked tree $1, with the settings Debian recommends.
q() {
	(cd "$TREE" && QUILT_PATCHES=debian/patches QUILT_PC=.pc \
		QUILT_REFRESH_ARGS="-p ab --no-timestamps --no-index" \
		QUILT_NO_DIFF_TIMESTAMPS=1 QUILT_NO_DIFF_INDEX=1 quilt --quiltrc - "$@")
}

# build/debs-work/src: Debian's tree plus our patches and debian/ changes;
# then the source package beside it.
make_source_package() {
	local dsc=$1 p src dst version
	TREE=$WORK/src/dbus-$DBUS_UPSTREAM_VERSION
	rm -rf "$WORK"
	mkdir -p "$WORK/src"
	msg "unpacking $(basename "$dsc")"
	dpkg-source --no-check -x "$dsc" "$TREE" >>"$LOG" 2>&1
	# the dbus/ series, as the project keeps it (git format-patch files)
	for p in $(dbus_series_patches); do
		q import -P "afbus/$p" "$DBUS_PATCHES/$p" >>"$LOG" 2>&1 ||
			die "quilt import dbus/$p failed"
		q push --fuzz=0 >>"$LOG" 2>&1 ||
			die "dbus/$p does not apply to Debian's dbus without fuzz (see $LOG)"
	done
	# the new files, one patch per group
	for p in $NEW_PATCHES; do
		q new "afbus/$p.patch" >>"$LOG" 2>&1
		new_files "$p" | while read -r src dst; do
			q add "$dst" >>"$LOG" 2>&1
			mkdir -p "$(dirname "$TREE/$dst")"
			cp "$src" "$TREE/$dst"
		done
		q refresh >>"$LOG" 2>&1 || die "quilt refresh afbus/$p.patch failed"
		q header -r <"$PACKAGING/patch-headers/$p" >>"$LOG" 2>&1
	done
	# debian/: build dependency, configure flags, changelog
	patch -d "$TREE" -p1 --no-backup-if-mismatch <"$PACKAGING/debian-dir.patch" >>"$LOG" 2>&1 ||
		die "packaging/debian-dir.patch does not apply (see $LOG)"
	# the buses' AF_BUS addresses (dbus-system-bus-common.install,
	# dbus-session-bus-common.install)
	mkdir -p "$TREE/debian/afbus/system.d" "$TREE/debian/afbus/session.d"
	cp "$AFBUS_TOP/policy/system-afbus.conf" "$TREE/debian/afbus/system.d/afbus.conf"
	cp "$AFBUS_TOP/policy/session-afbus.conf" "$TREE/debian/afbus/session.d/afbus.conf"
	version=$(cd "$TREE" && dpkg-parsechangelog -S Version)$AFBUS_SUFFIX
	local first=1 line
	while IFS= read -r line; do
		case $line in '#'* | '') continue ;; esac
		if [ $first = 1 ]; then
			(cd "$TREE" && \
				dch --newversion "$version" --distribution bookworm --force-distribution \
				-- "$line") >>"$LOG" 2>&1 || die "dch failed (see $LOG)"
			first=0
		else
			(cd "$TREE" && \
				dch --append -- "$line") >>"$LOG" 2>&1 || die "dch failed (see $LOG)"
		fi
	done <"$PACKAGING/changelog-entry"
	# the source package: dpkg-source refuses changes outside debian/
	# that no patch records, so this also checks the quilt series
	q pop -a >>"$LOG" 2>&1
	cp "$(dirname "$dsc")"/dbus_"$DBUS_UPSTREAM_VERSION".orig.tar.* "$WORK/src/"
	(cd "$WORK/src" && dpkg-source -b "dbus-$DBUS_UPSTREAM_VERSION") >>"$LOG" 2>&1 ||
		die "dpkg-source -b failed (see $LOG)"
	echo "$version"
}

# The binary packages, from a fresh unpack of the source package.
build_binaries() {
	local version=$1 dsc tree
	dsc=$WORK/src/dbus_${version#*:}.dsc
	tree=$WORK/bin/dbus-$DBUS_UPSTREAM_VERSION
	mkdir -p "$WORK/bin"
	dpkg-source -x "$dsc" "$tree" >>"$LOG" 2>&1 || die "dpkg-source -x $dsc failed"
	if ! (cd "$tree" && dpkg-checkbuilddeps) >>"$LOG" 2>&1; then
		[ "$(id -u)" = 0 ] ||
			die "missing build dependencies; as root: apt-get build-dep $tree"
		msg "installing the build dependencies"
		DEBIAN_FRONTEND=noninteractive apt-get build-dep -y --no-install-recommends \
			${DEB_BUILD_PROFILES:+-P "$(echo $DEB_BUILD_PROFILES | tr ' ' ,)"} "$tree" >>"$LOG" 2>&1 ||
			die "apt-get build-dep failed (see $LOG)"
	fi
	msg "dpkg-buildpackage -b -uc -us (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS${DEB_BUILD_PROFILES:+ DEB_BUILD_PROFILES=$DEB_BUILD_PROFILES}; log: $LOG)"
	(cd "$tree" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		DEB_BUILD_OPTIONS="$DEB_BUILD_OPTIONS parallel=$(nproc)" \
		nice -n 10 dpkg-buildpackage -b -uc -us) >>"$LOG" 2>&1 || {
		grep -E 'error|Error' "$LOG" | tail -n 30 >&2
		die "dpkg-buildpackage failed (see $LOG)"
	}
}

main() {
	local dsc key version start p src dst
	mkdir -p "$AFBUS_BUILD"
	dsc=$(fetch_source)
	for p in $NEW_PATCHES; do
		new_files "$p" | while read -r src dst; do
			[ -f "$src" ] || die "$src is missing (the kernel headers: make kernel)"
		done || exit 1
	done
	key_inputs "$dsc" >"$AFBUS_BUILD/debs.key-inputs"
	key=$(sha256sum <"$AFBUS_BUILD/debs.key-inputs" | cut -d' ' -f1)
	if [ "$(cat "$KEY_FILE" 2>/dev/null)" = "$key" ]; then
		msg "build/debs is up to date"
		return 0
	fi
	if [ -f "$DEBS/.key-inputs" ]; then
		msg "changed since the last build: $(diff "$DEBS/.key-inputs" "$AFBUS_BUILD/debs.key-inputs" |
			sed -n 's/^> [0-9a-f]*  //p' | paste -sd' ')"
	fi
	[ "${1:-}" = --status ] && return 1
	start=$(date +%s)
	: >"$LOG"
	ensure_tools
	version=$(make_source_package "$dsc")
	build_binaries "$version"
	rm -rf "$DEBS.tmp"
	mkdir -p "$DEBS.tmp"
	# (no .udeb with the noudeb profile)
	find "$WORK/bin" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.udeb' \
		-o -name '*.buildinfo' -o -name '*.changes' \) -exec cp -t "$DEBS.tmp/" {} +
	cp "$WORK"/src/*.dsc "$WORK"/src/*.debian.tar.* "$WORK"/src/*.orig.tar.* "$DEBS.tmp/"
	echo "$key" >"$DEBS.tmp/.key"
	mv "$AFBUS_BUILD/debs.key-inputs" "$DEBS.tmp/.key-inputs"
	rm -rf "$DEBS"
	mv "$DEBS.tmp" "$DEBS"
	msg "dbus $version: $(find "$DEBS" -name '*.deb' -o -name '*.udeb' | wc -l) packages in $DEBS ($(($(date +%s) - start)) s)"
}

main "$@"
