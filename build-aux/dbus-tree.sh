#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Create the developer tree of the D-Bus fork (`make dbus-tree`; default
# build/dbus): Debian's dbus source tree, as build-aux/dbus-build.sh
# unpacks it (Debian's own patches applied), committed to git and tagged
# `upstream`, with dbus/series applied on top by `git am`, one commit
# per patch, on the branch `afbus`.  The project's new files are linked
# in where the build copies them (transport-afbus/dbus/* into dbus/,
# transport-afbus/bus/*, policy/bus-* and nfdbus/libnfdbus.[ch] into
# bus/), untracked and ignored, so that the tree reads as the fork's
# whole source and editing them edits the project's files.
#
# Fold a fix into the patch it belongs to with `git commit --fixup`
# and `git rebase -i --autosquash upstream`, then write the branch back
# with `make dbus-patches` (build-aux/dbus-patches.sh); dbus/README.
# Refuses to touch an existing tree.
set -eu
. "$(dirname "$0")/common.sh"

TREE=${1:-$AFBUS_BUILD/dbus}
DBUS_PATCHES=$AFBUS_TOP/dbus
DBUS_SERIES=$DBUS_PATCHES/series

if [ -e "$TREE" ]; then
	die "$TREE already exists; not touching it." \
		"Move it away (or use 'make dbus-patches' to save its commits" \
		"first) if you want a fresh tree."
fi

dsc=$("$AFBUS_TOP/build-aux/dbus-build.sh" --fetch-source)
version=$(basename "$dsc" .dsc)
version=${version#dbus_}

tmp=$TREE.tmp.$$
rm -rf "$tmp"
mkdir -p "$(dirname "$TREE")"
trap 'rm -rf "$tmp"' EXIT
msg "unpacking $(basename "$dsc")"
dpkg-source --no-check -x "$dsc" "$tmp" >/dev/null

(
	cd "$tmp"
	git init -q -b afbus
	git config gc.auto 0
	# quilt's state, and the project's files linked in below
	{
		echo "/.pc/"
		echo "# the AF_BUS project's files, linked in by dbus-tree.sh"
	} >.git/info/exclude
	# -f: whatever .gitignore files the tarball has, all of it
	git add -f -A -- . ':!.pc'
	kgit commit -q -m "Debian dbus $version (upstream)"
	git tag upstream
	for p in $(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
			"$DBUS_SERIES" | grep -v '^$'); do
		if ! kgit am -q --keep-cr "$DBUS_PATCHES/$p" >&2; then
			git am --abort || true
			die "dbus/$p does not apply to dbus $version"
		fi
	done
)

# The new files, as dbus-build.sh copies them, here as links.
link_in() {
	local dir=$1 f
	shift
	for f in "$@"; do
		[ -e "$f" ] || continue
		ln -s "$f" "$tmp/$dir/${f##*/}"
		echo "/$dir/${f##*/}" >>"$tmp/.git/info/exclude"
	done
}
link_in dbus "$AFBUS_TOP"/transport-afbus/dbus/*.[ch]
link_in bus "$AFBUS_TOP"/transport-afbus/bus/*.[ch] "$AFBUS_TOP"/policy/bus-*.[ch] \
	"$AFBUS_TOP"/nfdbus/libnfdbus.[ch]

mv "$tmp" "$TREE"
trap - EXIT
msg "created $TREE: dbus $version (tag upstream) + $(git -C "$TREE" rev-list --count upstream..afbus) patch(es) on branch afbus"
msg "commit your changes there (git commit --fixup for a patch's fix), then run 'make dbus-patches'"
