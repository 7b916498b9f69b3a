#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The way back to Debian's packages (doc/install.md, "Going back"),
# as the last test of the boot: Debian's own dbus packages of
# the fork's installed ones (what `apt-get install --allow-downgrades
# PKG=1.14.10-1~deb12u1` installs; here from /var/cache/afbus/debian,
# which the image keeps) with dpkg -i, then, on Debian's kernel, the
# AF_BUS kernel purged.  The running daemon is not restarted: a reboot
# would start Debian's.
. /usr/libexec/afbus/dbus-test-lib.sh

# fork_packages: the installed packages of the fork (version +afbus).
fork_packages() {
	dpkg-query -W -f '${Package} ${Version}\n' |
		awk '$2 ~ /\+afbus/ && $1 !~ /^linux-/ { print $1 }' | sort | xargs
}

fork=$(fork_packages)
expect_match "the fork's packages are installed" '(^| )dbus-daemon( |$)' "$fork"
have=$(ls /var/cache/afbus/debian/ | sed 's/_.*//' | sort | xargs)
expect_eq "... and Debian's package of each is at hand" "$fork" "$have"
out=$(dpkg -i /var/cache/afbus/debian/*.deb 2>&1; echo "rc=$?")
expect_match "dpkg -i of Debian's packages (a downgrade) succeeds" 'rc=0$' "$out"
expect_eq "no package of the fork is left" "" "$(fork_packages)"
expect_match "dbus-daemon is Debian's again" '^1\.14\.10-1~deb12u1$' \
	"$(dpkg-query -W -f '${Version}' dbus-daemon)"
check "the system bus's AF_BUS address is gone with dbus-system-bus-common" \
	test ! -e /usr/share/dbus-1/system.d/afbus.conf
check "... the session bus's with dbus-session-bus-common" \
	test ! -e /usr/share/dbus-1/session.d/afbus.conf
expect_match "... and the user bus's socket unit gives its unix address alone" \
	'set-environment DBUS_SESSION_BUS_ADDRESS=unix:path=%t/bus$' \
	"$(grep '^ExecStartPost=' /usr/lib/systemd/user/dbus.socket)"
check "libdbus is Debian's (no AF_BUS default address in it)" \
	sh -c '! grep -q system_bus.afbus /usr/lib/x86_64-linux-gnu/libdbus-1.so.3'
expect_eq "dpkg --audit finds nothing" "" "$(dpkg --audit 2>&1)"

if [ "$AFBUS_KERNEL" = stock ]; then
	kpkg=$(dpkg-query -W -f '${Package}\n' 'linux-image-*-afbus' 2>/dev/null)
	expect_match "the AF_BUS kernel package is installed" '^linux-image-[0-9.]+-afbus$' "$kpkg"
	out=$(dpkg --purge "$kpkg" 2>&1; echo "rc=$?")
	expect_match "... and dpkg --purge removes it (Debian's kernel running)" 'rc=0$' "$out"
	expect_eq "... its kernel, initrd and modules with it" "" \
		"$(ls -d /boot/*-afbus /lib/modules/*-afbus 2>/dev/null)"
fi
finish
