#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run upstream D-Bus' own test suite (`make check`) on the patched tree,
# on the host: the source tree build-aux/dbus-build.sh prepared
# (build/dbus-src), configured a second time in build/dbus-check with
# the embedded and modular tests enabled (they change libdbus, so this
# build is never installed).  The host kernel has no AF_BUS: the afbus
# transport is compiled and linked into everything the suite runs, and
# the suite checks that it changed nothing for the other transports.
#
# Output: the suite's summary; the full log in build/dbus-check.log.
#
# --pack FILE: build the suite without running it, and write to FILE a
# tar archive of what upstream's modular tests need to run elsewhere,
# at the same absolute paths: the build tree (without objects), the
# source tree's test/, and tests/upstream/ of this project as
# /afbus-upstream/ (run-qemu.sh --upstream runs them in the guest, on
# the fork's daemon on afbus: and on unix:).
set -eu
. "$(dirname "$0")/common.sh"

DBUS_SRC=$AFBUS_BUILD/dbus-src
DBUS_OBJ=$AFBUS_BUILD/dbus-obj
CHECK_OBJ=$AFBUS_BUILD/dbus-check
LOG=$AFBUS_BUILD/dbus-check.log
PACK=
if [ "${1:-}" = --pack ]; then
	PACK=${2:?usage: dbus-check.sh [--pack FILE]}
fi

"$AFBUS_TOP/build-aux/dbus-build.sh"
pkg-config --exists glib-2.0 gio-2.0 ||
	die "the modular tests need GLib: apt-get install libglib2.0-dev"

: >"$LOG"
if [ ! -f "$CHECK_OBJ/Makefile" ] || [ "$DBUS_OBJ/.afbus-build-key" -nt "$CHECK_OBJ/Makefile" ]; then
	rm -rf "$CHECK_OBJ"
	mkdir -p "$CHECK_OBJ"
	(cd "$CHECK_OBJ" && CPPFLAGS="-I$DBUS_OBJ/afbus-include" \
		"$DBUS_SRC/configure" --enable-embedded-tests --enable-modular-tests \
		--enable-asserts --enable-verbose-mode --disable-doxygen-docs \
		--disable-xml-docs --disable-ducktype-docs --without-x \
		--disable-x11-autolaunch --disable-systemd --disable-selinux \
		--disable-apparmor --disable-libaudit) >>"$LOG" 2>&1 ||
		die "configure failed (see $LOG)"
fi
if [ -n "$PACK" ]; then
	msg "building upstream's tests in $CHECK_OBJ (log: $LOG)"
	# TESTS= builds every check program and runs none
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$CHECK_OBJ" -j"$(nproc)" check TESTS= >>"$LOG" 2>&1 ||
		die "building the tests failed (see $LOG)"
	stage=$CHECK_OBJ.pack
	rm -rf "$stage"
	mkdir -p "$stage/afbus-upstream"
	cp "$AFBUS_TOP"/tests/upstream/* "$stage/afbus-upstream/"
	printf 'CHECK_OBJ=%s\nDBUS_SRC=%s\n' "$CHECK_OBJ" "$DBUS_SRC" \
		>"$stage/afbus-upstream/paths"
	tar -cf "$PACK.tmp" --exclude='*.o' --exclude='*.lo' --exclude='*.a' \
		--exclude='*.log' --exclude='*.trs' --exclude=.deps \
		-C "$stage" afbus-upstream -C / "${CHECK_OBJ#/}" "${DBUS_SRC#/}/test"
	rm -rf "$stage"
	mv "$PACK.tmp" "$PACK"
	msg "wrote $PACK ($(du -m "$PACK" | cut -f1) MiB)"
	exit 0
fi
msg "running upstream's make check in $CHECK_OBJ (log: $LOG)"
rc=0
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	make -C "$CHECK_OBJ" -j"$(nproc)" check >>"$LOG" 2>&1 || rc=$?
grep -E '^(# )?(TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' "$LOG" | sort | uniq -c | sort -rn | head -n 20
grep -E '^(FAIL|ERROR):' "$LOG" || true
exit $rc
