#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dbus-daemon killed (-9) in the middle of its clients' work and started
# again on the same bus path: a service and a client see Disconnected
# (libdbus' org.freedesktop.DBus.Local.Disconnected), the client's call
# still pending ends with an error instead of hanging, the stale socket
# inode is taken over by the new daemon, and both reconnect: the
# service gets its name back and the client calls it again.  Afterwards
# no AF_BUS socket is left behind (/proc/net/bus).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

base=$(bus_sockets)
path=/tmp/dbus-restart-bus
rm -f "$path"
start_bus "afbus:path=$path"
daemon1=$BUS_PID
expect_match "the daemon listens on the path it was given" \
	"^afbus:path=$path,guid=" "$DBUS_SESSION_BUS_ADDRESS"
DBUS_SESSION_BUS_ADDRESS=afbus:path=$path
export DBUS_SESSION_BUS_ADDRESS

afbus-echo-service com.example.Echo >/tmp/r-svc1.out 2>&1 &
svc1=$!
check "the service gets its name" wait_for_name com.example.Echo

afbus-reconnect-client "afbus:path=$path" com.example.Echo 300 \
	>/tmp/r-client.out 2>&1 &
client=$!
wait_for_line /tmp/r-client.out '^waiting'
expect_match "the client calls the service" '^echo OK$' "$(cat /tmp/r-client.out)"

kill -9 "$daemon1"
wait "$daemon1" 2>/dev/null
wait_exit $svc1
expect_eq "the service sees the bus go and exits 0 (Disconnected)" 0 "$status"
wait_for_line /tmp/r-client.out '^pending'
out=$(cat /tmp/r-client.out)
expect_match "the client sees Disconnected" '^disconnected$' "$out"
expect_match "... and its pending call ends with the error Disconnected" \
	'^pending org\.freedesktop\.DBus\.Error\.Disconnected$' "$out"
check "the dead daemon's socket inode is still there" test -S "$path"

start_bus "afbus:path=$path"
expect_match "a new daemon takes over the same path" \
	"^afbus:path=$path,guid=" "$DBUS_SESSION_BUS_ADDRESS"
DBUS_SESSION_BUS_ADDRESS=afbus:path=$path
export DBUS_SESSION_BUS_ADDRESS
bg sh -c 'afbus-echo-service com.example.Echo >/tmp/r-svc2.out 2>&1'
check "the service reconnects and gets its name back" wait_for_name com.example.Echo

wait_exit $client
expect_eq "the client reconnects and calls the service again" 0 "$status"
out=$(cat /tmp/r-client.out)
expect_match "... as a new client of the new bus" '^reconnected :0\.[0-9a-f]+ [0-9]+$' "$out"
expect_match "... and its call is answered" '^echo-again OK$' "$out"
printf '%s\n' "$out" | sed 's/^/# client: /'

out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the new daemon answers" 'string "com.example.Echo"' "$out"

# Everything down: the sockets of both buses are gone.
for p in $_pids; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
_pids=
wait_value "$base" bus_sockets
expect_eq "no AF_BUS socket is left behind" "$base" "$(bus_sockets)"
rm -f "$path"

finish
