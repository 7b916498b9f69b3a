#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the commits upstream..HEAD of the D-Bus developer tree (default
# build/dbus, made by `make dbus-tree`) back to dbus/ as a
# `git format-patch` series, and rewrite dbus/series to list them in
# order (`make dbus-patches`; dbus/README).
#
# Output is kept stable: no "[PATCH n/m]" numbering in subjects, no
# commit ids or git version, abbreviated blob ids of a fixed length, so
# re-exporting an unchanged commit gives a byte-identical file (which
# is then left alone).  Patch files no longer in the series are removed.
set -eu
. "$(dirname "$0")/common.sh"

TREE=${1:-$AFBUS_BUILD/dbus}
DBUS_PATCHES=$AFBUS_TOP/dbus
DBUS_SERIES=$DBUS_PATCHES/series

[ -d "$TREE/.git" ] || die "$TREE is not a git tree (create it with 'make dbus-tree')"
git -C "$TREE" rev-parse -q --verify upstream >/dev/null ||
	die "$TREE has no 'upstream' tag"
[ -z "$(git -C "$TREE" rev-list --merges upstream..HEAD)" ] ||
	die "$TREE has merge commits after upstream; rebase them away first"
if ! git -C "$TREE" diff --quiet HEAD --; then
	msg "warning: $TREE has uncommitted changes; they are not exported"
fi
if git -C "$TREE" log --format=%s upstream..HEAD | grep -q '^\(fixup\|squash\)! '; then
	msg "warning: $TREE has fixup! or squash! commits; fold them first" \
		"(git rebase -i --autosquash upstream)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git -C "$TREE" -c diff.algorithm=myers -c diff.noprefix=false \
	-c diff.mnemonicPrefix=false -c diff.renames=true format-patch -q --no-numbered --zero-commit --no-signature \
	--abbrev=12 -o "$tmp" upstream..HEAD

{
	echo "# The D-Bus fork's patch series, applied in this order (patch -p1,"
	echo "# git am, or quilt) to Debian's dbus $(git -C "$TREE" log -1 --format=%s upstream |
		sed -n 's/^Debian dbus \([^ ]*\).*/\1/p') source tree."
	echo "# Written by 'make dbus-patches' from the developer tree; see README."
	(cd "$tmp" && ls -1 -- *.patch 2>/dev/null) || true
} >"$tmp/series"

changed=0
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || continue
	name=${f##*/}
	if ! cmp -s "$f" "$DBUS_PATCHES/$name"; then
		cp "$f" "$DBUS_PATCHES/$name"
		msg "wrote dbus/$name"
		changed=$((changed + 1))
	fi
done
for f in "$DBUS_PATCHES"/*.patch; do
	[ -e "$f" ] || continue
	if [ ! -e "$tmp/${f##*/}" ]; then
		rm -f "$f"
		msg "removed dbus/${f##*/}"
		changed=$((changed + 1))
	fi
done
if ! cmp -s "$tmp/series" "$DBUS_SERIES"; then
	cp "$tmp/series" "$DBUS_SERIES"
	msg "wrote dbus/series"
fi
msg "$(grep -vc '^#' "$tmp/series" || true) patch(es) in the series, $changed file(s) changed"
