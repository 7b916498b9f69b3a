#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debian packages of the AF_BUS kernel (`make kernel-deb`): Debian's
# kernel with AF_BUS, the system kernel of build-aux/kernel-build.sh
# --system (Debian's configuration of the release with AppArmor and its
# modules, af_bus.config and system.config over it), packaged by the
# kernel's own `make bindeb-pkg`:
#   linux-image-VERSION-afbus_VERSION-1+afbus1_amd64.deb
#   linux-headers-VERSION-afbus_...   (headers for out-of-tree modules)
#   linux-libc-dev_...                (the UAPI headers, linux/bus.h among
#                                      them; not needed to run anything)
# Installed with `dpkg -i` like any Debian kernel: /boot/vmlinuz-*, the
# System.map and config, modules in /lib/modules, and the kernel's
# postinst hooks (/etc/kernel/postinst.d: initramfs-tools, GRUB) run.
# AFBUS_KERNEL_MODULES chooses the modules (kernel-build.sh):
#   (unset)  those of kernel-patches/system.modules, the system guest's
#            and CI's kernel: build/kernel-debs (`make kernel-deb`)
#   full     all of Debian's: what a user installs on any machine,
#            build/kernel-debs-full (`make kernel-deb-full`)
#   FILE     those of a machine's `lsmod` output: build/kernel-debs-local
#            (`make kernel-deb LSMOD=FILE`)
# The packages are remade only when the kernel or this script changes
# (.key in the output directory).  Log: build/kernel-deb.log.
set -eu
. "$(dirname "$0")/common.sh"

system_kernel_variant
OBJ=$SYSTEM_KERNEL_OBJ
OUT=$SYSTEM_KERNEL_DEBS
LOG=$AFBUS_BUILD/kernel-deb.log
# The Debian revision: first build of each kernel version, +afbus.
REVISION=1+afbus1

key() {
	{ cat "$OBJ/.afbus-build-key"; sha256sum <"$0"; } | sha256sum | cut -d' ' -f1
}

main() {
	local want release version start
	"$(dirname "$0")/kernel-build.sh" --system
	want=$(key)
	if [ "$(cat "$OUT/.key" 2>/dev/null)" = "$want" ] &&
	   ls "$OUT"/linux-image-*.deb >/dev/null 2>&1; then
		msg "${OUT#"$AFBUS_BUILD"/} is up to date"
		return 0
	fi
	# bindeb-pkg reads build/kernel-src: hold it as kernel-build.sh does.
	exec 9>"$AFBUS_BUILD/kernel-src.lock"
	flock 9
	export LOCALVERSION=	# as kernel-build.sh --system
	release=$(kernel_make "$KERNEL_SRC" "$OBJ" -s kernelrelease)
	version=${release%-afbus}-$REVISION
	start=$(date +%s)
	msg "make bindeb-pkg for $release (log: $LOG)"
	# The packages land in the object directory's parent, build/.
	rm -rf "$OUT"
	kernel_make "$KERNEL_SRC" "$OBJ" -j"$(nproc)" bindeb-pkg \
		KDEB_PKGVERSION="$version" KDEB_SOURCENAME=linux-afbus \
		KDEB_CHANGELOG_DIST=bookworm >"$LOG" 2>&1 || {
		tail -n 20 "$LOG" >&2
		die "make bindeb-pkg failed (see $LOG)"
	}
	mkdir -p "$OUT"
	mv "$AFBUS_BUILD"/linux-*_"$version"_*.deb \
		"$AFBUS_BUILD"/linux-afbus_"$version"_*.buildinfo \
		"$AFBUS_BUILD"/linux-afbus_"$version"_*.changes "$OUT/"
	echo "$want" >"$OUT/.key"
	msg "$(cd "$OUT" && ls ./*.deb | wc -l) packages of $release in $OUT ($(($(date +%s) - start)) s)"
}

main "$@"
