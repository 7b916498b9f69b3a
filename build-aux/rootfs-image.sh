#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest's Debian root file system, build/rootfs.img: an ext4 image
# (run-qemu.sh attaches it as a virtio disk) of the Debian base of
# build-aux/rootfs-base.sh with, on top:
#   the D-Bus fork from build/dbus-stage: its programs, its libdbus in
#   place of Debian's (diverted by rootfs-base.sh), its configuration;
#   not its headers, pkg-config and libtool files
#   /etc/dbus-1/system.d/afbus.conf   policy/system-afbus.conf: the system
#                                     bus listens on AF_BUS too
#   /etc/machine-id
#   /usr/bin/NAME                     the D-Bus test programs, build/tests/dbus/*
#   /usr/bin/nfdbus-ctl
#   /usr/share/man/man8/nfdbus-ctl.8  nfdbus/nfdbus-ctl.8, its manual page
#   /tests/rootfs/*.sh                tests/rootfs/*.sh (the guest's run-tests
#                                     runs them inside this tree)
#   /usr/libexec/afbus/*              tests/dbus/lib/dbus-test-lib.sh and
#                                     tests/rootfs/lib/*
# The image is made with mke2fs -d (no mounting, no loop device) in a
# copy of the base (build/rootfs/tree, synced with rsync), and only when
# the hash of the base's key, of this script and of every file put on
# top changes (build/rootfs.img.key).  The guest gets it with
# snapshot=on: what the tests write never reaches the file.
set -eu
. "$(dirname "$0")/common.sh"

DIR=$AFBUS_BUILD/rootfs
OVERLAY=$DIR/overlay
TREE=$DIR/tree
IMG=$AFBUS_BUILD/rootfs.img
DBUS_STAGE=$AFBUS_BUILD/dbus-stage
GLIB_STAGE=$AFBUS_BUILD/glib-stage
LIBDIR=usr/lib/x86_64-linux-gnu

# put DEST SOURCE [MODE]: one file of the overlay.
put() {
	[ -e "$2" ] || die "missing $2"
	mkdir -p "$OVERLAY$(dirname "$1")"
	cp -P "$2" "$OVERLAY$1"
	[ -L "$OVERLAY$1" ] || chmod "${3:-0755}" "$OVERLAY$1"
}

make_overlay() {
	local f
	rm -rf "$OVERLAY"
	mkdir -p "$OVERLAY"
	[ -x "$DBUS_STAGE/usr/bin/dbus-daemon" ] ||
		die "no D-Bus fork in $DBUS_STAGE (build-aux/dbus-build.sh)"
	for f in "$DBUS_STAGE"/usr/bin/* "$DBUS_STAGE"/usr/libexec/*; do
		put "${f#"$DBUS_STAGE"}" "$f"
	done
	for f in "$DBUS_STAGE/$LIBDIR"/libdbus-1.so.3*; do
		put "/$LIBDIR/${f##*/}" "$f"
	done
	for f in $(cd "$DBUS_STAGE" && find etc usr/share/dbus-1 -type f); do
		put "/$f" "$DBUS_STAGE/$f" 0644
	done
	mkdir -p "$OVERLAY/var/lib/dbus" "$OVERLAY/etc/dbus-1/system.d" \
		"$OVERLAY/usr/share/dbus-1/services" "$OVERLAY/usr/share/dbus-1/system-services"
	put /etc/dbus-1/system.d/afbus.conf "$AFBUS_TOP/policy/system-afbus.conf" 0644
	echo 0123456789abcdef0123456789abcdef >"$DIR/machine-id"
	put /etc/machine-id "$DIR/machine-id" 0444
	for f in "$AFBUS_BUILD"/tests/dbus/* "$AFBUS_BUILD/nfdbus/nfdbus-ctl"; do
		[ -f "$f" ] && [ -x "$f" ] && put "/usr/bin/${f##*/}" "$f"
	done
	put /usr/share/man/man8/nfdbus-ctl.8 "$AFBUS_TOP/nfdbus/nfdbus-ctl.8" 0644
	put /usr/libexec/afbus/dbus-test-lib.sh "$AFBUS_TOP/tests/dbus/lib/dbus-test-lib.sh" 0644
	# GDBus with the afbus: transport (build-aux/glib-build.sh), beside
	# Debian's: libgio, gdbus and GLib's GDBus tests in /usr/libexec/afbus/glib
	"$AFBUS_TOP/build-aux/glib-build.sh" >&2
	for f in "$GLIB_STAGE/$LIBDIR"/libgio-2.0.so.0* "$GLIB_STAGE/usr/bin/gdbus"; do
		put "/usr/libexec/afbus/glib/${f##*/}" "$f"
	done
	# (the tests' RUNPATH, $ORIGIN/.., finds that libgio)
	for f in $(cd "$GLIB_STAGE/usr/libexec/afbus/glib-tests" && find . -type f); do
		put "/usr/libexec/afbus/glib/tests/${f#./}" "$GLIB_STAGE/usr/libexec/afbus/glib-tests/$f"
	done
	for f in "$AFBUS_TOP"/tests/rootfs/lib/*; do
		[ -f "$f" ] && put "/usr/libexec/afbus/${f##*/}" "$f"
	done
	for f in "$AFBUS_TOP"/tests/rootfs/*.sh; do
		[ -f "$f" ] && put "/tests/rootfs/${f##*/}" "$f"
	done
	return 0
}

# Hash of the base, this script and the overlay (names, modes, contents).
key() {
	{
		cat "$DIR/base.key"
		sha256sum <"$0"
		(cd "$OVERLAY" && find . -printf '%p %m %l\n' | sort &&
			find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
	} | sha256sum | cut -d' ' -f1
}

main() {
	local want size inodes missing
	"$AFBUS_TOP/build-aux/rootfs-base.sh" >/dev/null
	make_overlay
	want=$(key)
	if [ -f "$IMG" ] && [ "$(cat "$IMG.key" 2>/dev/null)" = "$want" ]; then
		msg "root file system image is up to date ($IMG)"
		return 0
	fi
	mkdir -p "$TREE"
	rsync -a --delete "$DIR/base/" "$TREE/"
	cp -a "$OVERLAY/." "$TREE/"
	ldconfig -r "$TREE"
	cmp -s "$TREE/$LIBDIR/libdbus-1.so.3" "$DBUS_STAGE/$LIBDIR/libdbus-1.so.3" ||
		die "libdbus-1.so.3 in $TREE is not the fork's"
	[ "$(chroot "$TREE" dpkg-query -W -f '${Version}' libglib2.0-0)" = "$(cat "$GLIB_STAGE/version")" ] ||
		die "the base's libglib2.0-0 is not $(cat "$GLIB_STAGE/version"), the version of $GLIB_STAGE"
	# every program put on top finds its libraries in the tree
	missing=$(cd "$OVERLAY" && find usr/bin usr/libexec -type f -perm -u+x |
		while read -r f; do
			[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
			chroot "$TREE" ldd "/$f" | sed -n "s|^\t\(.*\) => not found|/$f: \1|p"
		done)
	[ -z "$missing" ] || die "libraries missing from the Debian base: $missing"
	# The tree plus a third and 64 MiB, and twice its inodes, for what
	# the tests write.
	size=$(du -sm "$TREE" | cut -f1)
	size=$((size + size / 3 + 64))
	inodes=$(find "$TREE" | wc -l)
	rm -f "$IMG.tmp"
	mke2fs -q -t ext4 -O ^has_journal -L afbus-root -N $((inodes * 2 + 4096)) \
		-d "$TREE" -F "$IMG.tmp" "${size}M" >/dev/null || die "mke2fs failed"
	mv "$IMG.tmp" "$IMG"
	echo "$want" >"$IMG.key"
	msg "wrote $IMG (${size} MiB)"
}

main "$@"
