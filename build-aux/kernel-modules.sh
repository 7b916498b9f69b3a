#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The modules of a test-guest kernel that has some: debug.config builds
# nfdbus as a module (for tests/kernel/nfdbus_unload).  After
# build-aux/kernel-build.sh VARIANT has built the kernel, build its
# modules, install them and pack them into KERNEL_OBJ/modules.cpio.gz,
# an archive run-qemu.sh appends to the guest's initramfs and whose
# modules the guest's init (tests/guest/init) loads before the tests.
# A kernel without modules (=m in its .config) gets no archive.  Keyed by
# the kernel's build key: nothing is done when the archive was made from
# the kernel as it is.
#
# Usage: kernel-modules.sh --debug|--kcsan|--kcsan-strict|--bench   (or no
# argument: the test kernel)
set -eu
. "$(dirname "$0")/common.sh"

OBJ=$KERNEL_OBJ
LOG=$AFBUS_BUILD/kernel-build.log
case ${1:-} in
--debug|--kcsan|--kcsan-strict|--bench)
	OBJ=$AFBUS_BUILD/kernel-obj-${1#--}
	LOG=$AFBUS_BUILD/kernel-build-${1#--}.log
	;;
esac
OUT=$OBJ/modules.cpio.gz
ROOT=$OBJ/modules-root

[ -f "$OBJ/.afbus-build-key" ] || die "no kernel built in $OBJ"
key=$(cat "$OBJ/.afbus-build-key")
[ -f "$OUT" ] && [ "$(cat "$OUT.key" 2>/dev/null)" = "$key" ] && exit 0
rm -rf "$ROOT" "$OUT" "$OUT.key"
grep -q '=m$' "$OBJ/.config" || exit 0

# build/kernel-src is the tree of every kernel build (kernel-build.sh)
exec 9>"$AFBUS_BUILD/kernel-src.lock"
flock 9
kmake() { kernel_make "$KERNEL_SRC" "$OBJ" "$@"; }
msg "building and installing the modules of $OBJ"
kmake -j"$(nproc)" modules >>"$LOG" 2>&1 || die "make modules failed; see $LOG"
kmake modules_install INSTALL_MOD_PATH="$ROOT" INSTALL_MOD_STRIP=1 \
	>>"$LOG" 2>&1 || die "make modules_install failed; see $LOG"
# not the links to this machine's source and object trees
rm -f "$ROOT"/lib/modules/*/build "$ROOT"/lib/modules/*/source
(cd "$ROOT" && find lib | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0) | gzip -n >"$OUT"
echo "$key" >"$OUT.key"
