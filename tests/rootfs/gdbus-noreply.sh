#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# GDBus on AF_BUS (glib/, through LD_LIBRARY_PATH as in gdbus-afbus.sh):
# the NoReply errors its library makes itself for calls that go straight
# through the kernel, which the daemon never sees (doc/afbus-transport.md
# 6.2, 6.3), on a bus whose reply_timeout is 10 s:
#  - a call by unique name to a GDBus service that dies: the library
#    watches the callee (WatchPeer) and answers NoReply at its PeerGone,
#    well before the bus's 10 s and the call's own 30 s;
#  - a call by unique name that is never answered in time: NoReply at the
#    bus's reply timeout (ReplyTimeout, told before the Hello reply), not
#    at the call's own 30 s, and not before;
#  - a call answered in time gets its answer.
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

G=/usr/libexec/afbus/glib
GPY=/usr/libexec/afbus/gdbus-py
GD="env LD_LIBRARY_PATH=$G"

start_mixed_bus /tmp/gdbus-noreply reply_timeout=10000 ||
	{ not_ok "the daemon starts"; finish; }

now_ms() {
	date +%s%3N
}

# service OUT NAME: a GDBus service owning NAME; sets svc_pid and svc
service() {
	$GD $GPY service "$AF" "$2" >"$1" 2>&1 &
	svc_pid=$!
	_pids="$_pids $svc_pid"
	wait_for_line "$1" '^acquired '
	svc=$(sed -n 's/^ready \([^ ]*\) .*/\1/p' "$1")
}

# slowcall OUT DEST MS: a GDBus caller's Slow (MS) call in the
# background (its own timeout 30 s); sets caller; waits until it is
# connected
slowcall() {
	$GD $GPY slowcall "$AF" "$2" "$3" >"$1" 2>&1 &
	caller=$!
	wait_for_line "$1" '^caller '
}

# --- the callee dies
service /tmp/gn-die.out com.example.GDie
expect_match "a GDBus service on afbus: (killed below)" \
	'^ready :0\.[0-9a-f]+ GDBusAfbusStream$' "$(head -n 1 /tmp/gn-die.out)"
slowcall /tmp/gn-caller.out "$svc" 20000
sleep 1
t0=$(now_ms)
kill -9 $svc_pid
wait_exit $caller
t1=$(now_ms)
expect_eq "a GDBus call by unique name to a service that dies gets NoReply" \
	"error org.freedesktop.DBus.Error.NoReply" "$(grep '^error\|^reply' /tmp/gn-caller.out)"
check "... $((t1 - t0)) ms after the callee died, before the bus's 10 s" \
	test $((t1 - t0)) -lt 8000

# --- the bus's reply timeout
service /tmp/gn-svc.out com.example.GNoReply
slowcall /tmp/gn-caller.out "$svc" 20000
t0=$(now_ms)
wait_exit $caller
t1=$(now_ms)
expect_eq "a GDBus call by unique name never answered in time gets NoReply" \
	"error org.freedesktop.DBus.Error.NoReply" "$(grep '^error\|^reply' /tmp/gn-caller.out)"
check "... after the bus's 10 s ($((t1 - t0)) ms), not at its own 30 s nor the answer's 20 s" \
	test $((t1 - t0)) -ge 9000 -a $((t1 - t0)) -lt 19000
check "... and the service is still there" kill -0 $svc_pid
slowcall /tmp/gn-caller.out "$svc" 200
wait_exit $caller
expect_eq "a GDBus call answered in time gets its answer" \
	"reply slow" "$(grep '^error\|^reply' /tmp/gn-caller.out)"

finish
