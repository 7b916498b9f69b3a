#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The system bus on AF_BUS with legacy clients beside it: `dbus-daemon
# --system` (the fork's system.conf and /etc/dbus-1/system.d/afbus.conf,
# policy/system-afbus.conf) listens on afbus:file=/run/dbus/system_bus.afbus
# and on unix:path=/run/dbus/system_bus_socket at once.  The fork's libdbus
# connects to its default system bus address
#   afbus:file=/run/dbus/system_bus.afbus;unix:path=/var/run/dbus/system_bus_socket
# over AF_BUS while the file names a live bus, and falls back to the unix
# socket when the file is missing or stale (names a path where nobody
# listens, or a dead bus); GDBus and sd-bus (busctl) use the socket, also
# when given that address list.  Root and an unprivileged user alike.
# The daemon runs as messagebus, as system.conf has it: it binds the bus
# and opens its nfdbus netlink socket as root, then drops to messagebus,
# and nfdbus goes on taking its requests (the socket keeps the rights of
# its opener; nfdbus.rst, "Who owns a bus").
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

FILE=/run/dbus/system_bus.afbus
SOCK=/run/dbus/system_bus_socket
DEFAULT="afbus:file=$FILE;unix:path=/var/run/dbus/system_bus_socket"
PY=/usr/libexec/afbus/afbus-py
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS

# A service on the system bus needs the policy to let it own its name.
cat >/etc/dbus-1/system.d/com.example.Sys.conf <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own="com.example.Sys"/>
  </policy>
  <policy context="default">
    <allow send_destination="com.example.Sys"/>
  </policy>
</busconfig>
EOF

# start_system_bus WHO: dbus-daemon --system, and the checks that it
# listens on both; sets SYSTEM_PID.
start_system_bus() {
	rm -f "$FILE" "$SOCK" /run/dbus/pid
	mkdir -p /run/dbus
	dbus-daemon --system --nofork >/tmp/system-daemon.out 2>&1 &
	SYSTEM_PID=$!
	i=0
	while { [ ! -s "$FILE" ] || [ ! -S "$SOCK" ]; } && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -s "$FILE" ]; then
		ok "dbus-daemon --system as $1 writes $FILE"
	else
		not_ok "dbus-daemon --system as $1 writes $FILE"
		sed 's/^/#   /' /tmp/system-daemon.out
	fi
	check "... and listens on $SOCK" test -S "$SOCK"
	bus=$(cat "$FILE")
	check "the file names the AF_BUS bus, a socket beside it" \
		test -S "$bus" -a "${bus%/*}" = /run/dbus
}

# As system.conf has it, the daemon runs as messagebus.
start_system_bus messagebus
_pids="$_pids $SYSTEM_PID"
out=$(stat -c %U "/proc/$SYSTEM_PID")
expect_eq "... and runs as messagebus" messagebus "$out"
out=$(timeout 30 gdbus call --system --dest org.freedesktop.DBus --object-path / \
	--method org.freedesktop.DBus.GetId 2>&1)
expect_match "gdbus --system (the socket) reaches it" "^\('[0-9a-f]{32}',\)$" "$out"
out=$(timeout 30 dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.GetId 2>&1)
expect_match "dbus-send --system (AF_BUS) reaches it" '^   [0-9a-f]{32}$' "$out"

# as_user CMD...: CMD as the unprivileged user afbus.
as_user() {
	setpriv --reuid=afbus --regid=afbus --init-groups \
		env HOME=/home/afbus "$@"
}

# transport WHO: the address family dbus-python gets on the default
# system bus address ("AF_BUS" or "AF_UNIX"), as root or as the user.
transport() {
	if [ "$1" = user ]; then
		as_user $PY transport system 2>&1 | awk '{print $1}'
	else
		$PY transport system 2>&1 | awk '{print $1}'
	fi
}

out=$(dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.GetId 2>&1)
expect_match "dbus-send --system (the fork's default address) reaches the bus" \
	'^   [0-9a-f]{32}$' "$out"

# --- live file: AF_BUS
expect_eq "live file: the fork's libdbus connects over AF_BUS (root)" AF_BUS "$(transport root)"
expect_eq "... and as an unprivileged user" AF_BUS "$(transport user)"

# --- missing file: the unix socket
mv "$FILE" "$FILE.saved"
expect_eq "missing file: libdbus falls back to the unix socket (root)" AF_UNIX "$(transport root)"
expect_eq "... and as an unprivileged user" AF_UNIX "$(transport user)"
out=$(dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.GetId 2>&1)
expect_match "... where dbus-send --system works" '^   [0-9a-f]{32}$' "$out"

# --- stale file: a path where nobody listens
echo /run/dbus/dbus-afbus-nobody >"$FILE"
expect_eq "stale file naming no socket: fallback to unix (root)" AF_UNIX "$(transport root)"
expect_eq "... and as an unprivileged user" AF_UNIX "$(transport user)"

# --- stale file: the bus of a daemon that died (its socket inode is left)
dbus-daemon --session --nofork --address=afbus:file=/tmp/dead.afbus \
	>/tmp/dead-daemon.out 2>&1 &
dead=$!
i=0
while [ ! -s /tmp/dead.afbus ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
dead_bus=$(cat /tmp/dead.afbus)
kill -9 $dead
wait $dead 2>/dev/null
check "a killed daemon leaves its bus path behind" test -S "$dead_bus"
echo "$dead_bus" >"$FILE"
expect_eq "stale file naming a dead bus: fallback to unix (root)" AF_UNIX "$(transport root)"
expect_eq "... and as an unprivileged user" AF_UNIX "$(transport user)"
out=$(as_user dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.GetId 2>&1)
expect_match "... where dbus-send --system works for the user too" '^   [0-9a-f]{32}$' "$out"

# --- the live file back: AF_BUS again
mv "$FILE.saved" "$FILE"
expect_eq "live file again: AF_BUS" AF_BUS "$(transport root)"

# --- no daemon at all on the list: the first address' error
out=$(DBUS_SYSTEM_BUS_ADDRESS="afbus:file=/tmp/nothing.afbus;unix:path=/tmp/nothing.sock" \
	dbus-send --system --print-reply / org.freedesktop.DBus.GetId 2>&1)
expect_match "neither address works: the error is the first address'" \
	'/tmp/nothing\.afbus' "$out"

# --- a service on AF_BUS, legacy clients on the socket
bg sh -c "$PY service system com.example.Sys >/tmp/sys-service.out 2>&1"
wait_for_line /tmp/sys-service.out '^(ready|exists) '
svc=$(sed -n 's/^ready //p' /tmp/sys-service.out)
check "a dbus-python service owns com.example.Sys on the system bus" test -n "$svc"
out=$(timeout 30 gdbus call --system --dest com.example.Sys --object-path /com/example/Py \
	--method com.example.Py.Echo gdbus 2>&1)
expect_eq "gdbus --system (the unix socket) calls it" "('gdbus',)" "$out"
out=$(timeout 30 busctl --system call com.example.Sys /com/example/Py com.example.Py Echo s busctl 2>&1)
expect_eq "busctl --system calls it" 's "busctl"' "$out"
out=$(as_user dbus-send --system --print-reply=literal --dest=com.example.Sys \
	/com/example/Py com.example.Py.Echo string:user 2>&1)
expect_eq "the unprivileged user's dbus-send (AF_BUS) calls it" "   user" "$out"
out=$(as_user $PY call system com.example.Sys /com/example/Py com.example.Py.Whoami 2>&1)
expect_eq "... and so does its dbus-python" "$svc" "$out"
out=$(DBUS_SYSTEM_BUS_ADDRESS=$DEFAULT timeout 30 gdbus call --system --dest com.example.Sys \
	--object-path /com/example/Py --method com.example.Py.Echo list 2>&1)
expect_eq "gdbus given the fork's address list skips afbus: and uses the socket" "('list',)" "$out"
out=$(DBUS_SYSTEM_BUS_ADDRESS=$DEFAULT timeout 30 busctl --system call com.example.Sys \
	/com/example/Py com.example.Py Echo s list 2>&1)
expect_eq "... and so does busctl" 's "list"' "$out"
out=$(as_user timeout 30 busctl --system call com.example.Sys /com/example/Py \
	com.example.Py Fail 2>&1)
expect_match "busctl as the user gets the service's error" 'boom' "$out"
out=$(as_user timeout 30 dbus-send --system --print-reply --dest=com.example.Sys \
	/com/example/Py com.example.Py.Fail 2>&1)
expect_match "... and so does dbus-send, by name" '^Error com\.example\.Py\.Error\.Boom: boom' "$out"
out=$(as_user $PY service system com.example.Sys 2>&1)
expect_match "the system bus policy still applies: the user may not own the name" \
	'AccessDenied' "$out"

finish
