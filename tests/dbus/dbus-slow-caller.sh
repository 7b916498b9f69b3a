#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A caller that stops reading holds up only the replies to itself.  Its
# receive queue fills (max_outgoing_bytes, 256 KiB here, is its receive
# buffer); the service's libdbus keeps the later replies to it, in
# order, in its outgoing queue until it reads, and answers its other
# callers meanwhile (do_writing() in dbus-transport-afbus.c, dbus/0002),
# as dbus-daemon keeps what waits for a slow client in that client's own
# queue.  Its calls to the daemon go on too (a system service asks the
# daemon about each caller before answering).  Before, the service's
# one outgoing queue stopped at the first reply the kernel could not
# take, and every caller waited with it.
# The slow caller, unprivileged (uid 65534, as whom the bus lets anybody
# connect), is first a native client, then a legacy one, whose replies
# wait, once its unix socket and the daemon's bridge (C1) are full, in
# the same place.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_mixed_bus /tmp/slow-caller max_outgoing_bytes=262144 '<allow user="*"/>' ||
	{ not_ok "the daemon starts"; finish; }
chmod 0777 "$D/bus.sock"
export DBUS_SESSION_BUS_ADDRESS=$AF
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

bg sh -c 'afbus-echo-service com.example.Echo >/tmp/sc-svc.out 2>&1'
check "the service gets its name" wait_for_name com.example.Echo
svc=$(sed -n 's/^ready //p' /tmp/sc-svc.out)
svc_pid=$(pidof afbus-echo-service)

# slow CASE ADDRESS: a caller as uid 65534 on ADDRESS makes 40 calls
# whose replies are 64 KiB each (2.5 MiB, ten times what its receive
# buffer holds) and stops reading; meanwhile a native and a legacy
# client call the service, directly and by name, and the daemon
# answers; then the slow caller reads all its replies, in order.
slow() {
	_case=$1
	as_nobody /tmp/sc-slow.out "DBUS_SESSION_BUS_ADDRESS=$2 afbus-slow-caller $svc 40 65536"
	_slow=$!
	wait_for_line /tmp/sc-slow.out '^sent [0-9]+$'
	_pid=$(sed -n 's/^sent //p' /tmp/sc-slow.out)
	expect_match "$_case: the slow caller runs as uid 65534" '^Uid:.65534.' \
		"$(grep '^Uid:' /proc/$_pid/status 2>&1)"
	expect_match "... another client's calls are answered meanwhile" \
		'^calls=10 ok=10 errors=0 ' "$(timeout 60 afbus-echo-client "$svc" 10 2>&1)"
	expect_answered_meanwhile "... and by the service's name" com.example.Echo
	expect_match "... and a call the service answers once it asked the daemon who called" \
		'string "uid 0"' "$(timeout 20 dbus-send --session --print-reply \
			--dest="$svc" / com.example.Echo.CallerUid 2>&1)"
	# (Not a performance assert: a service that spins on POLLOUT burns
	# all of the 1.5 s, 150 ticks; one that sleeps next to nothing.)
	_t0=$(cpu_ticks $svc_pid)
	sleep 1.5
	_t1=$(cpu_ticks $svc_pid)
	check "... the service sleeps while nobody else calls ($((_t1 - _t0)) ticks of CPU in 1.5 s)" \
		test $((_t1 - _t0)) -lt 30
	check "... all while the slow caller has not read" \
		sh -c "kill -0 $_slow && ! grep -q '^replies=' /tmp/sc-slow.out"
	kill -USR1 "$_pid"
	wait $_slow
	expect_match "... which then gets its 40 replies, whole and in order" \
		'^replies=40 ok=40 in-order=1 errors=0$' "$(cat /tmp/sc-slow.out)"
}

slow "a native caller" "$AF"
slow "a legacy caller" "$UX"

# Two native callers as uid 65534, A then B, each make 20 calls with
# 64 KiB replies and stop reading: A's replies wait in the service's
# queue before B's, so each of the service's passes ends with B refusing
# last, and the kernel watches only B for room (one recipient per
# socket, as AF_UNIX).  A alone reads again: it gets all its replies
# while B still does not read (the transport has the kernel tell it when
# each full recipient has room, BUS_ROOM_NOTIFY; before, A waited for B).
as_nobody /tmp/sc-a.out "DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller $svc 20 65536"
slow_a=$!
wait_for_line /tmp/sc-a.out '^sent [0-9]+$'
as_nobody /tmp/sc-b.out "DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller $svc 20 65536"
slow_b=$!
wait_for_line /tmp/sc-b.out '^sent [0-9]+$'
pid_a=$(sed -n 's/^sent //p' /tmp/sc-a.out)
pid_b=$(sed -n 's/^sent //p' /tmp/sc-b.out)
check "two slow callers A and B have sent their calls" test -n "$pid_a" -a -n "$pid_b"
# (B's calls are answered, and its queue full, before A reads.)
expect_match "... another client's calls are answered meanwhile" \
	'^calls=10 ok=10 errors=0 ' "$(timeout 60 afbus-echo-client "$svc" 10 2>&1)"
_t0=$(cpu_ticks $svc_pid)
sleep 1.5
_t1=$(cpu_ticks $svc_pid)
check "... the service retries without spinning ($((_t1 - _t0)) ticks of CPU in 1.5 s)" \
	test $((_t1 - _t0)) -lt 30
kill -USR1 "$pid_a"
wait $slow_a
expect_match "A reads again and gets its 20 replies, in order, while B does not read" \
	'^replies=20 ok=20 in-order=1 errors=0$' "$(cat /tmp/sc-a.out)"
check "... B indeed has not read" \
	sh -c "kill -0 $slow_b && ! grep -q '^replies=' /tmp/sc-b.out"
kill -USR1 "$pid_b"
wait $slow_b
expect_match "... then B reads and gets its 20 replies, in order" \
	'^replies=20 ok=20 in-order=1 errors=0$' "$(cat /tmp/sc-b.out)"

finish
