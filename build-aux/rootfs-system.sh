#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian 12 system of `run-qemu.sh --system`: build/system.img, an
# ext4 image of a Debian system installed the way a user would install
# AF_BUS on one:
#   1. debootstrap --variant=minbase bookworm with systemd as init
#      (systemd-sysv, udev, libpam-systemd: logind), Debian's dbus and
#      dbus-user-session (the user bus), polkitd, libmnl0 (which the
#      fork's dbus-daemon needs), Debian's own kernel
#      (linux-image-amd64, its initrd made by initramfs-tools) and
#      apparmor, which the kernel package recommends (Debian's profiles
#      and apparmor.service, which loads them at boot):
#      build/system/base, redone only when its inputs change;
#   2. in a copy of it (build/system/tree): `dpkg -i` of the fork's
#      packages (build/debs: every dbus package Debian's dbus installed,
#      upgraded to 1.14.10-1~deb12u1+afbus1) and of the AF_BUS kernel
#      (build/kernel-debs: linux-image-*-afbus, whose postinst makes its
#      initrd); then what the test guest adds: a fixed machine-id, the
#      hostname, root logged in on the serial console, the unprivileged
#      user afbus, the tests of tests/system/ and the unit that runs them
#      when the kernel command line has afbus.check=1
#      (afbus-system-tests.service), D-Bus test programs and the
#      system bus policy that lets them own com.example.Echo, sd-bus with
#      the afbus: transport (build-aux/systemd-install.sh: the patched
#      libsystemd and libsystemd-shared in place of Debian's, built for
#      the base's systemd by build-aux/systemd-build.sh), and
#      Debian's own dbus packages (from debootstrap's cache) in
#      /var/cache/afbus/debian for the way back; and for the whole-system
#      measure (run-qemu.sh --system --bench, tests/bench/system/), which
#      switches the system bus per boot (afbus.sysbus=): Debian's
#      dbus-broker package (build-aux/bench-debs.sh), installed and then
#      disabled (its postinst enables it), Debian's dbus-daemon and
#      libdbus unpacked under /opt/debian, the generator that switches
#      and the unit that measures;
#   3. mke2fs -d of the tree, without mounting anything.
# Both kernels and their initrds are copied out of the tree into
# build/system/boot/ for QEMU's -kernel and -initrd: what a boot loader
# would load.  The image is redone only when the hash of the base, the
# packages, the test files and this script changes (build/system.img.key).
# debootstrap, chroot and dpkg need root.  Log: build/system/system.log.
#
# Environment: AFBUS_ROOTFS_MIRROR (default http://deb.debian.org/debian).
set -eu
. "$(dirname "$0")/common.sh"

SUITE=bookworm
PACKAGES=systemd-sysv,udev,libpam-systemd,dbus,dbus-user-session,polkitd,libmnl0,procps,linux-image-amd64,initramfs-tools,apparmor
# GLib services beside polkitd, for tests/system/system-gdbus.sh (GDBus on
# AF_BUS): accountsservice, which needs no hardware; by bus activation
# (make_tree)
GLIB_SERVICES=accountsservice
MIRROR=${AFBUS_ROOTFS_MIRROR:-http://deb.debian.org/debian}
DIR=$AFBUS_BUILD/system
BASE=$DIR/base
TREE=$DIR/tree
BOOT=$DIR/boot
IMG=$AFBUS_BUILD/system.img
LOG=$DIR/system.log
# debootstrap's .deb cache, shared with build-aux/rootfs-base.sh
CACHE=$AFBUS_BUILD/rootfs/debs
DEBS=$AFBUS_BUILD/debs
KDEBS=$AFBUS_BUILD/kernel-debs
TESTS=$AFBUS_TOP/tests/system
# GDBus with the afbus: transport (build-aux/glib-build.sh)
GLIB_STAGE=$AFBUS_BUILD/glib-stage
GIO=usr/lib/x86_64-linux-gnu/libgio-2.0.so.0.7400.6
# the whole-system measure's guest side
BENCH=$AFBUS_TOP/tests/bench/system

base_key() {
	{
		echo "suite=$SUITE packages=$PACKAGES,$GLIB_SERVICES mirror=$MIRROR"
		sed -n '/^make_base()/,/^}/p' "$0"
	} | sha256sum | cut -d' ' -f1
}

make_base() {
	[ "$(id -u)" = 0 ] || die "debootstrap needs root"
	[ -x "$(command -v debootstrap)" ] || die "debootstrap is missing (build-aux/packages.txt)"
	rm -rf "$BASE" "$BASE.tmp" "$DIR/base.key"
	mkdir -p "$DIR" "$CACHE"
	msg "debootstrap minbase $SUITE with $PACKAGES,$GLIB_SERVICES (log: $LOG)"
	debootstrap --variant=minbase --include="$PACKAGES,$GLIB_SERVICES" --cache-dir="$CACHE" \
		"$SUITE" "$BASE.tmp" "$MIRROR" >"$LOG" 2>&1 || {
		tail -n 20 "$LOG" >&2
		die "debootstrap failed (see $LOG)"
	}
	rm -rf "$BASE.tmp"/var/lib/apt/lists/* "$BASE.tmp"/var/cache/apt/*.bin \
		"$BASE.tmp"/var/cache/apt/archives/*.deb
	mv "$BASE.tmp" "$BASE"
	base_key >"$DIR/base.key"
}

# The fork's packages that replace installed ones, and the kernel's image.
packages() {
	local p f
	for p in $(chroot "$BASE" dpkg-query -W -f '${Package}\n' | grep dbus); do
		for f in "$DEBS/${p}"_*_amd64.deb "$DEBS/${p}"_*_all.deb ""; do
			[ -f "$f" ] && break
		done
		[ -n "$f" ] || die "$DEBS has no package $p, which Debian's dbus installed"
		echo "$f"
	done
	ls "$KDEBS"/linux-image-*-afbus_*.deb
}

# put SOURCE DEST [MODE]: a file of the test guest's own.
put() {
	mkdir -p "$TREE$(dirname "$2")"
	cp "$1" "$TREE$2"
	chmod "${3:-0644}" "$TREE$2"
}

image_key() {
	{
		cat "$DIR/base.key"
		sha256sum <"$0"
		echo "$PKGS" | xargs sha256sum | sed 's|  .*/|  |'
		(cd "$AFBUS_TOP" && find tests/system -type f | sort | xargs sha256sum)
		sha256sum "$AFBUS_TOP/tests/dbus/lib/dbus-test-lib.sh" \
			"$AFBUS_BUILD"/tests/dbus/afbus-echo-service \
			"$AFBUS_BUILD"/tests/dbus/afbus-echo-client \
			"$AFBUS_BUILD"/tests/dbus/afbus-flood-client \
			"$AFBUS_BUILD"/tests/dbus/afbus-reply \
			"$AFBUS_BUILD"/tests/dbus/afbus-slow-caller \
			"$AFBUS_BUILD"/tests/dbus/afbus-signal | sed 's|  .*/|  |'
		# sd-bus with afbus: (systemd/) and the sd-bus test programs
		(cd "$AFBUS_BUILD" && find systemd-stage -type f | sort | xargs sha256sum)
		# shellcheck disable=SC2086  # one file name per word
		sha256sum "$AFBUS_TOP/build-aux/systemd-install.sh" $SDBUS_TOOLS | sed 's|  .*/|  |'
		# GDBus with afbus: (glib/)
		(cd "$GLIB_STAGE" && find . -type f | sort | xargs sha256sum)
		# the whole-system measure
		(cd "$AFBUS_TOP" && find tests/bench/system -type f | sort | xargs sha256sum)
		sha256sum "$BROKER_DEB" | sed 's|  .*/|  |'
	} | sha256sum | cut -d' ' -f1
}

make_tree() {
	local f version kind
	rsync -a --delete "$BASE/" "$TREE/"
	# the fork's dbus and the AF_BUS kernel, as a user installs them
	mkdir -p "$TREE/tmp/debs"
	# shellcheck disable=SC2086  # one file name per word
	cp $PKGS "$TREE/tmp/debs/"
	chroot "$TREE" sh -c 'dpkg -i /tmp/debs/*.deb' >>"$LOG" 2>&1 || {
		tail -n 20 "$LOG" >&2
		die "dpkg -i of the fork's packages failed (see $LOG)"
	}
	rm -rf "$TREE/tmp/debs"
	# Debian's own packages of the same names, for the way back
	# (tests/system/uninstall.sh): debootstrap's, of the base's versions
	mkdir -p "$TREE/var/cache/afbus/debian"
	chroot "$BASE" dpkg-query -W -f '${Package} ${Version}\n' | grep dbus |
		while read -r f version; do
			cp "$CACHE/${f}_${version}"_*.deb "$TREE/var/cache/afbus/debian/" ||
				die "no $f $version in $CACHE"
		done
	version=$(chroot "$TREE" dpkg-query -W -f '${Version}' dbus)
	case $version in *+afbus*) ;; *) die "dbus in $TREE is $version, not the fork's" ;; esac

	echo 0123456789abcdef0123456789abcdef >"$TREE/etc/machine-id"
	echo afbus-system >"$TREE/etc/hostname"
	# net.bus.msg_max, the largest message a bus master without
	# CAP_NET_ADMIN may allow, is twice net.core.rmem_max by default: a
	# desktop's administrator raises it to D-Bus's largest message for
	# the session buses, whose daemons run as their user ('-': Debian's
	# own kernel has no such sysctl)
	mkdir -p "$TREE/etc/sysctl.d"
	echo '-net.bus.msg_max = 134217728' >"$TREE/etc/sysctl.d/50-afbus.conf"
	chroot "$TREE" useradd --user-group --create-home --shell /bin/bash afbus
	mkdir -p "$TREE/etc/systemd/system/serial-getty@ttyS0.service.d"
	cat >"$TREE/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<-'EOF'
	[Service]
	ExecStart=
	ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 - $TERM
	EOF
	for f in "$TESTS"/*.sh "$TESTS/run-tests"; do
		put "$f" "/usr/libexec/afbus/system/${f##*/}" 0755
	done
	put "$TESTS/afbus-system-tests.service" /etc/systemd/system/afbus-system-tests.service
	mkdir -p "$TREE/etc/systemd/system/multi-user.target.wants"
	ln -sf /etc/systemd/system/afbus-system-tests.service \
		"$TREE/etc/systemd/system/multi-user.target.wants/"
	# accounts-daemon by bus activation only, as polkitd (system-gdbus.sh):
	# graphical.target would start it at boot, and its polkit client could
	# start polkitd with it, where services.sh wants polkitd activatable
	rm -f "$TREE/etc/systemd/system/graphical.target.wants/accounts-daemon.service"
	put "$TESTS/com.example.Echo.conf" /etc/dbus-1/system.d/com.example.Echo.conf
	# AppArmor's D-Bus matrix (apparmor-matrix.sh): its services' names
	# and its profiles, which it loads itself
	put "$TESTS/apparmor-matrix.conf" /etc/dbus-1/system.d/afbus-apparmor-matrix.conf
	put "$TESTS/apparmor-matrix.profiles" /usr/libexec/afbus/system/apparmor-matrix.profiles
	put "$AFBUS_TOP/tests/dbus/lib/dbus-test-lib.sh" /usr/libexec/afbus/dbus-test-lib.sh
	for f in afbus-echo-service afbus-echo-client afbus-flood-client afbus-reply afbus-slow-caller afbus-signal; do
		put "$AFBUS_BUILD/tests/dbus/$f" "/usr/local/bin/$f" 0755
	done
	# sd-bus with the afbus: transport in place of Debian's libraries, as
	# a user installs it (systemd/README), its tests and test programs
	"$AFBUS_TOP/build-aux/systemd-install.sh" --tests "$TREE" >>"$LOG" 2>&1 ||
		die "installing sd-bus with afbus: failed (see $LOG)"
	for f in $SDBUS_TOOLS; do
		put "$f" "/usr/local/bin/${f##*/}" 0755
	done
	install_gdbus
	install_bench

	# what a boot loader would load: both kernels and their initrds
	rm -rf "$BOOT"
	mkdir -p "$BOOT"
	for f in "$TREE"/boot/vmlinuz-*; do
		version=${f##*/vmlinuz-}
		[ -f "$TREE/boot/initrd.img-$version" ] ||
			die "no initrd for $version in $TREE/boot (see $LOG)"
		case $version in *-afbus) kind=afbus ;; *) kind=stock ;; esac
		cp "$f" "$BOOT/vmlinuz-$kind"
		cp "$TREE/boot/initrd.img-$version" "$BOOT/initrd.img-$kind"
		echo "$version" >"$BOOT/version-$kind"
	done
	[ -f "$BOOT/vmlinuz-afbus" ] && [ -f "$BOOT/vmlinuz-stock" ] ||
		die "$TREE/boot lacks the AF_BUS or Debian's kernel: $(ls "$TREE/boot")"
}

# GDBus on AF_BUS (glib/): the patched libgio in place of Debian's, moved
# aside with dpkg-divert as a local administrator would, so that every
# GLib program (polkitd) uses it; its gdbus tool in /usr/local/bin; GLib's
# GDBus test server (tests/system/system-gdbus.sh).
install_gdbus() {
	[ "$(chroot "$TREE" dpkg-query -W -f '${Version}' libglib2.0-0)" = "$(cat "$GLIB_STAGE/version")" ] ||
		die "the system's libglib2.0-0 is not $(cat "$GLIB_STAGE/version"), the version of $GLIB_STAGE"
	chroot "$TREE" dpkg-divert --quiet --local --rename \
		--divert "/$GIO.debian" --add "/$GIO" >>"$LOG" 2>&1 ||
		die "dpkg-divert of /$GIO failed (see $LOG)"
	put "$GLIB_STAGE/$GIO" "/$GIO" 0644
	put "$GLIB_STAGE/usr/bin/gdbus" /usr/local/bin/gdbus 0755
	put "$GLIB_STAGE/usr/libexec/afbus/glib-tests/gdbus-testserver" \
		/usr/local/bin/gdbus-testserver 0755
}

# The whole-system measure (tests/bench/system/, doc/benchmarks.md): the
# other two daemons of the system bus, beside the fork's, which
# afbus-sysbus-generator puts behind dbus.service when the kernel command
# line says afbus.sysbus=debian or broker: Debian's dbus-broker package,
# disabled again after its postinst enabled it (the fork's dbus-daemon
# stays the system bus), and Debian's dbus-daemon and libdbus of the
# base's version (debootstrap's packages) unpacked under /opt/debian, not
# installed; the unit that runs the measure when afbus.sysbus= is given.
install_bench() {
	local p version
	cp "$BROKER_DEB" "$TREE/tmp/"
	chroot "$TREE" sh -c "dpkg -i /tmp/${BROKER_DEB##*/} &&
		systemctl disable dbus-broker.service &&
		systemctl --global disable dbus-broker.service" >>"$LOG" 2>&1 ||
		die "installing dbus-broker failed (see $LOG)"
	rm -f "$TREE/tmp/${BROKER_DEB##*/}"
	[ ! -e "$TREE/etc/systemd/system/dbus.service" ] && [ ! -e "$TREE/etc/systemd/user/dbus.service" ] ||
		die "dbus-broker is still enabled in $TREE"
	for p in dbus-daemon libdbus-1-3; do
		version=$(chroot "$BASE" dpkg-query -W -f '${Version}' "$p")
		dpkg-deb -x "$(ls "$CACHE/${p}_${version}"_*.deb)" "$TREE/opt/debian" ||
			die "no $p $version in $CACHE"
	done
	put "$BENCH/afbus-sysbus-generator" /usr/lib/systemd/system-generators/afbus-sysbus-generator 0755
	put "$BENCH/run-system-bench" /usr/libexec/afbus/bench/run-system-bench 0755
	put "$BENCH/system-workload" /usr/libexec/afbus/bench/system-workload 0755
	put "$BENCH/afbus-system-bench.service" /etc/systemd/system/afbus-system-bench.service
	ln -sf /etc/systemd/system/afbus-system-bench.service \
		"$TREE/etc/systemd/system/multi-user.target.wants/"
}

main() {
	local want size inodes
	[ "$(cat "$DIR/base.key" 2>/dev/null)" = "$(base_key)" ] && [ -d "$BASE" ] || make_base
	ls "$DEBS"/dbus-daemon_*.deb >/dev/null 2>&1 || die "no packages in $DEBS (make debs)"
	ls "$KDEBS"/linux-image-*.deb >/dev/null 2>&1 || die "no kernel package in $KDEBS (make kernel-deb)"
	"$AFBUS_TOP/build-aux/glib-build.sh" >&2
	PKGS=$(packages) || exit 1
	# Debian's dbus-broker, for the whole-system measure
	"$AFBUS_TOP/build-aux/bench-debs.sh" >/dev/null || die "build-aux/bench-debs.sh failed"
	BROKER_DEB=$(ls "$AFBUS_BUILD"/bench-debian/debs/dbus-broker_*.deb) ||
		die "no dbus-broker package in $AFBUS_BUILD/bench-debian/debs"
	# sd-bus with afbus: for the very systemd the base has
	"$AFBUS_TOP/build-aux/systemd-build.sh" \
		--version "$(chroot "$BASE" dpkg-query -W -f '${Version}' libsystemd-shared)" >&2 ||
		die "building sd-bus with afbus: failed"
	SDBUS_TOOLS=$(ls "$AFBUS_BUILD"/tests/system/sdbus-* 2>/dev/null) ||
		die "no sd-bus test programs in $AFBUS_BUILD/tests/system (make sdbus-tools)"
	want=$(image_key)
	if [ -f "$IMG" ] && [ "$(cat "$IMG.key" 2>/dev/null)" = "$want" ]; then
		msg "system image is up to date ($IMG)"
		return 0
	fi
	msg "installing the fork's packages and the AF_BUS kernel (log: $LOG)"
	make_tree
	size=$(du -sm "$TREE" | cut -f1)
	size=$((size + size / 4 + 256))
	inodes=$(find "$TREE" | wc -l)
	rm -f "$IMG.tmp"
	mke2fs -q -t ext4 -L afbus-system -N $((inodes * 2 + 8192)) \
		-d "$TREE" -F "$IMG.tmp" "${size}M" >/dev/null || die "mke2fs failed"
	mv "$IMG.tmp" "$IMG"
	echo "$want" >"$IMG.key"
	msg "wrote $IMG (${size} MiB): kernels $(cat "$BOOT/version-afbus") and $(cat "$BOOT/version-stock")"
}

main "$@"
