#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A service whose receive queue is full: a client blocked on it sleeps
# (no POLLOUT before the service has made room) and all its messages
# arrive once the service reads; and a client calling the service by
# well-known name meanwhile keeps its calls in order, because the
# daemon sends Forwarded with an address only once it has written the
# forwarded message to the kernel.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_bus afbus:
afbus-echo-service com.example.Slow >/tmp/q-svc.out 2>&1 &
svc_pid=$!
_pids="$_pids $svc_pid"
check "the service gets its name" wait_for_name com.example.Slow
svc=$(sed -n 's/^ready //p' /tmp/q-svc.out)

# wait_line FILE REGEX: until FILE has a line matching REGEX (60 s at most).
wait_line() {
	i=0
	while ! grep -q "$2" "$1" && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# stall N: the service stops reading until SIGUSR1 (60 s at most), and
# has done so for the Nth time.  The Stall call goes first, alone, and
# the flood after the service said it stalls: had the flood gone out
# right behind the call, the service's library could read a batch of it
# along with the call before it stalled, and what it holds no longer
# waits in the kernel's queue (1500 calls then fit: seen once under
# load, the flush "blocked" 1 ms).
stall() {
	afbus-flood-client "$svc" 0 60000 >/dev/null 2>&1
	i=0
	while [ "$(grep -c '^stalling$' /tmp/q-svc.out)" -lt "$1" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check "the service stalls ($1)" test "$(grep -c '^stalling$' /tmp/q-svc.out)" -ge "$1"
}

# 1500 calls (the queue holds 1024) to a service that does not read
# until SIGUSR1: the client blocks in dbus_connection_flush().  Its CPU
# time is read from /proc over 1.5 s of that wait; then the service
# reads again.  No timer decides when the stall ends, so a slow (debug)
# kernel makes no difference.
stall 1
afbus-flood-client "$svc" 1500 0 >/tmp/q-flood.out 2>&1 &
flood=$!
wait_line /tmp/q-flood.out '^flushing'
t0=$(cpu_ticks $flood)
sleep 1.5
t1=$(cpu_ticks $flood)
kill -USR1 $svc_pid
wait $flood
out=$(cat /tmp/q-flood.out)
expect_match "1500 calls to a stalled peer all get their replies, in order" \
	'^calls=1500 ok=1500 in-order=1 ' "$out"
ms=$(printf '%s\n' "$out" | sed -n 's/.* flush-ms=\([0-9]*\) .*/\1/p')
check "... the client blocked on the full queue (flush took ${ms} ms)" \
	test "${ms:-0}" -ge 1500
# Not a performance assert: a client that spins on POLLOUT burns all of
# the 1.5 s (150 ticks); one that sleeps uses next to nothing.
check "... and slept meanwhile, without spinning ($((t1 - t0)) ticks of CPU in 1.5 s)" \
	test $((t1 - t0)) -lt 30

# The same stall, filled by one client; meanwhile another calls the
# service by well-known name: its first call reaches the daemon, which
# cannot write it to the full queue yet.
stall 2
afbus-flood-client "$svc" 1500 0 >/tmp/q-fill.out 2>&1 &
filler=$!
wait_line /tmp/q-fill.out '^flushing'
timeout 120 afbus-flood-client com.example.Slow 50 0 10000 >/tmp/q-name.out 2>&1 &
caller=$!
wait_line /tmp/q-name.out '^first-forwarded'
kill -USR1 $svc_pid
wait $caller
wait $filler
out=$(cat /tmp/q-name.out)
expect_match "the daemon could not forward the first call yet: Forwarded says 0" \
	'^first-forwarded 0$' "$out"
expect_match "50 calls by well-known name behind a full queue are answered in order" \
	'^calls=50 ok=50 in-order=1 ' "$out"
expect_match "... and the client that filled the queue gets all its replies" \
	'^calls=1500 ok=1500 in-order=1 ' "$(cat /tmp/q-fill.out)"

# Once the queue has room again, Forwarded gives the address.
out=$(timeout 60 afbus-flood-client com.example.Slow 5 0 10000 2>&1)
expect_match "with room in the queue, Forwarded gives the name's address" \
	'^first-forwarded 1[0-9a-f]{12}$' "$out"

out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the daemon still answers" 'string "com.example.Slow"' "$out"

finish
