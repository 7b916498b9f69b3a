#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A call made straight to a peer (by unique name, through the kernel,
# so the daemon never sees it) gets NoReply as soon as the peer dies,
# as upstream dbus-daemon answers the calls it forwards: the caller's
# libdbus watches the peer with the daemon's AF_BUS.PeerGone signal.
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
	ms=$(printf '%s\n' "$out" | sed -n 's/^elapsed-ms //p')
	check "$1: ... before the call's 20 s timeout (took ${ms} ms)" \
		test "${ms:-20000}" -lt 15000
}

killed_mid_call "direct call"
expect_match "... the application sees no internal PeerGone signal" \
	'^noc 0 peergone 0$' "$(tail -n 1 /tmp/nr-call.out)"

killed_mid_call "direct call, with the application's own NameOwnerChanged rule" --match
expect_match "... which still gets its NameOwnerChanged, and no PeerGone" \
	'^noc 1 peergone 0$' "$(tail -n 1 /tmp/nr-call.out)"

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
ms=$(printf '%s\n' "$out" | sed -n 's/^elapsed-ms //p')
check "... before the call's 20 s timeout (took ${ms} ms)" \
	test "${ms:-20000}" -lt 15000
expect_match "... and no stray reply" ' stray 0$' "$out"

# A peer already gone when the call is made: the kernel routes the call
# to the daemon, which has no such name.
out=$(timeout 20 afbus-direct-call "$svc" Echo 20000 2>&1)
expect_match "a call to a peer that left gets an error" \
	'^error org\.freedesktop\.DBus\.Error\.(ServiceUnknown|NameHasNoOwner|NoReply)' "$out"
ms=$(printf '%s\n' "$out" | sed -n 's/^elapsed-ms //p')
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

finish
