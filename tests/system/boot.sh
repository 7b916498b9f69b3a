#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The boot of the Debian system with the fork's dbus: systemd reaches
# multi-user.target with no failed unit, the system bus runs, and
# dbus-daemon logs nothing above notice in the journal, but, on a
# kernel without AF_BUS (Debian's own, AFBUS_KERNEL=stock), the one
# warning that it does not listen on AF_BUS.
. /usr/libexec/afbus/dbus-test-lib.sh

state=$(timeout 240 systemctl is-system-running --wait 2>&1)
expect_eq "the boot finishes: systemctl is-system-running" running "$state"
[ "$state" = running ] ||
	systemctl --failed --no-legend --no-pager 2>&1 | sed 's/^/#   failed: /'
expect_eq "systemd is PID 1" systemd "$(cat /proc/1/comm)"
check "multi-user.target is active" systemctl -q is-active multi-user.target
check "dbus.service is active" systemctl -q is-active dbus.service
version=$(dpkg-query -W -f '${Version}' dbus-daemon)
expect_match "dbus-daemon is the fork's package ($version)" '\+afbus[0-9]+$' "$version"
pid=$(systemctl show -P MainPID dbus.service)
expect_match "the system bus daemon was started by systemd with --address=systemd:" \
	'--system --address=systemd: ' "$(tr '\0' ' ' </proc/$pid/cmdline)"
expect_eq "... and runs as messagebus" messagebus "$(stat -c %U /proc/$pid)"

warnings=$(journalctl -b -q -o cat -p warning -u dbus.service 2>&1)
# dbus-daemon logs some errors at priority info (a configuration file it
# cannot parse, say): its lines that say so, whatever their priority
trouble=$(journalctl -b -q -o cat -u dbus.service 2>&1 |
	grep -Ei 'error|fail|warn|cannot|not listening|denied' || true)
case $AFBUS_KERNEL in
afbus)
	expect_eq "dbus-daemon logged no warning" "" "$warnings"
	expect_eq "... nor, at any priority, an error or failure" "" "$trouble"
	check "it listens on AF_BUS: /run/dbus/system_bus.afbus names a bus" \
		test -S "$(cat /run/dbus/system_bus.afbus 2>/dev/null)"
	;;
stock)
	expect_eq "dbus-daemon logged one warning" 1 "$(printf '%s\n' "$warnings" | grep -c .)"
	expect_match "... that it does not listen on AF_BUS, and why" \
		'^\[system\] Not listening on afbus:file=/run/dbus/system_bus\.afbus: .*clients use the bus.s other addresses' \
		"$warnings"
	expect_eq "... and, at any priority, nothing else about an error or failure" \
		"$warnings" "$trouble"
	check "no AF_BUS bus file" test ! -e /run/dbus/system_bus.afbus
	;;
esac
check "it listens on systemd's socket /run/dbus/system_bus_socket" \
	test -S /run/dbus/system_bus_socket
finish
