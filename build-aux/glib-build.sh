#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# GDBus with the afbus: transport (glib/README): Debian 12's glib2.0
# source package with the glib/ quilt series on top, configured as
# Debian configures it, of which only libgio, the gdbus tool and the
# GDBus test programs that tests/ run are built:
#   1. fetch the source package once (apt-get source --download-only
#      into build/glib-debian; the deb-src entry is the one
#      build-aux/dbus-build.sh adds);
#   2. build/glib-src: dpkg-source -x (Debian's own patches applied),
#      then the glib/ series pushed with quilt (QUILT_PC=.pc-afbus), popped
#      and pushed again when the series changes, so that ninja recompiles
#      only the files the series touches;
#   3. build/glib-obj: meson with Debian's options (debian/rules:
#      DEB_CONFIGURE_FLAGS_deb, dpkg-buildflags with hardening=+bindnow,
#      -Wl,-z,defs -Wl,--no-as-needed -Wl,-O1), except --default-library
#      shared (the static archive is not installed) and no man pages or
#      gtk-doc (documentation only); then ninja of single targets;
#   4. build/glib-stage: libgio-2.0.so.0.<version> and gdbus, stripped,
#      where Debian installs them, and the GDBus test programs in
#      usr/libexec/afbus/glib-tests.
# Everything is skipped when the stage's key (the source package, the
# series, the flags, this script, the compiler) is unchanged.
#
# The guests keep Debian's libglib, libgobject and libgmodule, built from
# the same source package version: the image scripts check that the
# guest's libglib2.0-0 is the version built here.
#
# Options: --status  exit 0 if the stage is up to date, 1 if not.
set -eu
. "$(dirname "$0")/common.sh"

GLIB_UPSTREAM_VERSION=2.74.6
GLIB_SONAME=libgio-2.0.so.0
GLIB_LIB=$GLIB_SONAME.7400.6
GLIB_PATCHES=$AFBUS_TOP/glib
GLIB_DEBIAN=$AFBUS_BUILD/glib-debian
GLIB_SRC=$AFBUS_BUILD/glib-src
GLIB_OBJ=$AFBUS_BUILD/glib-obj
GLIB_STAGE=$AFBUS_BUILD/glib-stage
LOG=$AFBUS_BUILD/glib-build.log
MULTIARCH=x86_64-linux-gnu

# debian/rules' DEB_CONFIGURE_FLAGS_deb and what dh_auto_configure adds
MESON_FLAGS=(
	--wrap-mode=nodownload --buildtype=plain
	--prefix=/usr --sysconfdir=/etc --localstatedir=/var
	--libdir=lib/$MULTIARCH --libexecdir=lib/$MULTIARCH
	--default-library shared
	-Dinstalled_tests=false -Dlibelf=enabled -Dlibmount=enabled
	-Dman=false -Dgtk_doc=false -Dmultiarch=true -Dselinux=enabled
	-Dsystemtap=true -Dxattr=true
)

# The GDBus tests of upstream's suite that tests/ run in the guests
# (gio/tests/NAME), against a bus of their own (GTestDBus)
GLIB_TESTS=(
	gdbus-auth gdbus-bz627724 gdbus-close-pending gdbus-connection
	gdbus-connection-flush gdbus-connection-loss gdbus-connection-slow
	gdbus-error gdbus-exit-on-close gdbus-export gdbus-introspection
	gdbus-method-invocation gdbus-names gdbus-proxy gdbus-proxy-threads
	gdbus-proxy-unique-name gdbus-proxy-well-known-name gdbus-subscribe
	gdbus-test-codegen gdbus-threading gdbus-peer gdbus-message
	gdbus-addresses gdbus-afbus-client
)

# What the tests need beside them: the helpers they spawn
GLIB_TEST_HELPERS=(
	gdbus-testserver gdbus-connection-flush-helper fake-service-name
)

glib_patches() {
	[ -f "$GLIB_PATCHES/series" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
		"$GLIB_PATCHES/series" | grep -v '^$' || true
}

# The newest 2.74.6 source package Debian has; print the .dsc path.
fetch_source() {
	local dsc version
	version=$(apt-cache showsrc glib2.0 2>/dev/null |
		sed -n "s/^Version: \($GLIB_UPSTREAM_VERSION-.*\)/\1/p" | sort -V | tail -n 1)
	if [ -z "$version" ]; then
		dsc=$(ls "$GLIB_DEBIAN"/glib2.0_"$GLIB_UPSTREAM_VERSION"-*.dsc 2>/dev/null | sort -V | tail -n 1 || true)
		[ -n "$dsc" ] || die "apt knows no glib2.0 $GLIB_UPSTREAM_VERSION source package" \
			"(a deb-src entry: build-aux/dbus-build.sh adds one)"
		echo "$dsc"
		return
	fi
	dsc=$GLIB_DEBIAN/glib2.0_$version.dsc
	if [ ! -f "$dsc" ]; then
		mkdir -p "$GLIB_DEBIAN"
		msg "fetching Debian source package glib2.0 $version"
		(cd "$GLIB_DEBIAN" && apt-get source --download-only "glib2.0=$version" >&2) ||
			die "apt-get source glib2.0=$version failed"
	fi
	echo "$dsc"
}

# What the build needs from Debian (a subset of Build-Depends)
ensure_tools() {
	local missing="" p
	for p in meson ninja-build quilt libffi-dev libmount-dev libpcre2-dev \
		libselinux1-dev libelf-dev zlib1g-dev python3; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing:$missing; as root: apt-get install$missing"
	msg "installing$missing"
	# shellcheck disable=SC2086  # one package per word
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >>"$LOG" 2>&1 ||
		die "apt-get install$missing failed (see $LOG)"
}

# dpkg-buildflags maps the directory it runs in away (-ffile-prefix-map):
# asked from the source tree, as dpkg-buildpackage does; the keys leave
# that one flag out, so that they do not depend on where a build started.
cflags() {
	(cd "$GLIB_SRC" && DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow dpkg-buildflags --get "$1")
}
key_flags() {
	DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow dpkg-buildflags --get "$1" |
		sed 's/ *-ffile-prefix-map=[^ ]*//g'
}

configure_key() {
	{
		basename "$1"
		sha256sum "$1" | cut -d' ' -f1
		printf '%s\n' "${MESON_FLAGS[@]}"
		key_flags CFLAGS; key_flags CPPFLAGS; key_flags LDFLAGS
		sed -n '/^MESON_FLAGS=/,/^)/p' "$0"
		meson --version
		gcc --version | head -1
	} | sha256sum | cut -d' ' -f1
}

stage_key() {
	local p
	{
		configure_key "$1"
		for p in $(glib_patches); do
			[ -f "$GLIB_PATCHES/$p" ] || die "glib/series names $p, which does not exist"
			echo "== $p"
			cat "$GLIB_PATCHES/$p"
		done
		sha256sum <"$0"
	} | sha256sum | cut -d' ' -f1
}

glib_quilt() {
	(cd "$GLIB_SRC" && QUILT_PATCHES=$GLIB_PATCHES QUILT_PC=.pc-afbus quilt "$@")
}

# build/glib-src: the source package unpacked, the series on top
prepare_source() {
	local dsc=$1 key
	key="$(basename "$dsc") $(sha256sum "$dsc" | cut -d' ' -f1)"
	if [ ! -d "$GLIB_SRC" ] || [ "$(cat "$GLIB_SRC/.afbus-source" 2>/dev/null)" != "$key" ]; then
		rm -rf "$GLIB_SRC" "$GLIB_OBJ"
		msg "unpacking $(basename "$dsc")"
		dpkg-source --no-check -x "$dsc" "$GLIB_SRC" >>"$LOG" 2>&1 ||
			die "dpkg-source -x failed (see $LOG)"
		echo "$key" >"$GLIB_SRC/.afbus-source"
	fi
	# the series as it is now: pop what was pushed (from quilt's own
	# copies, whatever the patches are now), push the current series
	if [ -d "$GLIB_SRC/.pc-afbus" ]; then
		glib_quilt pop -a -f -q >>"$LOG" 2>&1 || {
			[ $? = 2 ] || die "quilt pop -a failed in $GLIB_SRC (see $LOG)"
		}
	fi
	if [ -n "$(glib_patches)" ]; then
		glib_quilt push -a -q --fuzz=0 >>"$LOG" 2>&1 ||
			die "the glib/ series does not apply to $(basename "$dsc") (see $LOG)"
	fi
}

configure() {
	local key=$1
	if [ -f "$GLIB_OBJ/build.ninja" ] && [ "$(cat "$GLIB_OBJ/.afbus-configure" 2>/dev/null)" = "$key" ]; then
		return 0
	fi
	rm -rf "$GLIB_OBJ"
	msg "configuring GLib in $GLIB_OBJ (log: $LOG)"
	CFLAGS="$(cflags CFLAGS) $(cflags CPPFLAGS)" \
	LDFLAGS="$(cflags LDFLAGS) -Wl,-z,defs -Wl,--no-as-needed -Wl,-O1" \
		meson setup "$GLIB_OBJ" "$GLIB_SRC" "${MESON_FLAGS[@]}" >>"$LOG" 2>&1 ||
		die "meson setup failed (see $LOG)"
	echo "$key" >"$GLIB_OBJ/.afbus-configure"
}

stage() {
	local t
	rm -rf "$GLIB_STAGE.tmp"
	mkdir -p "$GLIB_STAGE.tmp/usr/lib/$MULTIARCH" "$GLIB_STAGE.tmp/usr/bin" \
		"$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests"
	strip --strip-unneeded -o "$GLIB_STAGE.tmp/usr/lib/$MULTIARCH/$GLIB_LIB" "$GLIB_OBJ/gio/$GLIB_LIB"
	ln -s "$GLIB_LIB" "$GLIB_STAGE.tmp/usr/lib/$MULTIARCH/$GLIB_SONAME"
	strip -o "$GLIB_STAGE.tmp/usr/bin/gdbus" "$GLIB_OBJ/gio/gdbus"
	for t in "${GLIB_TESTS[@]}" "${GLIB_TEST_HELPERS[@]}"; do
		[ -f "$GLIB_OBJ/gio/tests/$t" ] || continue
		strip -o "$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/$t" "$GLIB_OBJ/gio/tests/$t"
	done
	# gdbus-peer's library, where its RUNPATH ($ORIGIN/...) finds it
	t=gio/tests/gdbus-object-manager-example/libgdbus-example-objectmanager.so
	if [ -f "$GLIB_OBJ/$t" ]; then
		mkdir -p "$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/gdbus-object-manager-example"
		strip --strip-unneeded -o "$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/gdbus-object-manager-example/${t##*/}" \
			"$GLIB_OBJ/$t"
	fi
	# what the test programs read beside them: G_TEST_DIST files, and the
	# activatable service of gdbus-names (GTestDBus' service directory)
	cp "$GLIB_SRC/gio/tests/file.c" "$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/"
	mkdir -p "$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/services"
	printf '[D-BUS Service]\nName=org.gtk.GDBus.FakeService\nExec=%s\n' \
		/usr/libexec/afbus/glib/tests/fake-service-name \
		>"$GLIB_STAGE.tmp/usr/libexec/afbus/glib-tests/services/org.gtk.GDBus.FakeService.service"
	# the Debian version the guest's libglib2.0-0 must have
	basename "$1" .dsc | sed 's/^glib2\.0_//' >"$GLIB_STAGE.tmp/version"
	rm -rf "$GLIB_STAGE"
	mv "$GLIB_STAGE.tmp" "$GLIB_STAGE"
}

main() {
	local dsc want targets t start
	mkdir -p "$AFBUS_BUILD"
	dsc=$(fetch_source)
	want=$(stage_key "$dsc")
	if [ "$(cat "$GLIB_STAGE/.key" 2>/dev/null)" = "$want" ] && [ -f "$GLIB_STAGE/usr/bin/gdbus" ]; then
		[ "${1:-}" = --status ] && exit 0
		msg "GDBus is up to date ($GLIB_STAGE)"
		return 0
	fi
	[ "${1:-}" = --status ] && exit 1
	: >"$LOG"
	start=$(date +%s)
	ensure_tools
	prepare_source "$dsc"
	configure "$(configure_key "$dsc")"
	targets=("gio/$GLIB_LIB" gio/gdbus)
	for t in "${GLIB_TESTS[@]}" "${GLIB_TEST_HELPERS[@]}"; do
		targets+=("gio/tests/$t")
	done
	msg "building libgio, gdbus and the GDBus tests in $GLIB_OBJ (log: $LOG)"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		ninja -C "$GLIB_OBJ" -j"$(nproc)" "${targets[@]}" >>"$LOG" 2>&1 || {
		grep -E 'error|FAILED' "$LOG" | head -n 30 >&2
		die "GLib build failed (see $LOG)"
	}
	stage "$dsc"
	echo "$want" >"$GLIB_STAGE/.key"
	msg "GDBus staged in $GLIB_STAGE ($(($(date +%s) - start)) s)"
}

main "$@"
