#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check that the series is bisectable: build the guest kernel at every
# patch of kernel-patches/series, in order, each on top of the ones
# before it only.  Uses the guest configuration of the normal build
# (made first, by kernel-build.sh); a symbol that a later patch adds is
# simply absent at the earlier steps.  Every step after the first is
# incremental, but a patch that touches a widely included header costs
# nearly a full kernel build.
#
# Output: build/bisect-src (a clone of build/kernel-src), build/bisect-obj,
# and build/kernel-bisect.log.  Exit status 0 if every step built.
set -eu
. "$(dirname "$0")/common.sh"

SRC=$AFBUS_BUILD/bisect-src
OBJ=$AFBUS_BUILD/bisect-obj
LOG=$AFBUS_BUILD/kernel-bisect.log

kmake() { kernel_make "$SRC" "$OBJ" "$@"; }

main() {
	local commit subject n=0 p
	local -a patches

	"$(dirname "$0")/kernel-build.sh"

	rm -rf "$SRC"
	git clone -q --shared --no-checkout "$KERNEL_SRC" "$SRC"
	mkdir -p "$OBJ"
	: >"$LOG"

	mapfile -t patches < <(series_patches)
	for commit in $(git -C "$SRC" rev-list --reverse pristine..HEAD); do
		n=$((n + 1))
		subject=$(git -C "$SRC" log -1 --format=%s "$commit")
		p=${patches[n - 1]:-}
		msg "patch $n/${#patches[@]} (${p%%-*}): $subject"
		git -C "$SRC" checkout -q --force "$commit"
		cp "$KERNEL_OBJ/.config" "$OBJ/.config"
		kmake olddefconfig >>"$LOG" 2>&1
		kmake -j"$(nproc)" bzImage >>"$LOG" 2>&1 ||
			die "the kernel does not build at patch $n, $p ($subject); see $LOG"
	done
	[ $n -gt 0 ] || die "the series is empty"
	msg "all $n patches build on their own"
}

main "$@"
