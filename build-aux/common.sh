# SPDX-License-Identifier: GPL-2.0
# Shared settings and helpers for the AF_BUS build scripts.
# Source this file; it sets no shell options of its own.

# Top of the source tree (this file lives in build-aux/).
AFBUS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Everything generated goes below $AFBUS_BUILD (ignored by git).
AFBUS_BUILD=${AFBUS_BUILD:-$AFBUS_TOP/build}

KERNEL_TARBALL=${AFBUS_KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
KERNEL_PKG=linux-source-6.1
KERNEL_PATCHES=$AFBUS_TOP/kernel-patches
KERNEL_SERIES=$KERNEL_PATCHES/series

# Build-managed kernel trees (never the developer tree build/linux).
# Deliberately not taken from the environment, where KERNEL_SRC often
# names some other tree.
KERNEL_SRC=$AFBUS_BUILD/kernel-src
KERNEL_OBJ=$AFBUS_BUILD/kernel-obj
KERNEL_HDR=$AFBUS_BUILD/kernel-headers
# The debug kernel (kernel-patches/debug.config), built from the same tree.
KERNEL_OBJ_DEBUG=$AFBUS_BUILD/kernel-obj-debug
# The benchmark kernel (kernel-patches/bench.config: no test modules).
KERNEL_OBJ_BENCH=$AFBUS_BUILD/kernel-obj-bench

# The system kernel (kernel-build.sh --system, kernel-deb.sh) starts
# from Debian's configuration for the release: the amd64 flavour's
# config of the linux-config-6.1 package (build-aux/packages.txt).
DEBIAN_KERNEL_CONFIG=/usr/src/linux-config-6.1/config.amd64_none_amd64.xz

# system_kernel_variant: from AFBUS_KERNEL_MODULES (kernel-build.sh),
# SYSTEM_MODULES, the module list the kernel is trimmed to (empty: all of
# Debian's modules), and where it is built and packaged:
# SYSTEM_KERNEL_OBJ, SYSTEM_KERNEL_DEBS.
system_kernel_variant() {
	local m=${AFBUS_KERNEL_MODULES:-} suffix
	case $m in
	"")	SYSTEM_MODULES=$KERNEL_PATCHES/system.modules suffix= ;;
	full)	SYSTEM_MODULES= suffix=-full ;;
	*)	SYSTEM_MODULES=$(realpath "$m") suffix=-local ;;
	esac
	SYSTEM_KERNEL_OBJ=$AFBUS_BUILD/kernel-obj-system$suffix
	SYSTEM_KERNEL_DEBS=$AFBUS_BUILD/kernel-debs$suffix
}

# The kernel is always built for x86_64, whatever `uname -m` says.
export ARCH=x86_64

# kernel_make SRC OBJ ARGS...: the kernel's own make, out of tree in OBJ,
# without the make flags of a calling make.
kernel_make() {
	local src=$1 obj=$2
	shift 2
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$src" O="$obj" ARCH=x86_64 "$@"
}

msg() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# Print the patch files named in the series, one per line, in order
# (comments and blank lines dropped), as paths relative to
# kernel-patches/: SERIES/NNNN-subject.patch, each directory one series
# of patches sent together (core, netfilter, lsm; kernel-patches/README).
# Prints nothing if there is no series file.
series_patches() {
	[ -f "$KERNEL_SERIES" ] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
		"$KERNEL_SERIES" | grep -v '^$' || true
}

# Print the names of the series (the directories of series_patches), in
# the order they apply.  Patches named without a directory belong to no
# series.
series_names() {
	series_patches | sed -n 's|/.*||p' | awk '!seen[$0]++'
}

# Identify the kernel tarball: the Debian package version when it is
# installed, otherwise a checksum of the tarball itself.
tarball_id() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$KERNEL_PKG" 2>/dev/null || true)
	if [ -n "$v" ] && [ "$KERNEL_TARBALL" = /usr/src/$KERNEL_PKG.tar.xz ]; then
		echo "$KERNEL_PKG $v"
	else
		sha256sum "$KERNEL_TARBALL" | cut -d' ' -f1
	fi
}

# Hash of everything the patched source tree depends on: the tarball
# and the series with the content of every patch in it.
series_hash() {
	local p
	{
		tarball_id
		for p in $(series_patches); do
			[ -f "$KERNEL_PATCHES/$p" ] ||
				die "kernel-patches/series names $p, which does not exist"
			echo "== $p"
			cat "$KERNEL_PATCHES/$p"
		done
	} | sha256sum | cut -d' ' -f1
}

# "6.1.192" from a kernel tree's Makefile.
kernel_version() {
	awk '/^VERSION =/ {v=$3} /^PATCHLEVEL =/ {p=$3} /^SUBLEVEL =/ {s=$3}
	     END {print v "." p "." s}' "$1/Makefile"
}

# Run git with an identity, so that `git am`/`git commit` work on
# machines without a configured user.
kgit() {
	if git config user.email >/dev/null 2>&1; then
		git "$@"
	else
		git -c user.name="AF_BUS build" -c user.email=afbus-build@localhost "$@"
	fi
}
