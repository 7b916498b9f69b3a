#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's scripts/checkpatch.pl --strict on every patch of
# kernel-patches/series (not on the cover letters, which are no patches).
# Fails on any ERROR, WARNING or CHECK that is not listed as a false
# positive in kernel-patches/README, section "## checkpatch false
# positives", as lines of the form
#   - PATCH-FILE TYPE: text
# meaning: in PATCH-FILE (its path in kernel-patches/, as the series
# file names it, e.g. core/0002-net-bus-add-the-AF_BUS-socket-family.patch;
# or `*` for any), a report of checkpatch type TYPE (as shown by
# --show-types) whose message contains `text`.
set -eu
. "$(dirname "$0")/common.sh"

README=$KERNEL_PATCHES/README

# A tree that has scripts/checkpatch.pl: the build tree, else the
# developer tree (only read), else a freshly made build tree.
find_tree() {
	local t
	for t in "$KERNEL_SRC" "$AFBUS_BUILD/linux"; do
		[ -f "$t/scripts/checkpatch.pl" ] && { echo "$t"; return; }
	done
	"$(dirname "$0")/kernel-tree.sh" sync "$KERNEL_SRC" >&2
	echo "$KERNEL_SRC"
}

# The accepted reports: lines "PATCH TYPE text" from the README.
false_positives() {
	[ -f "$README" ] || return 0
	awk '/^## / {on = ($0 ~ /^## checkpatch false positives/)}
	     on && /^- [^ ]+ [A-Z_]+:/ {
		sub(/^- /, ""); f = $1; t = $2; sub(/:$/, "", t)
		$1 = ""; $2 = ""; sub(/^ +/, "")
		print f "\t" t "\t" $0
	     }' "$README"
}

# is_false_positive PATCH TYPE MESSAGE
is_false_positive() {
	local f t text
	while IFS=$'\t' read -r f t text; do
		[ "$f" = "*" ] || [ "$f" = "$1" ] || continue
		[ "$t" = "$2" ] || continue
		case $3 in *"$text"*) return 0 ;; esac
	done < <(false_positives)
	return 1
}

main() {
	local tree p out type text bad=0 accepted=0 n=0

	"$(dirname "$0")/install-deps.sh"
	# checkpatch runs scripts/spdxcheck.py with the python3 in PATH;
	# use Debian's, which has the ply and git modules it imports.
	export PATH=/usr/bin:$PATH
	python3 -c 'import ply, git' ||
		die "spdxcheck.py needs python3-ply and python3-git"

	tree=$(find_tree)
	for p in $(series_patches); do
		n=$((n + 1))
		echo "=== checkpatch --strict $p"
		out=$(cd "$tree" && perl scripts/checkpatch.pl --strict --show-types \
			--no-color "$KERNEL_PATCHES/$p" || true)
		echo "$out"
		while IFS= read -r line; do
			[[ $line =~ ^(ERROR|WARNING|CHECK):([A-Z0-9_]+):\ (.*)$ ]] || continue
			type=${BASH_REMATCH[2]}
			text=${BASH_REMATCH[3]}
			if is_false_positive "$p" "$type" "$text"; then
				accepted=$((accepted + 1))
			else
				echo "!!! $p: ${BASH_REMATCH[1]}:$type: $text"
				bad=$((bad + 1))
			fi
		done <<<"$out"
	done
	echo "checkpatch: $n patch(es), $bad problem(s), $accepted accepted false positive(s)"
	[ "$bad" = 0 ]
}

main "$@"
