#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs sd-bus with the afbus: transport (build/systemd-stage, from
# build-aux/systemd-build.sh; systemd/README) into the Debian 12 system
# whose root is ROOT (/ for the running one), the way a package would
# replace Debian's files without losing them:
#   - each of libsystemd.so.0.35.0 (libsystemd0), libsystemd-shared-252.so
#     (libsystemd-shared, the library PID 1, the services and the tools
#     link), /bin/systemctl (systemd) and pam_systemd.so (libpam-systemd),
#     which Debian links with their own copy of sd-bus, is moved aside
#     with dpkg-divert --rename (to NAME.debian) and the stage's put in
#     its place;
#   - first it checks that the stage was built from the very version of
#     Debian's systemd that ROOT has (the shared library is private: its
#     ABI is that version's) and that each library exports every symbol
#     Debian's exports;
#   - the bus services (BusName=) that sandbox their sockets get a drop-in,
#     /usr/lib/systemd/system/UNIT.d/afbus.conf: RestrictAddressFamilies=
#     AF_BUS where their allow-list has AF_UNIX (the same bus, over another
#     family: 0004 lets PID 1 parse the name), and PrivateNetwork=no for
#     the bus services (BusName=) with PrivateNetwork=yes, since a bus
#     belongs to the network namespace of its master: in a private one,
#     connect() finds no bus (af_bus.rst, "Namespaces and permissions");
#     their address family allow-list still keeps them off any network,
#     but they see the host's abstract unix sockets (systemd/README);
#   - with --tests, also the sd-bus tests of the stage in
#     /usr/lib/systemd/tests/afbus.
# Running it again replaces the libraries with the stage's (the diversions
# stay).  To go back:
#   build-aux/systemd-install.sh --remove ROOT
# removes the libraries and the diversions, which puts Debian's back.
# Needs root (dpkg-divert in ROOT, through chroot unless ROOT is /).
set -eu
. "$(dirname "$0")/common.sh"

SD_STAGE=$AFBUS_BUILD/systemd-stage
# "PATH (as dpkg knows it) PATH-IN-THE-STAGE"
FILES="/usr/lib/x86_64-linux-gnu/libsystemd.so.0.35.0 /usr/lib/x86_64-linux-gnu/libsystemd.so.0.35.0
/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so /usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so
/bin/systemctl /usr/bin/systemctl
/lib/x86_64-linux-gnu/security/pam_systemd.so /usr/lib/x86_64-linux-gnu/security/pam_systemd.so"
TESTS_DIR=/usr/lib/systemd/tests/afbus
UNIT_DIR=/usr/lib/systemd/system
DROPIN_MARK="# sd-bus with afbus: (build-aux/systemd-install.sh)"

tests=0 remove=0
while [ $# -gt 1 ]; do
	case $1 in
	--tests) tests=1 ;;
	--remove) remove=1 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
[ $# = 1 ] || die "usage: ${0##*/} [--tests] [--remove] ROOT"
ROOT=${1%/}

in_root() {
	if [ -z "$ROOT" ]; then
		"$@"
	else
		chroot "$ROOT" "$@"
	fi
}

# exported SYMBOL names of a shared object, one per line, sorted
exports() {
	nm -D --defined-only "$1" | awk '{ print $3 }' | sed 's/@.*//' | sort -u
}

if [ $remove = 1 ]; then
	echo "$FILES" | while read -r lib _; do
		if in_root dpkg-divert --list "$lib" | grep -q .; then
			rm -f "$ROOT$lib"
			in_root dpkg-divert --quiet --local --rename --remove "$lib"
		fi
	done
	rm -rf "$ROOT$TESTS_DIR"
	for f in "$ROOT$UNIT_DIR"/*.d/afbus.conf; do
		[ -f "$f" ] && grep -qxF "$DROPIN_MARK" "$f" || continue
		rm -f "$f"
		rmdir --ignore-fail-on-non-empty "${f%/*}"
	done
	exit 0
fi

[ -f "$SD_STAGE/version" ] || die "nothing in $SD_STAGE: run build-aux/systemd-build.sh"
want=$(cat "$SD_STAGE/version")
have=$(in_root dpkg-query -W -f '${Version}' libsystemd-shared 2>/dev/null) ||
	die "$ROOT/ has no libsystemd-shared package"
[ "$have" = "$want" ] ||
	die "$ROOT/ runs systemd $have, the stage is for $want: build-aux/systemd-build.sh --version $have"

while read -r lib staged; do
	ours=$SD_STAGE$staged
	[ -f "$ours" ] || die "$ours is missing"
	# Debian's: the diverted one if we replaced it before
	debian=$ROOT$lib
	in_root dpkg-divert --list "$lib" | grep -q . && debian=$ROOT$lib.debian
	[ -f "$debian" ] || die "$ROOT/ has no $lib"
	mode=0755
	case $lib in
	*.so*)
		mode=0644
		missing=$(comm -23 <(exports "$debian") <(exports "$ours"))
		[ -z "$missing" ] || die "${lib##*/} lacks symbols of Debian's: $missing" ;;
	esac
	in_root dpkg-divert --quiet --local --rename --divert "$lib.debian" --add "$lib"
	cp "$ours" "$ROOT$lib.afbus.tmp"
	chmod $mode "$ROOT$lib.afbus.tmp"
	mv "$ROOT$lib.afbus.tmp" "$ROOT$lib"
done <<EOF
$FILES
EOF

# The drop-ins of the sandboxed services (see the top).
for unit in "$ROOT$UNIT_DIR"/*.service; do
	# (a bus service, by its file, not by an alias)
	[ -f "$unit" ] && [ ! -L "$unit" ] && grep -q '^BusName=' "$unit" || continue
	families=" $(sed -n 's/^RestrictAddressFamilies=//p' "$unit" | tr '\n' ' ') "
	allow=0 private=0
	case $families in *"~"*) ;; *" AF_UNIX "*) allow=1 ;; esac
	# (any of systemd's spellings of true: accountsservice says "true")
	grep -qiE '^PrivateNetwork=(yes|true|on|1)$' "$unit" && private=1
	[ $allow = 1 ] || [ $private = 1 ] || continue
	mkdir -p "$unit.d"
	{
		echo "$DROPIN_MARK"
		echo "[Service]"
		[ $allow = 0 ] || echo "RestrictAddressFamilies=AF_BUS"
		[ $private = 0 ] || echo "PrivateNetwork=no"
	} >"$unit.d/afbus.conf"
done

if [ $tests = 1 ]; then
	rm -rf "$ROOT$TESTS_DIR"
	mkdir -p "$ROOT$TESTS_DIR"
	cp "$SD_STAGE$TESTS_DIR"/* "$ROOT$TESTS_DIR/"
fi
msg "sd-bus with afbus: (systemd $want) installed in ${ROOT:-/}"
