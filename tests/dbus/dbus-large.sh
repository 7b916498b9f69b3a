#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Large messages on an unprivileged bus: the daemon, its services and
# its clients all run as uid 65534, without CAP_NET_ADMIN, so the send
# buffers stay within net.core.wmem_max (a few hundred KiB).  The daemon
# sets the bus' largest message to its max_message_size
# (BUS_SET_MSG_MAX, within net.bus.msg_max), so messages of several MiB
# go between its clients, directly, through the daemon and through the
# legacy bridge, as on dbus-daemon; one larger fails alone with
# LimitsExceeded, and its sender goes on.  Past net.bus.msg_max the
# daemon allows what the kernel lets it, and says so in its log.
# net.bus.msg_max is twice net.core.rmem_max by default (what an
# unprivileged master may allow): the administrator raises it to 32 MiB
# for these buses, as af_bus.rst says to.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

MB=1048576

# nobody_bus DIR LIMIT: a daemon as uid 65534 on mixed_bus_config's two
# addresses in DIR (AF, UX and D set), with max_message_size LIMIT;
# BUS_PID is its pid.  Fails if it does not start.
nobody_bus() {
	D=$1
	rm -rf "$D"
	mkdir -p "$D"
	chmod 0777 "$D"
	AF=afbus:file=$D/bus.afbus
	UX=unix:path=$D/bus.sock
	mixed_bus_config "$D/bus.conf" "$AF" "$UX"
	config_limit "$D/bus.conf" max_message_size "$2"
	as_nobody "$D/bus.out" "exec dbus-daemon --config-file=$D/bus.conf --nofork --print-pid=3 3>$D/bus.pid"
	_pids="$_pids $!"
	i=0
	while { [ ! -S "$D/bus.sock" ] || [ ! -s "$D/bus.afbus" ] ||
		[ ! -s "$D/bus.pid" ]; } && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	BUS_PID=$(cat "$D/bus.pid" 2>/dev/null)
	[ -S "$D/bus.sock" ] && [ -s "$D/bus.afbus" ] && [ -n "$BUS_PID" ]
}

# nobody_service: the echo service com.example.Echo as uid 65534 on $AF;
# svc is its unique name.
nobody_service() {
	as_nobody /tmp/large-svc.out "DBUS_SESSION_BUS_ADDRESS=$AF exec afbus-echo-service com.example.Echo"
	_pids="$_pids $!"
	wait_ready /tmp/large-svc.out
	svc=$(sed -n 's/^ready //p' /tmp/large-svc.out)
}

# nobody_run FILE ADDRESS COMMAND: COMMAND as uid 65534 on the bus at
# ADDRESS, waited for; its output in FILE.
nobody_run() {
	as_nobody "$1" "DBUS_SESSION_BUS_ADDRESS=$2 timeout 120 $3"
	wait $!
}

# echo_calls DESCRIPTION ADDRESS DEST SIZE: two calls with SIZE-byte
# strings from a client as uid 65534 on ADDRESS to DEST, both answered
# whole.
echo_calls() {
	nobody_run /tmp/large-client.out "$2" "afbus-echo-client $3 2 -1 $4"
	expect_match "$1" '^calls=2 ok=2 errors=0 ' "$(cat /tmp/large-client.out)"
}

# too_large DESCRIPTION ADDRESS DEST SIZE: a call with a SIZE-byte
# string fails with LimitsExceeded, the caller's next call is answered.
too_large() {
	nobody_run /tmp/large-client.out "$2" "afbus-echo-client $3 1 0 $4"
	expect_match "$1" \
		'^call 0: org\.freedesktop\.DBus\.Error\.LimitsExceeded: Could not send the message to .* over AF_BUS: Message too long$' \
		"$(cat /tmp/large-client.out)"
	echo_calls "... and the same client's next call goes" "$2" "$3" 1000
}

default_msg_max=$(cat /proc/sys/net/bus/msg_max)
echo $((32 * MB)) >/proc/sys/net/bus/msg_max
nobody_bus /tmp/large 16777216 || { not_ok "the daemon starts as uid 65534"; finish; }
expect_match "the daemon runs as uid 65534" '^Uid:.65534.' \
	"$(grep '^Uid:' "/proc/$BUS_PID/status" 2>&1)"
nobody_service
nobody_run /tmp/large-uid.out "$AF" "dbus-send --session --print-reply \
	--dest=org.freedesktop.DBus / org.freedesktop.DBus.GetConnectionUnixUser \
	string:$svc"
expect_match "the service runs as uid 65534 too" 'uint32 65534' \
	"$(cat /tmp/large-uid.out)"

echo_calls "8 MiB messages between unprivileged clients, directly" \
	"$AF" "$svc" $((8 * MB))
echo_calls "... by well-known name (through the daemon, then directly)" \
	"$AF" com.example.Echo $((8 * MB))
echo_calls "... from a legacy client, through the daemon's bridge" \
	"$UX" "$svc" $((8 * MB))
too_large "a message above max_message_size fails alone" \
	"$AF" "$svc" $((17 * MB))
echo_calls "... and another client's 8 MiB messages still go" \
	"$UX" "$svc" $((8 * MB))
# (A legacy client's message above max_message_size is dbus-daemon's
# to refuse, as upstream does: it disconnects the client.)
expect_eq "max_message_size within net.bus.msg_max: no warning" "" \
	"$(grep -i 'msg_max\|largest message' /tmp/large/bus.out)"
kill $BUS_PID
wait_exit $BUS_PID
echo "$default_msg_max" >/proc/sys/net/bus/msg_max

# A bus whose max_message_size is above net.bus.msg_max: the kernel lets
# the daemon allow the sysctl's value, and the daemon says so.
old=$(cat /proc/sys/net/bus/msg_max)
echo $((4 * MB)) >/proc/sys/net/bus/msg_max
nobody_bus /tmp/large-capped 16777216 ||
	{ not_ok "the daemon starts with max_message_size above net.bus.msg_max"; }
echo "$old" >/proc/sys/net/bus/msg_max
expect_match "the daemon warns that the kernel holds messages to net.bus.msg_max" \
	"max_message_size 16777216 is above the kernel's net.bus.msg_max: messages between AF_BUS clients of bus \".*\" are limited to 4194304 bytes" \
	"$(cat "$D/bus.out")"
nobody_service
echo_calls "... 3 MiB messages go" "$AF" "$svc" $((3 * MB))
too_large "... 5 MiB ones fail alone" "$AF" "$svc" $((5 * MB))
kill $BUS_PID

finish
