#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the commits pristine..HEAD of a developer kernel tree (default
# build/linux) back to kernel-patches/ as a `git format-patch` series,
# and rewrite kernel-patches/series to list them in order.
#
# Output is kept stable: no "[PATCH n/m]" numbering in subjects, no
# commit ids or git version, so re-exporting an unchanged commit gives a
# byte-identical file (which is then left alone).  Patch files no longer
# in the series are removed.
set -eu
. "$(dirname "$0")/common.sh"

TREE=${1:-$AFBUS_BUILD/linux}

[ -d "$TREE/.git" ] || die "$TREE is not a git tree (create it with 'make kernel-tree')"
git -C "$TREE" rev-parse -q --verify pristine >/dev/null ||
	die "$TREE has no 'pristine' tag"
[ -z "$(git -C "$TREE" rev-list --merges pristine..HEAD)" ] ||
	die "$TREE has merge commits after pristine; rebase them away first"
if ! git -C "$TREE" diff --quiet HEAD --; then
	msg "warning: $TREE has uncommitted changes; they are not exported"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

git -C "$TREE" format-patch -q --no-numbered --zero-commit --no-signature \
	--abbrev=12 -o "$tmp" pristine..HEAD

{
	echo "# Kernel patch series for AF_BUS, applied in this order with"
	echo "# 'git am' to Debian's $KERNEL_PKG ($(kernel_version "$TREE"))."
	echo "# Written by 'make kernel-patches' from $(basename "$TREE"); see README."
	(cd "$tmp" && ls -1 -- *.patch 2>/dev/null) || true
} >"$tmp/series"

changed=0
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || continue
	name=${f##*/}
	if ! cmp -s "$f" "$KERNEL_PATCHES/$name"; then
		cp "$f" "$KERNEL_PATCHES/$name"
		msg "wrote kernel-patches/$name"
		changed=$((changed + 1))
	fi
done
for f in "$KERNEL_PATCHES"/*.patch; do
	[ -e "$f" ] || continue
	if [ ! -e "$tmp/${f##*/}" ]; then
		rm -f "$f"
		msg "removed kernel-patches/${f##*/}"
		changed=$((changed + 1))
	fi
done
if ! cmp -s "$tmp/series" "$KERNEL_SERIES"; then
	cp "$tmp/series" "$KERNEL_SERIES"
	msg "wrote kernel-patches/series"
fi
msg "$(grep -vc '^#' "$tmp/series" || true) patch(es) in the series, $changed file(s) changed"
