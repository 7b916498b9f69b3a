#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Writes the systemd/ series from build/systemd-src (systemd/README): one
# `git format-patch` file per commit after the tag "debian" (Debian's
# source as build-aux/systemd-build.sh unpacked it), and the series file
# naming them in order.  The patches that were there before are removed
# first (the series is the branch, not a history).  Then the build tree
# is marked as holding the series, so that the next build does not apply
# it again.
set -eu
. "$(dirname "$0")/common.sh"

SD_SRC=$AFBUS_BUILD/systemd-src
SD_SERIES_DIR=$AFBUS_TOP/systemd

[ -d "$SD_SRC/.git" ] || die "no $SD_SRC: run build-aux/systemd-build.sh first"
[ -z "$(kgit -C "$SD_SRC" status --porcelain --untracked-files=no)" ] ||
	die "$SD_SRC has changes not committed"

mkdir -p "$SD_SERIES_DIR"
rm -f "$SD_SERIES_DIR"/[0-9][0-9][0-9][0-9]-*.patch
kgit -C "$SD_SRC" format-patch -q --no-numbered --zero-commit --no-signature \
	-o "$SD_SERIES_DIR" refs/tags/debian..HEAD
{
	echo "# sd-bus with the afbus: transport: patches against Debian's systemd"
	echo "# (build-aux/systemd-build.sh applies them with git am, in this order)"
	(cd "$SD_SERIES_DIR" && ls [0-9][0-9][0-9][0-9]-*.patch)
} >"$SD_SERIES_DIR/series"
msg "wrote $(grep -c '\.patch$' "$SD_SERIES_DIR/series") patches to $SD_SERIES_DIR"
"$(dirname "$0")/systemd-build.sh" --version "$(cat "$SD_SRC/.afbus-version")" --adopt
