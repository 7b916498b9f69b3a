#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Security labels of D-Bus clients (issue 16): GetConnectionCredentials
# reports the LinuxSecurityLabel of an AF_BUS client, which the daemon
# reads with SO_PEERSEC on the client's accepted socket when it
# authenticates it, as upstream does for unix: clients; and of a legacy
# (unix:) client bridged over AF_BUS, from its unix socket.  With Smack
# (labels through /proc/self/attr/current, rules through smackfs load2);
# skipped when Smack is not the running LSM.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

AF_PATH=/tmp/labels-bus
UX_PATH=/tmp/labels-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH
LX=AfbusLabelX
LY=AfbusLabelY

# Smack running (securityfs' lsm says so when the kernel has securityfs;
# smackfs' mount point exists only with Smack), smackfs mounted (mounting
# it if not)?
smack_ready() {
	if [ ! -r /sys/kernel/security/lsm ] && [ -d /sys/kernel/security ]; then
		mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	fi
	if [ -r /sys/kernel/security/lsm ]; then
		grep -q smack /sys/kernel/security/lsm || return 1
	fi
	[ -d /sys/fs/smackfs ] || return 1
	[ -e /sys/fs/smackfs/load2 ] ||
		mount -t smackfs smackfs /sys/fs/smackfs 2>/dev/null
	[ -w /sys/fs/smackfs/load2 ]
}

if ! smack_ready; then
	skip "LinuxSecurityLabel of AF_BUS and legacy clients" \
		"Smack is not the running LSM (lsm: $(cat /sys/kernel/security/lsm 2>/dev/null || echo unknown), no /sys/fs/smackfs)"
	finish
fi

# The labelled clients and the daemon ("_", as this shell) may write to
# each other, as Smack wants for a connection and for messages.
for l in $LX $LY; do
	echo "$l _ rw" >/sys/fs/smackfs/load2
	echo "_ $l rw" >/sys/fs/smackfs/load2
done
expect_eq "this shell, and so the daemon, runs with the floor label" "_" \
	"$(cat /proc/self/attr/current)"

# labelled LABEL COMMAND...: run COMMAND with the Smack label LABEL
# (set by the shell that then becomes COMMAND).
labelled() {
	_l=$1
	shift
	sh -c 'echo "$0" >/proc/self/attr/current && exec "$@"' "$_l" "$@"
}

# label_of NAME: the LinuxSecurityLabel GetConnectionCredentials gives
# for NAME, as dbus-send prints it ('"LABEL" + \0'), or "none".
label_of() {
	timeout 20 dbus-send --bus=$AF --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.GetConnectionCredentials string:"$1" 2>&1 |
		awk 'want && /array of bytes/ { sub(/.*array of bytes /, ""); print; found = 1; exit }
			/string "LinuxSecurityLabel"/ { want = 1 }
			END { if (!found) print "none" }'
}

mixed_bus_config /tmp/labels.conf $AF $UX
check "the daemon listens on afbus: and unix:" \
	start_config_bus /tmp/labels.conf $AF_PATH $UX_PATH

bg sh -c "echo $LX >/proc/self/attr/current &&
	exec env DBUS_SESSION_BUS_ADDRESS=$AF afbus-echo-service com.example.LabelX \
	>/tmp/labels-x.out 2>&1"
bg sh -c "echo $LY >/proc/self/attr/current &&
	exec env DBUS_SESSION_BUS_ADDRESS=$UX afbus-echo-service com.example.LabelY \
	>/tmp/labels-y.out 2>&1"
bg sh -c "exec env DBUS_SESSION_BUS_ADDRESS=$AF \
	afbus-echo-service com.example.LabelFloor >/tmp/labels-f.out 2>&1"
wait_ready /tmp/labels-x.out /tmp/labels-y.out /tmp/labels-f.out
x=$(sed -n 's/^ready //p' /tmp/labels-x.out)
y=$(sed -n 's/^ready //p' /tmp/labels-y.out)
f=$(sed -n 's/^ready //p' /tmp/labels-f.out)
expect_match "the AF_BUS client labelled $LX joins" '^:0\.[0-9a-f]+$' "$x"
expect_match "the legacy client labelled $LY joins" '^:0\.[0-9a-f]+$' "$y"

expect_eq "GetConnectionCredentials: the AF_BUS client's LinuxSecurityLabel" \
	"\"$LX\" + \\0" "$(label_of "$x")"
expect_eq "... by its well-known name too" \
	"\"$LX\" + \\0" "$(label_of com.example.LabelX)"
expect_eq "... the legacy client's" "\"$LY\" + \\0" "$(label_of "$y")"
expect_eq "... an unlabelled AF_BUS client's: the floor label" \
	"\"_\" + \\0" "$(label_of "$f")"
out=$(timeout 20 dbus-send --bus=$AF --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetConnectionCredentials string:"$x" 2>&1)
expect_eq "... beside its ProcessID and UnixUserID" "1 1" \
	"$(printf '%s\n' "$out" | grep -c 'string "ProcessID"') $(printf '%s\n' "$out" | grep -c 'string "UnixUserID"')"

# The labelled clients still talk (the test runs as root, whose
# CAP_MAC_OVERRIDE Smack honours: this is no test of mediation, which
# tests/kernel/af_bus_lsm.c covers).
out=$(timeout 20 dbus-send --bus=$AF --print-reply --dest=com.example.LabelX / \
	com.example.Echo.Echo string:to-x 2>&1)
expect_match "a call from the floor label to the $LX service" 'string "to-x"' "$out"
out=$(labelled $LX timeout 20 dbus-send --bus=$AF --print-reply \
	--dest=com.example.LabelY / com.example.Echo.Echo string:x-to-y 2>&1)
expect_match "a call from $LX to the legacy $LY service" 'string "x-to-y"' "$out"

finish
