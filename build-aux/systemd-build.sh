#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sd-bus with the afbus: transport (systemd/README): what the system guest
# installs, built from Debian's systemd source package and the systemd/
# series, with Debian's own configuration, so that the libraries are
# drop-in replacements for Debian's (same ABI, same paths):
#   1. fetch Debian's systemd source package (apt-get source) into
#      build/systemd-debian, once per version: the version the system
#      guest runs (--version, given by build-aux/rootfs-system.sh), else
#      the newest 252.x the deb-src entries offer (what debootstrap of
#      bookworm installs);
#   2. build/systemd-src: the source unpacked with dpkg-source (Debian's
#      own patches applied), a git repository whose first commit is that
#      tree (tag "debian") and whose later commits are the systemd/
#      series, one `git am` per patch (the developer's workflow on the
#      series: systemd/README);
#   3. configure it in build/systemd-obj with the meson options of
#      debian/rules (dh_auto_configure with Debian's CONFFLAGS, build
#      flags and profiles nodoc noinsttest) and only -Db_lto=false added
#      (link time optimisation changes no ABI but doubles the time of a
#      build on two cores);
#   4. ninja only the targets the guest needs: libsystemd.so.0 and
#      libsystemd-shared-252.so (sd-bus is in both), systemctl and
#      pam_systemd.so (Debian links their own copy of sd-bus into them:
#      -Dlink-systemctl-shared=false; the static libraries they link are
#      built for libsystemd-shared anyway), and the
#      sd-bus tests that use a bus; installed in build/systemd-stage with
#      Debian's paths (usr/lib/x86_64-linux-gnu/...), stripped as Debian's
#      are and checked to export every symbol Debian's symbols files list,
#      and the tests in usr/lib/systemd/tests/afbus (Debian's own busctl,
#      systemctl and the services run on the libraries unchanged).
# Everything is redone only when an input changes: the key is the source
# package's version and .dsc checksum, the series with every patch, and
# this script (build/systemd-stage/.key).  Step 2 is redone when the
# series changed, step 3 when the tree was redone, and ninja rebuilds
# what the changed patches touch.
#
# Options:
#   --version V   Debian's systemd source version to build (default: the
#                 newest 252.x known to apt)
#   --dev         build what build/systemd-src holds now (commits and
#                 edits not yet in systemd/ included), for work on the
#                 series; the stage is then not marked up to date
#   --status      exit 0 if build/systemd-stage is up to date, else 1
#   --adopt       take what build/systemd-src holds now as the series
#                 (build-aux/systemd-patches.sh, after it wrote systemd/
#                 from it), so that the next build does not apply it again
# Log: build/systemd-build.log.
set -eu
. "$(dirname "$0")/common.sh"

SD_SERIES_DIR=$AFBUS_TOP/systemd
SD_SERIES=$SD_SERIES_DIR/series
SD_DEBIAN=$AFBUS_BUILD/systemd-debian
SD_SRC=$AFBUS_BUILD/systemd-src
SD_OBJ=$AFBUS_BUILD/systemd-obj
SD_STAGE=$AFBUS_BUILD/systemd-stage
LOG=$AFBUS_BUILD/systemd-build.log
# The Debian profiles and options of the configuration: no manual pages
# and no installed tests (neither changes a library), no test run.
SD_PROFILES="nodoc noinsttest"
# Added to Debian's meson options, last (meson takes the last one).
SD_EXTRA_CONFFLAGS="-Db_lto=false"
# sd-bus's tests (ninja targets of the same name): those that use a bus
# (DBUS_SESSION_BUS_ADDRESS / DBUS_SYSTEM_BUS_ADDRESS), which the system
# guest runs on afbus: and on unix:, then those of direct connections and
# addresses, which the series must not break, and the unit test.
SD_TESTS="test-bus-chat test-bus-cleanup test-bus-marshal test-bus-match
	test-bus-queue-ref-cycle test-bus-track
	test-bus-objects test-bus-server test-bus-watch-bind test-bus-address
	test-bus-afbus"

version=
dev=0
status=0
adopt=0
while [ $# -gt 0 ]; do
	case $1 in
	--version) version=$2; shift ;;
	--dev) dev=1 ;;
	--status) status=1 ;;
	--adopt) adopt=1 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done

# The patch files named in the series, in order.
sd_series_patches() {
	[ -f "$SD_SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
		"$SD_SERIES" | grep -v '^$' || true
}

# The newest systemd 252 source apt knows of (deb-src entries: see
# build-aux/dbus-build.sh, which adds them when missing).
default_version() {
	apt-cache showsrc systemd 2>/dev/null |
		sed -n 's/^Version: \(252\..*\)/\1/p' | sort -V | tail -n 1
}

# Download the source package once; print the .dsc path.
fetch_source() {
	local dsc=$SD_DEBIAN/systemd_${version#*:}.dsc
	if [ ! -f "$dsc" ]; then
		mkdir -p "$SD_DEBIAN"
		msg "fetching Debian source package systemd $version"
		(cd "$SD_DEBIAN" && apt-get source --download-only "systemd=$version" >&2) ||
			die "apt-get source systemd=$version failed (a deb-src entry for bookworm?)"
	fi
	[ -f "$dsc" ] || die "no $dsc after apt-get source"
	echo "$dsc"
}

tree_key() {
	local p
	{
		echo "version=$version"
		sha256sum "$1" | cut -d' ' -f1
		for p in $(sd_series_patches); do
			[ -f "$SD_SERIES_DIR/$p" ] || die "systemd/series names $p, which does not exist"
			echo "== $p"
			cat "$SD_SERIES_DIR/$p"
		done
	} | sha256sum | cut -d' ' -f1
}

build_key() {
	{
		tree_key "$1"
		sha256sum <"$0"
		gcc --version | head -n 1
	} | sha256sum | cut -d' ' -f1
}

sdgit() { kgit -C "$SD_SRC" "$@"; }

# build/systemd-src: the Debian source as the first commit (tag debian),
# then the series, a commit per patch.  An existing tree keeps its
# unchanged files (and their timestamps, so that ninja rebuilds only
# what the series changes): it is reset to the tag and the series
# applied again.  Work in it that is not in systemd/ stops the build.
prepare_tree() {
	local dsc=$1 p tip
	if [ ! -d "$SD_SRC/.git" ] || ! sdgit rev-parse -q --verify refs/tags/debian >/dev/null ||
		[ "$(cat "$SD_SRC/.afbus-version" 2>/dev/null)" != "$version" ]; then
		rm -rf "$SD_SRC" "$SD_OBJ"
		msg "unpacking $(basename "$dsc")"
		dpkg-source --no-check -x "$dsc" "$SD_SRC" >>"$LOG" 2>&1 ||
			die "dpkg-source -x $dsc failed (see $LOG)"
		# quilt's state is not part of the tree
		rm -rf "$SD_SRC/.pc"
		sdgit init -q
		sdgit add -A -f .
		sdgit commit -q -m "Debian's systemd $version (its patches applied)"
		sdgit tag debian
		echo "$version" >"$SD_SRC/.afbus-version"
		echo .afbus-version >>"$SD_SRC/.git/info/exclude"
	else
		tip=$(cat "$SD_SRC/.afbus-tip" 2>/dev/null || true)
		if [ -n "$(sdgit status --porcelain --untracked-files=no)" ] ||
			[ "$(sdgit rev-parse HEAD)" != "$tip" ]; then
			die "$SD_SRC has work that is not in systemd/: export it" \
				"(build-aux/systemd-patches.sh), build it with --dev, or drop it" \
				"(git -C $SD_SRC reset --hard $tip)"
		fi
		sdgit reset -q --hard refs/tags/debian
	fi
	for p in $(sd_series_patches); do
		sdgit am -q --keep-cr "$SD_SERIES_DIR/$p" >>"$LOG" 2>&1 || {
			sdgit am --abort >/dev/null 2>&1 || true
			die "systemd/$p does not apply to systemd $version (see $LOG)"
		}
	done
	sdgit rev-parse HEAD >"$SD_SRC/.afbus-tip"
	echo .afbus-tip >>"$SD_SRC/.git/info/exclude"
}

# The build dependencies of Debian's configuration, for our profiles
# (apt-get build-dep, as root; as debs.sh does for dbus).
ensure_build_deps() {
	local profiles=${SD_PROFILES// /,},nocheck
	(cd "$SD_SRC" && dpkg-checkbuilddeps -P "$profiles") >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] ||
		die "systemd's build dependencies are missing; as root:" \
			"apt-get build-dep -P $profiles systemd=$version"
	msg "installing systemd's build dependencies (apt-get build-dep)"
	DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -P "$profiles" "systemd=$version" \
		>>"$LOG" 2>&1 || die "apt-get build-dep systemd failed (see $LOG)"
}

# Debian's configuration: dh_auto_configure as debian/rules runs it
# (override_dh_auto_configure), with the build directory ours.
configure() {
	local mk=$SD_SRC/.afbus-configure.mk
	ensure_build_deps
	rm -rf "$SD_OBJ"
	# (a recipe line starts with a tab)
	printf 'include debian/rules\nafbus-configure:\n\t%s\n' \
		"dh_auto_configure --buildsystem=meson --builddirectory=$SD_OBJ -- \$(CONFFLAGS) \$(CONFFLAGS_DISTRO) \$(CONFFLAGS_UPSTREAM) $SD_EXTRA_CONFFLAGS" >"$mk"
	msg "configuring systemd $version in $SD_OBJ (log: $LOG)"
	(cd "$SD_SRC" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		DEB_BUILD_PROFILES="$SD_PROFILES" DEB_BUILD_OPTIONS=nocheck \
		make -f "$mk" afbus-configure) >>"$LOG" 2>&1 || {
		tail -n 30 "$LOG" >&2
		die "configuring systemd failed (see $LOG)"
	}
	rm -f "$mk"
}

# ninja in the build directory.  The link flags have Debian's package note
# (dh_package_notes), which takes these from debian/rules' environment.
sd_ninja() {
	env DEB_VENDOR=Debian DEB_HOST_ARCH=amd64 DEB_SOURCE_PACKAGE_NAME=systemd \
		DEB_SOURCE_PACKAGE_VERSION="$version+afbus" \
		DEBUGINFOD_URLS=https://debuginfod.debian.net \
		ninja -C "$SD_OBJ" "$@"
}

# The targets' paths in the build directory, from meson's own list:
# the shared libraries "systemd" (libsystemd.so.0) and
# "systemd-shared-252", not the static ones nor PID 1 (the executable
# "systemd"); the other names are executables.
target_outputs() {
	meson introspect --targets "$SD_OBJ" | python3 -c '
import json, sys
want = sys.argv[1:]
libs = ("systemd", "systemd-shared-252", "pam_systemd")
for t in json.load(sys.stdin):
    kind = "shared library" if t["name"] in libs else "executable"
    if t["name"] in want and t["type"] == kind:
        for f in t["filename"]:
            print(t["name"], f)
' "$@"
}

# libsystemd.so.0 replaces Debian's under programs built against it: it
# must export every symbol of Debian's symbols file.  (The private
# libsystemd-shared-252.so has none; build-aux/rootfs-system.sh compares it
# with the guest's own before it replaces it.)
check_abi() {
	local missing
	missing=$(comm -23 \
		<(sed -n 's/^ \([^ @]*\)@.*/\1/p' "$SD_SRC/debian/libsystemd0.symbols" | sort -u) \
		<(nm -D --defined-only "$SD_STAGE.tmp"/usr/lib/x86_64-linux-gnu/libsystemd.so.0.* |
			awk '{ print $3 }' | sed 's/@.*//' | sort -u))
	[ -z "$missing" ] || die "libsystemd.so.0 lacks symbols of Debian's libsystemd0: $missing"
}

build() {
	local targets outputs name file
	targets="systemd systemd-shared-252 systemctl pam_systemd $SD_TESTS"
	# meson again if the series changed a meson.build
	sd_ninja build.ninja >>"$LOG" 2>&1 || {
		tail -n 30 "$LOG" >&2
		die "meson could not reconfigure $SD_OBJ (see $LOG)"
	}
	outputs=$(target_outputs $targets)
	[ -n "$outputs" ] || die "meson lists none of the targets $targets"
	for name in $targets; do
		echo "$outputs" | grep -q "^$name " ||
			die "meson has no target $name (see systemd/README)"
	done
	msg "building $(echo $targets | wc -w) targets of systemd $version (log: $LOG)"
	# ninja takes the outputs' paths relative to the build directory
	# shellcheck disable=SC2046
	sd_ninja -j"$(nproc)" $(echo "$outputs" | cut -d' ' -f2 |
		sed "s|^$SD_OBJ/||") >>"$LOG" 2>&1 || {
		grep -E 'error|FAILED' "$LOG" | head -n 30 >&2
		die "building systemd failed (see $LOG)"
	}
	rm -rf "$SD_STAGE.tmp"
	mkdir -p "$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/systemd" \
		"$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/security" "$SD_STAGE.tmp/usr/bin" \
		"$SD_STAGE.tmp/usr/lib/systemd/tests/afbus"
	echo "$outputs" | while read -r name file; do
		case $name in
		systemd)
			cp "$file" "$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/"
			ln -s "${file##*/}" "$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/libsystemd.so.0" ;;
		systemd-shared-252) cp "$file" "$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/systemd/" ;;
		systemctl) cp "$file" "$SD_STAGE.tmp/usr/bin/" ;;
		pam_systemd) cp "$file" "$SD_STAGE.tmp/usr/lib/x86_64-linux-gnu/security/" ;;
		*) cp "$file" "$SD_STAGE.tmp/usr/lib/systemd/tests/afbus/" ;;
		esac
	done
	# stripped as dh_strip strips Debian's
	strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		"$SD_STAGE.tmp"/usr/lib/x86_64-linux-gnu/libsystemd.so.0.* \
		"$SD_STAGE.tmp"/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-*.so \
		"$SD_STAGE.tmp"/usr/lib/x86_64-linux-gnu/security/pam_systemd.so \
		"$SD_STAGE.tmp"/usr/bin/systemctl
	check_abi
	echo "$version" >"$SD_STAGE.tmp/version"
	rm -rf "$SD_STAGE"
	mv "$SD_STAGE.tmp" "$SD_STAGE"
}

main() {
	local dsc key start=$SECONDS
	[ -n "$version" ] || version=$(default_version)
	[ -n "$version" ] || die "apt knows no systemd 252 source (deb-src entries missing?)"
	mkdir -p "$AFBUS_BUILD"
	if [ $status = 1 ]; then
		dsc=$SD_DEBIAN/systemd_${version#*:}.dsc
		[ -f "$dsc" ] && [ "$(cat "$SD_STAGE/.key" 2>/dev/null)" = "$(build_key "$dsc")" ]
		return
	fi
	if [ $adopt = 1 ]; then
		dsc=$SD_DEBIAN/systemd_${version#*:}.dsc
		[ -f "$dsc" ] && [ -d "$SD_OBJ" ] || die "nothing built yet to adopt"
		[ -z "$(sdgit status --porcelain --untracked-files=no)" ] ||
			die "$SD_SRC has changes not committed"
		sdgit rev-parse HEAD >"$SD_SRC/.afbus-tip"
		tree_key "$dsc" >"$SD_OBJ/.afbus-tree-key"
		return 0
	fi
	: >"$LOG"
	dsc=$(fetch_source)
	key=$(build_key "$dsc")
	if [ $dev = 0 ] && [ "$(cat "$SD_STAGE/.key" 2>/dev/null)" = "$key" ]; then
		msg "sd-bus with afbus: is up to date ($SD_STAGE, systemd $version)"
		return 0
	fi
	if [ $dev = 0 ] && [ "$(cat "$SD_OBJ/.afbus-tree-key" 2>/dev/null)" != "$(tree_key "$dsc")" ]; then
		prepare_tree "$dsc"
	fi
	[ -f "$SD_OBJ/build.ninja" ] || configure
	[ $dev = 1 ] || tree_key "$dsc" >"$SD_OBJ/.afbus-tree-key"
	build
	if [ $dev = 0 ]; then
		echo "$key" >"$SD_STAGE/.key"
	fi
	msg "sd-bus with afbus: built in $((SECONDS - start)) s ($SD_STAGE, systemd $version)"
}

main
