#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# GetConnectionCredentials, GetConnectionUnixUser and
# GetConnectionUnixProcessID (issue 17, item 10) of AF_BUS clients and of
# legacy (unix:) clients bridged over AF_BUS say what dbus-daemon says of
# the same client on a unix:-only bus (the upstream code path, the
# oracle): UnixUserID, UnixGroupIDs, ProcessID and, when the LSM labels
# sockets (the test kernel runs Smack), LinuxSecurityLabel.  The clients
# run as uid 65534 (nobody, the guest's one user besides root) with
# groups 65534, 2001 and 2002.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

D=/tmp/dbus-creds
rm -rf $D
mkdir -p $D
AF=afbus:path=$D/bus.afbus
UX=unix:path=$D/bus.sock
PL=unix:path=$D/plain.sock
mixed_bus_config $D/mixed.conf $AF $UX '<allow user="*"/>'
# the same bus without AF_BUS: dbus-daemon as upstream
grep -v '<listen>afbus:' $D/mixed.conf | sed "s|$D/bus.sock|$D/plain.sock|" >$D/plain.conf

check "a daemon on afbus: and unix: starts" \
	start_config_bus $D/mixed.conf $D/bus.afbus $D/bus.sock
mixed_bus=$BUS_PID
check "a daemon on unix: only starts" \
	start_config_bus $D/plain.conf $D/plain.sock
plain_bus=$BUS_PID
chmod 0666 $D/bus.afbus $D/bus.sock $D/plain.sock

# serve VAR ADDRESS: a client as uid 65534 (groups 65534,2001,2002) on
# ADDRESS; its unique name in VAR, its pid in VAR_pid.
serve() {
	DBUS_SESSION_BUS_ADDRESS=$2 afbus-creds serve 65534 65534,2001,2002 \
		>$D/$1.out 2>&1 &
	_pids="$_pids $!"
	wait_ready $D/$1.out
	grep -q '^ready ' $D/$1.out || sed 's/^/# serve: /' $D/$1.out
	eval "$1=\$(sed -n 's/^ready \([^ ]*\) .*/\1/p' $D/$1.out)"
	eval "${1}_pid=\$(sed -n 's/^ready [^ ]* //p' $D/$1.out)"
}

# creds ADDRESS NAME PID: what a root client on ADDRESS is told of NAME,
# sorted, with PID written "PID".
creds() {
	DBUS_SESSION_BUS_ADDRESS=$1 timeout 20 afbus-creds query "$2" 2>&1 |
		sed "s/=$3\$/=PID/" | sort | tr '\n' ' ' | sed 's/ $//'
}

serve plain $PL
serve native $AF
serve legacy $UX
expect_match "the AF_BUS client is :0.N" '^:0\.[0-9a-f]+$' "$native"
expect_match "the legacy client is :0.N" '^:0\.[0-9a-f]+$' "$legacy"

want=$(creds $PL "$plain" "$plain_pid")
expect_match "dbus-daemon on unix: reports uid, groups and pid (the reference)" \
	'^GetConnectionUnixProcessID=PID GetConnectionUnixUser=65534 (LinuxSecurityLabel=[^ ]+ )?ProcessID=PID UnixGroupIDs=2001,2002,65534 UnixUserID=65534$' \
	"$want"
expect_eq "an AF_BUS client's credentials, asked by an AF_BUS client" \
	"$want" "$(creds $AF "$native" "$native_pid")"
expect_eq "... asked by a legacy client" \
	"$want" "$(creds $UX "$native" "$native_pid")"
expect_eq "a legacy client's credentials, asked by an AF_BUS client" \
	"$want" "$(creds $AF "$legacy" "$legacy_pid")"
expect_eq "... asked by a legacy client" \
	"$want" "$(creds $UX "$legacy" "$legacy_pid")"
case "$want" in
*LinuxSecurityLabel=*)
	expect_match "... including the security label" 'LinuxSecurityLabel=' \
		"$(creds $AF "$native" "$native_pid")" ;;
*)
	skip "... including the security label" "no LSM labels unix sockets here" ;;
esac

# The daemon's own: its uid and pid, as dbus-daemon says of itself.
expect_eq "the daemon's own credentials, as dbus-daemon gives them" \
	"$(creds $PL org.freedesktop.DBus "$plain_bus")" \
	"$(creds $AF org.freedesktop.DBus "$mixed_bus")"
expect_eq "a name with no owner: NameHasNoOwner, as dbus-daemon" \
	"$(creds $PL com.example.Nobody 0)" "$(creds $AF com.example.Nobody 0)"

finish
