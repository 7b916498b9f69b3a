#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the commits pristine..HEAD of a developer kernel tree (default
# build/linux) back to kernel-patches/ as `git format-patch` series, and
# rewrite kernel-patches/series to list them in order.
#
# The tree holds one branch per series, series/NAME, each ending where
# its series ends (`make kernel-tree` makes them, and `git rebase` moves
# them along with rebase.updateRefs): the commits of series/core go to
# kernel-patches/core/, those after it up to series/netfilter to
# kernel-patches/netfilter/, and so on; HEAD is the last series' branch.
# Each directory gets its cover letter, 0000-cover-letter.patch: the
# subject and text of the one already there (or a template, for a new
# series), with the shortlog and diffstat of the series as
# `git format-patch --cover-letter` writes them.  A tree without series/*
# branches is written as one series, to kernel-patches/ itself.
#
# Output is kept stable: no "[PATCH n/m]" numbering in subjects, no
# commit ids or git version, so re-exporting an unchanged commit gives a
# byte-identical file (which is then left alone).  Patch files no longer
# in the series are removed.
set -eu
. "$(dirname "$0")/common.sh"

TREE=${1:-$AFBUS_BUILD/linux}

tgit() { git -C "$TREE" "$@"; }

[ -d "$TREE/.git" ] || die "$TREE is not a git tree (create it with 'make kernel-tree')"
tgit rev-parse -q --verify pristine >/dev/null ||
	die "$TREE has no 'pristine' tag"
[ -z "$(tgit rev-list --merges pristine..HEAD)" ] ||
	die "$TREE has merge commits after pristine; rebase them away first"
if ! tgit diff --quiet HEAD --; then
	msg "warning: $TREE has uncommitted changes; they are not exported"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The series branches, in the order they apply ("NAME COMMIT" lines):
# ordered by how many commits they hold, each an ancestor of the next,
# the last at HEAD.
series_branches() {
	local b prev=pristine name
	tgit for-each-ref --format='%(refname:short)' 'refs/heads/series/*' |
	while read -r b; do
		echo "$(tgit rev-list --count "pristine..$b") $b"
	done | sort -n | while read -r _ b; do
		tgit merge-base --is-ancestor "$prev" "$b" ||
			die "$b does not hold $prev: the series/* branches" \
				"must follow each other (see kernel-patches/README)"
		name=${b#series/}
		[ "$(tgit rev-parse "$prev")" != "$(tgit rev-parse "$b")" ] ||
			die "$b is empty (it is where $prev is)"
		echo "$name $b"
		prev=$b
	done
}

# cover_letter NAME FROM TO: the cover letter of the series FROM..TO, with
# the subject and text of kernel-patches/NAME/0000-cover-letter.patch.
cover_letter() {
	local name=$1 from=$2 to=$3 dir=$tmp/$name
	local old=$KERNEL_PATCHES/$name/0000-cover-letter.patch
	local n first last title
	n=$(tgit rev-list --count "$from..$to")
	first=$(ls "$dir"/0001-*.patch)
	last=$(ls "$dir"/[0-9]*.patch | tail -n 1)
	if [ -f "$old" ]; then
		title=$(sed -n 's/^Subject: \[PATCH[^]]*\] *//p' "$old" | head -n 1)
	else
		title='*** SUBJECT HERE ***'
		msg "warning: kernel-patches/$name/0000-cover-letter.patch is new:" \
			"write its subject and text"
	fi
	echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
	# From: as the first patch has it (folded or not), Date: of the last
	awk '/^From: / {p = 1; print; next} p && /^[ \t]/ {print; next} {p = 0}' "$first"
	grep -m 1 '^Date: ' "$last"
	echo "Subject: [PATCH 0/$n] $title"
	echo
	if [ -f "$old" ]; then
		# the text: after the headers, up to the shortlog's first line
		awk 'body && /^[^ \t].* \([0-9]+\):$/ {exit}
		     body {print}
		     !body && /^$/ {body = 1}' "$old" |
			sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
	else
		echo '*** BLURB HERE ***'
	fi
	echo
	# the shortlog and diffstat, as format-patch --cover-letter has them
	tgit format-patch --stdout --cover-letter --no-numbered --zero-commit \
		--no-signature "$from..$to" |
		awk '/^\*\*\* BLURB HERE \*\*\*$/ {on = 1; getline; next}
		     on && /^From 0000000000000000000000000000000000000000 / {exit}
		     on {print}' |
		sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}

# export_series NAME FROM TO: format-patch FROM..TO into $tmp/NAME.
export_series() {
	local name=$1 from=$2 to=$3
	mkdir -p "$tmp/$name"
	tgit format-patch -q --no-numbered --zero-commit --no-signature \
		--abbrev=12 -o "$tmp/$name" "$from..$to"
	if [ "$name" != . ]; then
		cover_letter "$name" "$from" "$to" >"$tmp/$name/0000-cover-letter.patch.new"
		mv "$tmp/$name/0000-cover-letter.patch.new" "$tmp/$name/0000-cover-letter.patch"
	fi
}

{
	echo "# Kernel patch series for AF_BUS, applied in this order with"
	echo "# 'git am' to Debian's $KERNEL_PKG ($(kernel_version "$TREE"))."
	echo "# Written by 'make kernel-patches' from $(basename "$TREE"); see README."
} >"$tmp/series"

names=()
branches=$(series_branches)
if [ -n "$branches" ]; then
	last=$(echo "$branches" | tail -n 1 | cut -d' ' -f2)
	[ "$(tgit rev-parse HEAD)" = "$(tgit rev-parse "$last")" ] ||
		die "HEAD is not $last, the end of the last series:" \
			"commit on that branch (see kernel-patches/README)"
	prev=pristine
	while read -r name b; do
		export_series "$name" "$prev" "$b"
		names+=("$name")
		{
			echo
			echo "# $name: $(sed -n 's/^Subject: \[PATCH[^]]*\] *//p' \
				"$tmp/$name/0000-cover-letter.patch" | head -n 1)"
			(cd "$tmp" && ls -1 -- "$name"/[0-9]*.patch | grep -v '/0000-')
		} >>"$tmp/series"
		prev=$b
	done <<<"$branches"
else
	msg "no series/* branches in $TREE: writing one series to kernel-patches/"
	export_series . pristine HEAD
	names=(.)
	(cd "$tmp" && ls -1 -- *.patch) >>"$tmp/series"
fi

changed=0
for name in "${names[@]}"; do
	mkdir -p "$KERNEL_PATCHES/$name"
	for f in "$tmp/$name"/*.patch; do
		[ -e "$f" ] || continue
		rel=${f#"$tmp"/}
		rel=${rel#./}
		if ! cmp -s "$f" "$KERNEL_PATCHES/$rel"; then
			cp "$f" "$KERNEL_PATCHES/$rel"
			msg "wrote kernel-patches/$rel"
			changed=$((changed + 1))
		fi
	done
done
# Patch files of no series any more: in the series' directories, in
# directories of series that are gone, or at the top level.
for f in "$KERNEL_PATCHES"/*.patch "$KERNEL_PATCHES"/*/*.patch; do
	[ -e "$f" ] || continue
	rel=${f#"$KERNEL_PATCHES"/}
	[ -e "$tmp/$rel" ] && continue
	rm -f "$f"
	msg "removed kernel-patches/$rel"
	changed=$((changed + 1))
	rmdir "$(dirname "$f")" 2>/dev/null || true
done
if ! cmp -s "$tmp/series" "$KERNEL_SERIES"; then
	cp "$tmp/series" "$KERNEL_SERIES"
	msg "wrote kernel-patches/series"
fi
msg "$(grep -c '\.patch$' "$tmp/series" || true) patch(es) in" \
	"${#names[@]} series, $changed file(s) changed"
