#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A caller that stops reading holds up only the replies to itself.  Its
# receive queue fills (max_outgoing_bytes, 256 KiB here, is its receive
# buffer); the service's libdbus keeps the later replies to it, in
# order, in its outgoing queue until it reads, and answers its other
# callers meanwhile (do_writing() in dbus-transport-afbus.c, dbus/0021),
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

finish
