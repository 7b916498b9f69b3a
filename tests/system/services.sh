#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# systemd's services on the system bus: busctl (sd-bus)
# lists them, hostnamectl, timedatectl and loginctl work (hostnamed and
# timedated are started by bus activation through SystemdService=), and
# dbus-send (the fork's libdbus: AF_BUS on the AF_BUS kernel, the unix
# socket on Debian's) calls hostname1, login1 and a polkit-protected
# method, allowed for root and refused for an unprivileged user with
# the error Debian's dbus gives.
. /usr/libexec/afbus/dbus-test-lib.sh

list=$(timeout 30 busctl --system list --no-pager --no-legend 2>&1)
# (columns: NAME PID PROCESS USER CONNECTION UNIT SESSION DESCRIPTION)
for name in org.freedesktop.DBus org.freedesktop.systemd1 org.freedesktop.login1; do
	expect_match "busctl list shows $name, running" "^$name +[0-9]+ " "$list"
done
for name in org.freedesktop.hostname1 org.freedesktop.timedate1 \
	org.freedesktop.locale1 org.freedesktop.PolicyKit1; do
	expect_match "busctl list shows $name, activatable" \
		"^$name +- +- +- +\(activatable\) " "$list"
done

out=$(timeout 60 hostnamectl status 2>&1)
expect_match "hostnamectl: hostnamed activated, the static hostname" \
	'Static hostname: afbus-system' "$out"
check "... hostnamed runs, started by systemd" systemctl -q is-active systemd-hostnamed.service
out=$(timeout 60 timedatectl status 2>&1)
expect_match "timedatectl: timedated activated, the time zone" 'Time zone: ' "$out"
out=$(timeout 30 loginctl list-sessions --no-legend 2>&1; echo "rc=$?")
expect_match "loginctl list-sessions answers" 'rc=0$' "$out"

# dbus-send: the fork's libdbus, its default system bus address
call() {
	timeout 60 dbus-send --system --print-reply "$@" 2>&1
}
out=$(call --dest=org.freedesktop.hostname1 /org/freedesktop/hostname1 \
	org.freedesktop.DBus.Properties.Get string:org.freedesktop.hostname1 string:StaticHostname)
expect_match "dbus-send: hostname1's StaticHostname" 'variant +string "afbus-system"' "$out"
out=$(call --dest=org.freedesktop.login1 /org/freedesktop/login1 \
	org.freedesktop.login1.Manager.ListSeats)
expect_match "dbus-send: login1's ListSeats" 'array \[' "$out"
out=$(call --dest=org.freedesktop.hostname1 /org/freedesktop/hostname1 \
	org.freedesktop.hostname1.SetPrettyHostname string:"AF_BUS root" boolean:false)
expect_match "dbus-send as root: SetPrettyHostname (polkit: allowed)" '^method return ' "$out"
out=$(timeout 30 hostnamectl status 2>&1)
expect_match "... and the pretty hostname changed" 'Pretty hostname: AF_BUS root' "$out"
out=$(setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus \
	timeout 60 dbus-send --system --print-reply --dest=org.freedesktop.hostname1 \
	/org/freedesktop/hostname1 org.freedesktop.hostname1.SetPrettyHostname \
	string:"user" boolean:false 2>&1)
expect_match "dbus-send as a user: SetPrettyHostname refused by polkit" \
	'^Error org\.freedesktop\.DBus\.Error\.InteractiveAuthorizationRequired: ' "$out"
out=$(timeout 30 hostnamectl status 2>&1)
expect_match "... and the pretty hostname did not change" 'Pretty hostname: AF_BUS root' "$out"
check "polkitd runs, started by bus activation" systemctl -q is-active polkit.service
finish
