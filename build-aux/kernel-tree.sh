#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Create or update a patched kernel source tree: the Debian tarball
# committed to git and tagged `pristine`, with kernel-patches/series
# applied on top by `git am`, one commit per patch.  Each series (a
# directory of kernel-patches/: core, netfilter, lsm) ends at a branch
# of its name, series/NAME, the last one checked out: the branches say
# where each series ends, and `git rebase` keeps them there
# (rebase.updateRefs), so that `make kernel-patches` can write each
# series back to its directory.
#
#   kernel-tree.sh sync [DIR]  build-managed tree (default build/kernel-src):
#                              created when missing; when the tarball or
#                              the series changed, reset to pristine and
#                              re-applied, keeping the timestamps of
#                              files whose content did not change, so an
#                              out-of-tree object dir rebuilds incrementally.
#   kernel-tree.sh new [DIR]   developer tree (default build/linux): created
#                              once; refuses to touch an existing DIR.
set -eu
. "$(dirname "$0")/common.sh"

# File inside .git recording which tarball+series the tree holds.
stamp_file() { echo "$1/.git/afbus-series.sha256"; }

# Extract the tarball into a new git repository at $1 and tag it.
create_pristine() {
	local dir=$1 tmp=$1.tmp.$$ ver

	[ -f "$KERNEL_TARBALL" ] || die "$KERNEL_TARBALL is missing;" \
		"install it with: apt-get install -y $KERNEL_PKG"
	msg "extracting $KERNEL_TARBALL into $dir"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	tar -xJf "$KERNEL_TARBALL" -C "$tmp" --strip-components=1
	ver=$(kernel_version "$tmp")

	msg "committing the pristine $ver tree (takes a minute)"
	(
		cd "$tmp"
		git init -q
		# Debian's top-level .gitignore ignores everything: add with -f.
		# No automatic gc: it would repack 80k loose objects right after.
		git config gc.auto 0
		git add -f -A .
		kgit commit -q -m "Debian $KERNEL_PKG $ver (pristine)"
		git tag pristine
	)
	tarball_id > "$tmp/.git/afbus-tarball"
	mv "$tmp" "$dir"
	trap - EXIT
}

# Apply every patch of the series to the tree in $1 with `git am`, on
# the branch series/NAME of the patch's series, each branch made where
# the previous series ends.  On failure, says which patch and returns 1.
apply_series() {
	local dir=$1 p name series=
	for p in $(series_patches); do
		name=${p%/*}
		if [ "$name" != "$p" ] && [ "$name" != "$series" ]; then
			series=$name
			git -C "$dir" checkout -q -B "series/$series" || return 1
		fi
		if ! (cd "$dir" && kgit am -q --keep-cr "$KERNEL_PATCHES/$p" >&2); then
			(cd "$dir" && git am --abort) || true
			msg "error: kernel-patches/$p does not apply to Linux" \
				"$(kernel_version "$dir") (from $(tarball_id))"
			return 1
		fi
	done
}

# Copy the files changed since pristine to $2, keeping their mtimes.
save_patched_files() {
	local dir=$1 save=$2
	mkdir -p "$save"
	(cd "$dir" && git diff --name-only -z pristine HEAD -- |
		xargs -0 -r cp -p --parents -t "$save" 2>/dev/null) || true
}

# Give back the old timestamp to every saved file whose content is
# unchanged after the re-application, so make does not rebuild it.
restore_mtimes() {
	local dir=$1 save=$2 f
	(cd "$save" && find . -type f -print0) |
	while IFS= read -r -d '' f; do
		if cmp -s "$save/$f" "$dir/$f"; then
			touch -r "$save/$f" "$dir/$f"
		fi
	done
}

cmd_sync() {
	local dir=${1:-$KERNEL_SRC} want have save status

	# Only trees made by this command are ever reset or removed.
	if [ -e "$dir" ] && [ ! -f "$dir/.git/afbus-managed" ]; then
		die "$dir is not a build-managed tree (no .git/afbus-managed);" \
			"refusing to reset it"
	fi
	want=$(series_hash)
	# A different tarball means a different pristine: start over.
	if [ -d "$dir/.git" ] &&
	   [ "$(cat "$dir/.git/afbus-tarball" 2>/dev/null)" != "$(tarball_id)" ]; then
		msg "$dir was made from another tarball: recreating it"
		rm -rf "$dir"
	fi
	if [ ! -d "$dir/.git" ]; then
		mkdir -p "$(dirname "$dir")"
		create_pristine "$dir"
		touch "$dir/.git/afbus-managed"
	elif ! git -C "$dir" rev-parse -q --verify pristine >/dev/null; then
		die "$dir exists but has no 'pristine' tag; remove it to rebuild"
	fi

	have=$(cat "$(stamp_file "$dir")" 2>/dev/null || true)
	[ "$have" = "$want" ] && return 0

	msg "applying kernel-patches/series to $dir"
	save=$(mktemp -d)
	save_patched_files "$dir" "$save"
	rm -f "$(stamp_file "$dir")"
	(cd "$dir" && { git am --abort >/dev/null 2>&1 || true; } &&
		git reset -q --hard pristine && git clean -qfdx)
	# Timestamps are restored even when a patch fails, so that the
	# files of the patches that did apply are not rebuilt needlessly.
	status=0
	apply_series "$dir" || status=1
	restore_mtimes "$dir" "$save"
	rm -rf "$save"
	[ $status = 0 ] || exit 1
	echo "$want" > "$(stamp_file "$dir")"
	msg "$dir: Linux $(kernel_version "$dir") with $(series_patches | wc -l) patch(es)"
}

cmd_new() {
	local dir=${1:-$AFBUS_BUILD/linux}
	if [ -e "$dir" ]; then
		die "$dir already exists; not touching it." \
			"Move it away (or use 'make kernel-patches' to save" \
			"its commits first) if you want a fresh tree."
	fi
	mkdir -p "$(dirname "$dir")"
	create_pristine "$dir"
	# `git rebase -i pristine` moves the series/* branches with the
	# commits they point to (git 2.38 and later)
	git -C "$dir" config rebase.updateRefs true
	apply_series "$dir" || exit 1
	msg "created $dir: pristine + $(series_patches | wc -l) patch(es)" \
		"in $(series_names | wc -l) series ($(series_names | tr '\n' ' ' | sed 's/ $//'))"
	msg "commit your changes there, then run 'make kernel-patches'"
}

case ${1:-} in
sync) shift; cmd_sync "$@" ;;
new)  shift; cmd_new "$@" ;;
*)    echo "usage: $0 sync|new [DIR]" >&2; exit 2 ;;
esac
