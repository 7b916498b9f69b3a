#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# AF_BUS on the system bus (the AF_BUS kernel only): clients of the
# fork's libdbus are AF_BUS clients, listed in /proc/net/bus, and a call
# between two of them goes through the kernel alone: it is answered
# while the bus daemon is stopped (SIGSTOP); an unprivileged client that
# floods the service while it stalls holds up nobody else.  On Debian's
# kernel, the fork's clients are on the unix socket.
. /usr/libexec/afbus/dbus-test-lib.sh

daemon=$(systemctl show -P MainPID dbus.service)
# the echo service of the D-Bus tests, on the system bus
DBUS_SESSION_BUS_ADDRESS=$(cat /run/dbus/system_bus.afbus 2>/dev/null)
DBUS_SESSION_BUS_ADDRESS=${DBUS_SESSION_BUS_ADDRESS:+afbus:path=$DBUS_SESSION_BUS_ADDRESS;}unix:path=/run/dbus/system_bus_socket
export DBUS_SESSION_BUS_ADDRESS
afbus-echo-service com.example.Echo >/tmp/echo.out 2>&1 &
svc=$!
_pids=$svc
wait_for_line /tmp/echo.out '^ready '
name=$(sed -n 's/^ready //p' /tmp/echo.out)
expect_match "a service of the fork's libdbus owns com.example.Echo" '^:[0-9]+\.[0-9a-f]+$' "$name"

# its own socket, in /proc/net/bus or not
bus_clients=
for ino in $(bus_client_sockets $svc); do
	bus_clients="$bus_clients $ino"
done

case $AFBUS_KERNEL in
stock)
	expect_eq "Debian's kernel: the service is a unix client (no AF_BUS socket)" "" "$bus_clients"
	out=$(timeout 60 afbus-echo-client com.example.Echo 10 -1 2>&1)
	expect_match "... a client of the fork's libdbus calls it through the daemon" \
		'^calls=10 ok=10 errors=0 ' "$out"
	finish
	;;
esac

expect_match "the service's socket is an AF_BUS client in /proc/net/bus" '^ [0-9]+$' "$bus_clients"
expect_match "... joined to the system bus" \
	"^[0-9a-f]+ +${bus_clients# } +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"
expect_match "/proc/net/bus has the system bus's master socket" ' master ' "$(cat /proc/net/bus)"

# A client calling the service by its unique name: the first calls with
# the daemon running, the rest while it is stopped.
afbus-echo-client "$name" 8 500 >/tmp/client.out 2>&1 &
client=$!
sleep 1.5
kill -STOP "$daemon"
stopped=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$daemon/status)
i=0
while kill -0 $client 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
out=$(timeout 3 dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId 2>&1; echo "rc=$?")
kill -CONT "$daemon"
wait $client
rc=$?
expect_eq "the bus daemon was stopped during the calls" T "$stopped"
expect_match "... a call to the daemon then got no answer" 'rc=1[0-9][0-9]$' "$out"
expect_match "the direct calls all got their answers, the daemon stopped" \
	'^calls=8 ok=8 errors=0 ' "$(cat /tmp/client.out)"
expect_eq "... and the client exited 0" 0 "$rc"
out=$(timeout 30 dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId 2>&1)
expect_match "the daemon answers again once continued" '^ +[0-9a-f]{32}$' "$out"

# A hostile unprivileged client: uid afbus stalls the service for 40 s
# and floods it with 2000 calls meanwhile (its queue fills, the flooder
# blocks).  The system's own services and the bus daemon answer while
# the flood still waits (no calls= line yet: the bounds of 20 s are for
# a loaded TCG host, the stall outlasts both), a root client calling
# the same service after the stall is answered, and the flooder gets
# the answers of as many calls as Debian's system.conf lets a
# connection await (max_replies_per_connection, 128), in order: the
# kernel refuses its other calls, also those the daemon relays (all of
# them here: they go through the daemon until a Forwarded comes), and
# the daemon answers each of those at once with LimitsExceeded, as
# dbus-daemon does (not the flooder's own 120 s timeout's NoReply).
setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus \
	DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS" \
	timeout 150 afbus-flood-client com.example.Echo 2000 40000 >/tmp/flood.out 2>&1 &
flood=$!
wait_for_line /tmp/flood.out '^flushing'
out=$(timeout 20 dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId 2>&1)
expect_match "during the flood, the bus daemon answers" '^ +[0-9a-f]{32}$' "$out"
out=$(timeout 20 busctl --system get-property org.freedesktop.systemd1 \
	/org/freedesktop/systemd1 org.freedesktop.systemd1.Manager Version 2>&1)
expect_match "... and systemd (sd-bus)" '^s "[0-9]+' "$out"
expect_eq "... both before the flood's stall ended" "" \
	"$(grep '^calls=' /tmp/flood.out)"
wait $flood
out=$(cat /tmp/flood.out)
expect_match "the flooder's first 128 calls (max_replies_per_connection) are answered, in order" \
	'^calls=2000 ok=128 .* ok-in-order=1$' "$out"
expect_match "... and the other 1872 get LimitsExceeded from the bus, every one" \
	'^calls=2000 .* errors=1872 error=org\.freedesktop\.DBus\.Error\.LimitsExceeded limits-exceeded=1872 ' "$out"
expect_match "... then a root client's calls to the service are answered" \
	'^calls=3 ok=3 errors=0 ' "$(timeout 30 afbus-echo-client "$name" 3 -1 2>&1)"
finish
