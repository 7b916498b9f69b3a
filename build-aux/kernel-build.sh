#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest kernel (bzImage) and install its UAPI headers:
#   1. update build/kernel-src (pristine tarball + kernel-patches/series),
#   2. configure: tinyconfig, then kernel-patches/base.config and
#      kernel-patches/af_bus.config (optional) merged over it,
#   3. make bzImage in build/kernel-obj (out of tree, incremental),
#   4. make headers_install into build/kernel-headers.
# The result is keyed by a hash of its inputs; when none changed,
# nothing is done.
#
# Outputs: $KERNEL_OBJ/arch/x86/boot/bzImage, $KERNEL_HDR/include,
#          $KERNEL_HDR/.stamp (touched when the headers change).
#
# With --debug, kernel-patches/debug.config (sanitizers, lockdep,
# kmemleak) is merged last and the kernel is built in its own object
# directory, build/kernel-obj-debug, keyed by its own inputs; the UAPI
# headers are not installed again (they do not depend on the config).
# With --bench, the same with kernel-patches/bench.config (no test
# modules: the benchmark kernel of `make bench` and `make profile`) in
# build/kernel-obj-bench.
#
# With --system, the kernel of `make kernel-deb` and `run-qemu.sh
# --system`: Debian's own configuration for the release (the amd64
# config of the linux-config-6.1 package, of the same version as
# linux-source-6.1), with Debian's modules and AppArmor as the major LSM,
# then kernel-patches/af_bus.config and kernel-patches/system.config
# merged over it (AF_BUS built in, nfdbus a module, release VERSION-afbus),
# built as Debian builds it (`make all`: the image and the modules).
# Which of Debian's modules it builds depends on AFBUS_KERNEL_MODULES:
#   (unset)   the modules of kernel-patches/system.modules, the lsmod of
#             the system guest on Debian's own kernel (`make
#             localmodconfig`): the system guest's and CI's kernel, in
#             build/kernel-obj-system
#   full      all of Debian's modules: the package a user installs on
#             any machine, in build/kernel-obj-system-full
#   FILE      the modules of FILE, the output of `lsmod` on the machine
#             the kernel is for, in build/kernel-obj-system-local
#
# With --kcsan, kernel-patches/kcsan.config (the data-race detector, which
# excludes the debug kernel's KASAN) in build/kernel-obj-kcsan, booted by
# `run-qemu.sh --kcsan` on demand.  With --kcsan-strict, kcsan.config then
# kernel-patches/kcsan-strict.config (KCSAN's strict mode: a kernel of its
# own, since weak memory modelling instruments every object) in
# build/kernel-obj-kcsan-strict, booted by `run-qemu.sh --kcsan-strict`.
set -eu
. "$(dirname "$0")/common.sh"

FRAGMENTS="$KERNEL_PATCHES/base.config"
[ -f "$KERNEL_PATCHES/af_bus.config" ] &&
	FRAGMENTS="$FRAGMENTS $KERNEL_PATCHES/af_bus.config"

# A variant (--debug, --kcsan, --kcsan-strict, --bench, --system) has its own
# object directory and log, and installs no UAPI headers.
VARIANT=
case ${1:-} in
--debug|--kcsan|--bench)
	VARIANT=${1#--}
	FRAGMENTS="$FRAGMENTS $KERNEL_PATCHES/$VARIANT.config"
	KERNEL_OBJ=$AFBUS_BUILD/kernel-obj-$VARIANT
	;;
--kcsan-strict)
	VARIANT=kcsan-strict
	FRAGMENTS="$FRAGMENTS $KERNEL_PATCHES/kcsan.config $KERNEL_PATCHES/kcsan-strict.config"
	KERNEL_OBJ=$AFBUS_BUILD/kernel-obj-$VARIANT
	;;
--system)
	VARIANT=system
	FRAGMENTS="$KERNEL_PATCHES/af_bus.config $KERNEL_PATCHES/system.config"
	system_kernel_variant
	KERNEL_OBJ=$SYSTEM_KERNEL_OBJ
	[ -f "$DEBIAN_KERNEL_CONFIG" ] || die "$DEBIAN_KERNEL_CONFIG is missing;" \
		"install it with: apt-get install -y linux-config-6.1"
	[ -z "$SYSTEM_MODULES" ] || [ -f "$SYSTEM_MODULES" ] ||
		die "no module list $SYSTEM_MODULES (AFBUS_KERNEL_MODULES)"
	;;
esac
# The system kernel's release is VERSION-afbus (CONFIG_LOCALVERSION), as
# its package names it: without a LOCALVERSION in the environment the
# kernel's scripts/setlocalversion appends "+" for a git source tree.
[ "$VARIANT" = system ] && export LOCALVERSION=


BZIMAGE=$KERNEL_OBJ/arch/x86/boot/bzImage
KEY_FILE=$KERNEL_OBJ/.afbus-build-key
LOG=$AFBUS_BUILD/kernel-build.log
[ -n "$VARIANT" ] && LOG=$AFBUS_BUILD/kernel-build-$VARIANT.log

# Hash of every input of the build.
build_key() {
	{
		series_hash
		for f in $FRAGMENTS; do echo "== $f"; cat "$f"; done
		if [ "$VARIANT" = system ]; then
			echo "== Debian's configuration"
			xz -dc "$DEBIAN_KERNEL_CONFIG"
			echo "== modules"
			[ -z "$SYSTEM_MODULES" ] || awk '{print $1}' "$SYSTEM_MODULES" | sort
		fi
		sha256sum <"$0"
		gcc --version | head -1
	} | sha256sum | cut -d' ' -f1
}

kmake() { kernel_make "$KERNEL_SRC" "$KERNEL_OBJ" "$@"; }

# Fail if a symbol requested by a fragment is not in the final .config.
check_config() {
	local config=$KERNEL_OBJ/.config bad=0 sym val
	declare -A want
	for f in $FRAGMENTS; do
		while read -r sym val; do
			want[$sym]=$val
		done < <(sed -n -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)/\1 \2/p' \
				-e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set/\1 n/p' "$f")
	done
	for sym in "${!want[@]}"; do
		val=${want[$sym]}
		if [ "$val" = n ]; then
			grep -q "^$sym=" "$config" || continue
		else
			grep -qxF "$sym=$val" "$config" && continue
		fi
		msg "config: requested $sym=$val, but .config has:" \
			"$(grep -E "^$sym=|^# $sym is not set" "$config" || echo '(nothing)')"
		bad=1
	done
	[ $bad = 0 ] || die "kernel config lost requested symbols (see above;" \
		"a dependency is probably missing from the fragment)"
}

# The system kernel: Debian's configuration, trimmed to a module list
# by `make localmodconfig` (which keeps what is built in), then the
# fragments over it and the defaults of the symbols they bring.
configure_system() {
	msg "configuring: Debian's ${DEBIAN_KERNEL_CONFIG##*/}${SYSTEM_MODULES:+ with the modules of ${SYSTEM_MODULES//$AFBUS_TOP\//}} + ${FRAGMENTS//$AFBUS_TOP\//}"
	xz -dc "$DEBIAN_KERNEL_CONFIG" >"$KERNEL_OBJ/.config"
	kmake olddefconfig >>"$LOG" 2>&1 || die "make olddefconfig failed; see $LOG"
	if [ -n "$SYSTEM_MODULES" ]; then
		kmake LSMOD="$SYSTEM_MODULES" localmodconfig </dev/null >>"$LOG" 2>&1 ||
			die "make localmodconfig failed; see $LOG"
	fi
	(cd "$KERNEL_SRC" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		scripts/kconfig/merge_config.sh -m -O "$KERNEL_OBJ" \
		"$KERNEL_OBJ/.config" $FRAGMENTS) >>"$LOG" 2>&1 ||
		die "merge_config.sh failed; see $LOG"
	kmake olddefconfig >>"$LOG" 2>&1 || die "make olddefconfig failed; see $LOG"
	check_config
}

configure() {
	[ "$VARIANT" = system ] && { configure_system; return; }
	msg "configuring: tinyconfig + ${FRAGMENTS//$AFBUS_TOP\//}"
	kmake tinyconfig >>"$LOG" 2>&1
	(cd "$KERNEL_SRC" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		scripts/kconfig/merge_config.sh -n -O "$KERNEL_OBJ" \
		"$KERNEL_OBJ/.config" $FRAGMENTS) >>"$LOG" 2>&1 ||
		die "merge_config.sh failed; see $LOG"
	check_config
}

main() {
	local key start target

	# One build at a time uses build/kernel-src: another build's sync
	# would reset the tree under this one's compiler (the test, debug
	# and bench kernels all build from it).
	mkdir -p "$AFBUS_BUILD"
	exec 9>"$AFBUS_BUILD/kernel-src.lock"
	if ! flock -n 9; then
		msg "waiting for another kernel build to finish with $KERNEL_SRC"
		flock 9
	fi
	"$(dirname "$0")/kernel-tree.sh" sync "$KERNEL_SRC"

	key=$(build_key)
	if [ -f "$BZIMAGE" ] && { [ -n "$VARIANT" ] || [ -f "$KERNEL_HDR/.stamp" ]; } &&
	   [ "$(cat "$KEY_FILE" 2>/dev/null)" = "$key" ]; then
		msg "kernel is up to date ($BZIMAGE)"
		return 0
	fi

	# Objects built from another tarball would have newer timestamps
	# than the new sources: start that object dir afresh.
	if [ "$(cat "$KERNEL_OBJ/.afbus-tarball" 2>/dev/null)" != "$(tarball_id)" ]; then
		rm -rf "$KERNEL_OBJ"
		[ -n "$VARIANT" ] || rm -rf "$KERNEL_HDR"
	fi
	mkdir -p "$KERNEL_OBJ"
	tarball_id > "$KERNEL_OBJ/.afbus-tarball"
	rm -f "$KEY_FILE"
	: > "$LOG"

	start=$(date +%s)
	configure
	# the system kernel: its modules too, as bindeb-pkg packages them
	target=bzImage
	[ "$VARIANT" = system ] && target=all
	msg "building $target with $(nproc) jobs (log: $LOG)"
	if ! kmake -j"$(nproc)" $target >>"$LOG" 2>&1; then
		grep -E 'error|Error' "$LOG" | tail -n 30 >&2 || true
		die "kernel build failed; full log in $LOG"
	fi
	if [ -n "$VARIANT" ]; then
		echo "$key" > "$KEY_FILE"
		msg "$VARIANT kernel built in $(( $(date +%s) - start ))s: $BZIMAGE"
		return 0
	fi
	msg "installing UAPI headers into $KERNEL_HDR"
	rm -rf "$KERNEL_HDR"
	kmake headers_install INSTALL_HDR_PATH="$KERNEL_HDR" >>"$LOG" 2>&1 ||
		die "headers_install failed; see $LOG"
	touch "$KERNEL_HDR/.stamp"
	echo "$key" > "$KEY_FILE"
	msg "kernel built in $(( $(date +%s) - start ))s: $BZIMAGE"
}

main "$@"
