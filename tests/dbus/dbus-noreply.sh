#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A call made straight to a peer (by unique name, through the kernel,
# so the daemon never sees it) gets NoReply as soon as the peer dies,
# as upstream dbus-daemon answers the calls it forwards: the caller's
# libdbus watches the peer with the daemon's AF_BUS.PeerGone signal.
# And on a bus with a reply_timeout, such a call whose callee never
# answers gets NoReply when the time is up, as from dbus-daemon: the
# daemon tells each client the timeout (AF_BUS.ReplyTimeout) and its
# libdbus keeps the time.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_bus afbus:

# $1: test label, $2: extra option of afbus-direct-call
killed_mid_call() {
	afbus-echo-service com.example.Hang$2 >/tmp/nr-svc.out 2>&1 &
	svc_pid=$!
	wait_for_name com.example.Hang$2 || not_ok "$1: the service gets its name"
	svc=$(sed -n 's/^ready //p' /tmp/nr-svc.out)
	afbus-direct-call "$svc" Hang 20000 $2 >/tmp/nr-call.out 2>&1 &
	caller=$!
	sleep 1
	kill -9 $svc_pid
	wait $svc_pid 2>/dev/null
	wait $caller
	out=$(cat /tmp/nr-call.out)
	expect_match "$1: the caller gets NoReply: recipient disconnected" \
		'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
	# Not a timed assert: 20 s is the call's own timeout, which would
	# give NoReply "Did not receive a reply" instead.
	ms=$(elapsed_ms "$out")
	check "$1: ... before the call's 20 s timeout (took ${ms} ms)" \
		test "${ms:-20000}" -lt 15000
}

killed_mid_call "direct call"
expect_match "... the application sees no internal PeerGone signal" \
	'^noc 0 peergone 0 stray 0$' "$(tail -n 1 /tmp/nr-call.out)"

killed_mid_call "direct call, with the application's own NameOwnerChanged rule" --match
expect_match "... which still gets its NameOwnerChanged, and no PeerGone" \
	'^noc 1 peergone 0 stray 0$' "$(tail -n 1 /tmp/nr-call.out)"

# A call straight to a well-known name's address (the caller's library
# has it from Forwarded) whose owner dies mid-call: NoReply at once too
# (issue 17, item 2); the daemon sends PeerGone with the name, for which
# the library watches the names it calls directly.
killed_by_name /tmp/nr-calln.out
out=$(cat /tmp/nr-calln.out)
expect_match "direct call by well-known name: the caller had the name's address" \
	'^forwarded [1-9][0-9]* ' "$out"
expect_match "... and gets NoReply: recipient disconnected" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
ms=$(elapsed_ms "$out")
check "... before the call's 20 s timeout (took ${ms} ms)" \
	test "${ms:-20000}" -lt 15000
expect_match "... and no stray reply" ' stray 0$' "$out"

# A peer already gone when the call is made: the kernel routes the call
# to the daemon, which has no such name.
out=$(timeout 20 afbus-direct-call "$svc" Echo 20000 2>&1)
expect_match "a call to a peer that left gets an error" \
	'^error org\.freedesktop\.DBus\.Error\.(ServiceUnknown|NameHasNoOwner|NoReply)' "$out"
ms=$(elapsed_ms "$out")
check "... before the call's timeout (took ${ms} ms)" test "${ms:-20000}" -lt 15000

# A call that is answered is not disturbed by the watch, and the daemon
# lives on.
bg sh -c 'afbus-echo-service com.example.Echo >/tmp/nr-echo.out 2>&1'
check "an echo service gets its name" wait_for_name com.example.Echo
echo_svc=$(sed -n 's/^ready //p' /tmp/nr-echo.out)
out=$(timeout 60 afbus-echo-client "$echo_svc" 20 2>&1)
expect_eq "20 direct calls to a live peer all get their replies" \
	"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"
out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the daemon still answers" 'string "com.example.Echo"' "$out"
check "... and no longer lists the dead services" \
	sh -c "! echo '$out' | grep -q com.example.Hang"

# A peer cannot set another client's reply timeout: the library takes
# ReplyTimeout from the daemon only.  On this bus (reply_timeout never),
# a client that took in a ReplyTimeout of 1 ms from a peer before its
# call, which is never answered, gets libdbus' own NoReply at its own
# timeout of 3 s, not the bus's NoReply at once.
rm -f /tmp/nr-forge.in
mkfifo /tmp/nr-forge.in
afbus-direct-call "$echo_svc" Hang 3000 --wait --take-in </tmp/nr-forge.in \
	>/tmp/nr-forge.out 2>&1 &
forge_pid=$!
exec 7>/tmp/nr-forge.in
wait_for_line /tmp/nr-forge.out '^connected '
victim=$(sed -n 's/^connected //p' /tmp/nr-forge.out)
timeout 20 dbus-send --session --type=signal --dest="$victim" /org/freedesktop/DBus \
	org.freedesktop.DBus.AF_BUS.ReplyTimeout int32:1
echo go >&7
exec 7>&-
wait $forge_pid
out=$(cat /tmp/nr-forge.out)
expect_match "a ReplyTimeout forged by a peer is not acted on: the call gets its own timeout's NoReply" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Did not receive a reply' "$out"
ms=$(elapsed_ms "$out")
check "... after its own 3 s (took ${ms} ms)" test "${ms:-0}" -ge 3000

# reply_timeout: a callee that never answers (a hostile one, say) costs
# its callers the bus's reply timeout, not their own (20 s here), and
# the answer is dbus-daemon's NoReply.  The lower bounds are exact: the
# library counts the timeout from after the send.
start_mixed_bus /tmp/nr-rt reply_timeout=1500
rt="env DBUS_SESSION_BUS_ADDRESS=$AF"
rt_wait_for_name() {
	(DBUS_SESSION_BUS_ADDRESS=$AF && export DBUS_SESSION_BUS_ADDRESS &&
		wait_for_name "$1")
}
$rt afbus-echo-service com.example.Slow >/tmp/nr-slow.out 2>&1 &
_pids="$_pids $!"
check "a bus with reply_timeout 1500: a service gets its name" \
	rt_wait_for_name com.example.Slow
slow=$(sed -n 's/^ready //p' /tmp/nr-slow.out)
timeout_re='Message did not receive a reply \(timeout by message bus\)'

# reply_timeout_call LABEL OUT-FILE: checks how the call in OUT-FILE
# ended (afbus-direct-call or afbus-daemon-calls hang output).
reply_timeout_call() {
	out=$(cat "$2")
	expect_match "$1: NoReply, dbus-daemon's text for its reply timeout" \
		"^error org\.freedesktop\.DBus\.Error\.NoReply: $timeout_re\$" "$out"
	ms=$(elapsed_ms "$out")
	check "... not before the 1500 ms, long before the call's own 20 s (took ${ms} ms)" \
		test "${ms:-0}" -ge 1500 -a "${ms:-20000}" -lt 15000
}

timeout 30 $rt afbus-direct-call "$slow" Hang 20000 >/tmp/nr-rt1.out 2>&1
reply_timeout_call "a direct call by unique name that is never answered" /tmp/nr-rt1.out
expect_eq "... and no second answer, nor internal signal" "noc 0 peergone 0 stray 0" \
	"$(tail -n 1 /tmp/nr-rt1.out)"

# The first call to a name goes through the daemon, which forwards it to
# the AF_BUS owner and keeps no record of it (the kernel awaits the
# answer): the caller's library counts from the daemon's Forwarded.
timeout 30 $rt afbus-direct-call com.example.Slow Hang 20000 >/tmp/nr-rt2.out 2>&1
reply_timeout_call "a call the daemon forwarded" /tmp/nr-rt2.out
expect_eq "... and no second answer (none from the daemon either)" "noc 0 peergone 0 stray 0" \
	"$(tail -n 1 /tmp/nr-rt2.out)"

timeout 30 $rt afbus-daemon-calls hang com.example.Slow 20000 >/tmp/nr-rt3.out 2>&1
expect_match "a direct call by well-known name: the caller had the name's address" \
	'^forwarded [1-9][0-9]* ' "$(cat /tmp/nr-rt3.out)"
reply_timeout_call "... never answered" /tmp/nr-rt3.out
expect_match "... and no stray answer" ' stray 0$' "$(cat /tmp/nr-rt3.out)"

# Calls answered in time get their replies, and nothing when their
# deadlines pass (read for 2.5 s after the last).
$rt afbus-daemon-calls serve com.example.RtServe 4 >/tmp/nr-rts.out 2>&1 &
_pids="$_pids $!"
check "a service of 4 names" rt_wait_for_name com.example.RtServe.n3
expect_eq "4 calls answered in time, then 2.5 s: no NoReply" \
	"calls=4 ok=4 errors=0 stray=0" \
	"$(timeout 30 $rt afbus-daemon-calls call com.example.RtServe 0 4 2500 | tail -n 1)"

# A legacy client's call goes through the daemon, which times it out.
out=$(timeout 30 env DBUS_SESSION_BUS_ADDRESS=$UX dbus-send --session --print-reply \
	--reply-timeout=20000 --dest="$slow" / com.example.Echo.Hang 2>&1)
expect_match "a legacy client's call to the AF_BUS service: the same NoReply" \
	"NoReply: $timeout_re" "$out"

finish
