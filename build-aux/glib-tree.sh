#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The developer tree of the glib/ series (glib/README, "Working on the
# series"): a git repository of Debian's glib2.0 source (Debian's patches
# applied) whose commits after the tag "debian" are the series.
#   glib-tree.sh new [DIR]     make DIR (default build/glib-dev) from the
#                              source package build-aux/glib-build.sh
#                              fetched, and git am the series into it
#   glib-tree.sh export [DIR]  glib/*.patch and glib/series anew from the
#                              commits after "debian" (git format-patch)
# Fix a patch with `git commit --fixup` and `git rebase -i --autosquash
# debian` in DIR, then export.
set -eu
. "$(dirname "$0")/common.sh"

GLIB_PATCHES=$AFBUS_TOP/glib
DIR=${2:-$AFBUS_BUILD/glib-dev}
GIT=(git -c user.name=AF_BUS -c user.email=afbus@localhost -c core.autocrlf=false)

new() {
	local dsc p
	[ ! -e "$DIR" ] || die "$DIR exists"
	dsc=$(ls "$AFBUS_BUILD"/glib-debian/glib2.0_*.dsc 2>/dev/null | sort -V | tail -n 1)
	[ -n "$dsc" ] || die "no source package in $AFBUS_BUILD/glib-debian (build-aux/glib-build.sh)"
	dpkg-source --no-check -x "$dsc" "$DIR" >/dev/null
	rm -rf "$DIR/.pc"
	(cd "$DIR" && "${GIT[@]}" init -q && "${GIT[@]}" add -A &&
		"${GIT[@]}" commit -q -m "$(basename "$dsc" .dsc) (Debian's patches applied)" &&
		"${GIT[@]}" tag debian)
	for p in $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$GLIB_PATCHES/series"); do
		(cd "$DIR" && "${GIT[@]}" am -q "$GLIB_PATCHES/$p") || die "git am $p failed in $DIR"
	done
	msg "$DIR: $(cd "$DIR" && git rev-list --count debian..HEAD) patches on tag debian"
}

export_series() {
	[ -d "$DIR/.git" ] || die "$DIR is not a developer tree (glib-tree.sh new)"
	rm -f "$GLIB_PATCHES"/*.patch
	(cd "$DIR" && git format-patch -q --no-signature --zero-commit --no-numbered \
		-o "$GLIB_PATCHES" debian..HEAD)
	(cd "$GLIB_PATCHES" && ls ./*.patch | sed 's|^\./||') >"$GLIB_PATCHES/series"
	msg "glib/: $(wc -l <"$GLIB_PATCHES/series") patches"
}

case ${1:-} in
new) new ;;
export) export_series ;;
*) die "usage: glib-tree.sh new|export [DIR]" ;;
esac
