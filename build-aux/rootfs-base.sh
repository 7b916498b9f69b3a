#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian base of the guest's root file system (run-qemu.sh --rootfs
# and the real-client tests, tests/rootfs/): debootstrap --variant=minbase
# of Debian 12 (bookworm) with
#   libglib2.0-bin  gdbus: GDBus, GLib's own D-Bus implementation, which
#                   speaks unix: only (a legacy client)
#   python3-dbus    dbus-python, on libdbus: on the fork's, it speaks
#                   afbus: too
#   python3-gi      GLib's main loop for dbus-python services and listeners
#   libexpat1, libmnl0  what the fork's dbus-daemon links besides libc
#                   (libmnl: libnfdbus)
#   systemd         busctl: sd-bus, unix: only.  Only the package: the
#                   guest's init stays ours (tests/guest/init) and busctl
#                   needs no systemd running when given an address or
#                   when DBUS_SYSTEM_BUS_ADDRESS is set
# and Debian's libdbus-1-3 (which python3-dbus depends on) diverted with
# dpkg-divert, so that rootfs-image.sh can put the fork's libdbus in its
# place without dpkg ever putting Debian's back; then the messagebus
# system user (for the system bus), and no documentation, man pages,
# locales, apt lists or package caches.
#
# The tree is build/rootfs/base, redone only when its inputs change: the
# suite, variant and package list, the mirror and this script's content
# (build/rootfs/base.key).  The .debs are kept in build/rootfs/debs
# (debootstrap --cache-dir), so a rebuild downloads nothing new.
# debootstrap and chroot need root.  Prints the tree's directory.
#
# Environment: AFBUS_ROOTFS_MIRROR (default http://deb.debian.org/debian).
set -eu
. "$(dirname "$0")/common.sh"

SUITE=bookworm
VARIANT=minbase
PACKAGES=libglib2.0-bin,python3-dbus,python3-gi,systemd,libexpat1,libmnl0
MIRROR=${AFBUS_ROOTFS_MIRROR:-http://deb.debian.org/debian}
DIR=$AFBUS_BUILD/rootfs
BASE=$DIR/base
DEBS=$DIR/debs
LOG=$DIR/base.log

key() {
	{
		echo "suite=$SUITE variant=$VARIANT packages=$PACKAGES"
		echo "mirror=$MIRROR"
		sha256sum <"$0"
	} | sha256sum | cut -d' ' -f1
}

# The tree after debootstrap: what the image needs, less what it does not.
configure_tree() {
	local root=$1 lib
	# Debian's libdbus moves aside for the fork's (rootfs-image.sh).
	# (Called in an || list, where set -e does not apply: hence the returns.)
	# Out of the library directory, where ldconfig would take the
	# diverted file for a newer version and link libdbus-1.so.3 to it.
	lib=$(cd "$root/usr/lib/x86_64-linux-gnu" && ls libdbus-1.so.3.*[0-9]) || return
	mkdir -p "$root/usr/lib/x86_64-linux-gnu/diverted-by-afbus" || return
	chroot "$root" dpkg-divert --quiet --local --rename \
		--divert "/usr/lib/x86_64-linux-gnu/diverted-by-afbus/$lib" \
		--add "/usr/lib/x86_64-linux-gnu/$lib" || return
	# The system bus daemon's user, as Debian's dbus package makes it.
	chroot "$root" useradd --system --user-group --home-dir /nonexistent \
		--no-create-home --shell /usr/sbin/nologin messagebus || return
	# An unprivileged user for the tests.
	chroot "$root" useradd --user-group --create-home --shell /bin/bash afbus || return
	rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* \
		"$root"/usr/share/info/* "$root"/usr/share/locale/* \
		"$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
		"$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
}

main() {
	local want start
	[ -x "$(command -v debootstrap)" ] || die "debootstrap is missing (build-aux/packages.txt)"
	want=$(key)
	if [ -d "$BASE" ] && [ "$(cat "$DIR/base.key" 2>/dev/null)" = "$want" ]; then
		echo "$BASE"
		return 0
	fi
	[ "$(id -u)" = 0 ] ||
		die "debootstrap needs root: run as root, or AFBUS_ROOTFS=0 to do without the Debian root file system"
	mkdir -p "$DIR" "$DEBS"
	rm -rf "$BASE" "$BASE.tmp" "$DIR/base.key"
	msg "debootstrap $VARIANT $SUITE with $PACKAGES from $MIRROR (log: $LOG)"
	start=$SECONDS
	debootstrap --variant="$VARIANT" --include="$PACKAGES" \
		--cache-dir="$DEBS" "$SUITE" "$BASE.tmp" "$MIRROR" >"$LOG" 2>&1 || {
		tail -n 20 "$LOG" >&2
		die "debootstrap failed (see $LOG)"
	}
	configure_tree "$BASE.tmp" >>"$LOG" 2>&1 || die "configuring the tree failed (see $LOG)"
	mv "$BASE.tmp" "$BASE"
	echo "$want" >"$DIR/base.key"
	msg "Debian base in $BASE ($(du -sm "$BASE" | cut -f1) MiB, $((SECONDS - start)) s)"
	echo "$BASE"
}

main "$@"
