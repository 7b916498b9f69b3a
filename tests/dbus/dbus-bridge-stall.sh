#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A legacy (unix) client's messages wait in the daemon when their
# recipient does not read, in one of the relay sockets that bridge it
# onto AF_BUS (bus-afbus-legacy.c): its own C1 for a message to an
# AF_BUS client, the recipient's A1 (and what the daemon read from the
# recipient's C1) for a message to another legacy client.  dbus-daemon
# holds what waits for one recipient to max_outgoing_bytes and refuses
# the rest with LimitsExceeded; the fork holds each relay queue to the
# same limit (dbus/0011).  max_incoming_bytes stays at its default
# (127 MB), larger, as in Debian's system.conf and session.conf.  A hostile
# legacy client, unprivileged (uid 65534, as whom the bus lets anybody
# connect), that calls a service that stalls, 32 calls of 64 KiB,
# gets some answered once the service reads again and LimitsExceeded for
# the others, instead of the daemon holding them all; meanwhile other
# clients and the daemon are answered.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_mixed_bus /tmp/bridge-stall max_outgoing_bytes=262144 '<allow user="*"/>' ||
	{ not_ok "the daemon starts"; finish; }
chmod 0777 "$D/bus.sock"
export DBUS_SESSION_BUS_ADDRESS=$AF
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

# flood NAME PID CASE: a legacy client stalls NAME (process PID) and
# sends it 32 calls of 64 KiB; meanwhile a native and a legacy client
# call com.example.Echo and the daemon; then SIGUSR1 ends the stall (no
# timer does, so a slow machine changes nothing: 120 s at most) and
# NAME answers again.
flood() {
	as_nobody /tmp/bs-flood.out "$legacy afbus-flood-client $1 32 120000 - 65536"
	flood=$!
	wait_for_line /tmp/bs-flood.out '^flushing'
	check "$3: the flooder runs as uid 65534" sh -c \
		"grep -sl '^Name:.afbus-flood-cl' /proc/[0-9]*/status | xargs grep -q '^Uid:.65534.'"
	expect_answered_meanwhile "$3: a native client's calls to another service are answered" \
		com.example.Echo "$1"
	check "... all while the flooder still waits for its answers" \
		sh -c "kill -0 $flood && ! grep -q '^calls=' /tmp/bs-flood.out"
	kill -USR1 "$2"
	wait $flood
	expect_kept_and_refused "$3" /tmp/bs-flood.out 32
	expect_match "... and the service answers again" \
		'^calls=3 ok=3 errors=0 ' "$(timeout 30 $legacy afbus-echo-client "$1" 3 2>&1)"
}

bg sh -c 'afbus-echo-service com.example.Echo >/tmp/bs-echo.out 2>&1'
bg sh -c 'exec afbus-echo-service com.example.Native >/tmp/bs-native.out 2>&1'
native=$!
bg sh -c "exec $legacy afbus-echo-service com.example.Legacy >/tmp/bs-legacy.out 2>&1"
legacy_svc=$!
check "a native service gets its name" wait_for_name com.example.Echo
check "... and another" wait_for_name com.example.Native
check "a legacy service gets its name" wait_for_name com.example.Legacy

# 1. To an AF_BUS service: the calls wait in the flooder's C1.
flood com.example.Native $native "legacy to AF_BUS"
# 2. To a legacy service: in the service's A1.
flood com.example.Legacy $legacy_svc "legacy to legacy"

finish
