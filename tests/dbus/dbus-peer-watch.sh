#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Peer watches (issue 17, item 5): the library of an AF_BUS client
# watches each peer it calls straight through the kernel with the
# daemon's org.freedesktop.DBus.AF_BUS.WatchPeer, and answers its calls
# NoReply when the daemon sends PeerGone.  Watches are not match rules:
# a client's direct calls leave it all of max_match_rules_per_connection
# (1 here) for its own rules.  A hostile client (uid 65534) that calls
# WatchPeer itself gets at most 64 watches (LimitsExceeded past that),
# InvalidArgs for bad names, and holds up nobody: another client still
# gets its 64, and callers still get their NoReply.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_mixed_bus /tmp/peer-watch max_match_rules_per_connection=1 \
	'<allow user="*"/>' || { not_ok "the daemon starts"; finish; }
export DBUS_SESSION_BUS_ADDRESS=$AF

# The hostile client: 65 watches, 2 rules, then the bad calls; it keeps
# its watches until it reads a line.
rm -f /tmp/pw-in
mkfifo -m 0666 /tmp/pw-in
as_nobody /tmp/pw-hostile.out "afbus-watch-peer 65 2 </tmp/pw-in"
exec 7>/tmp/pw-in
wait_for_line /tmp/pw-hostile.out '^ready$'
out=$(cat /tmp/pw-hostile.out)
expect_eq "a client gets 64 watches; the 65th is refused with LimitsExceeded" \
	"watch 64: org.freedesktop.DBus.Error.LimitsExceeded" \
	"$(grep '^watch ' /tmp/pw-hostile.out)"
expect_eq "... its watches are not match rules: its 1 rule is allowed, the 2nd refused" \
	"match 1: org.freedesktop.DBus.Error.LimitsExceeded" \
	"$(grep '^match ' /tmp/pw-hostile.out)"
expect_eq "... watched=64 matched=1" "watched=64 matched=1" \
	"$(grep '^watched=' /tmp/pw-hostile.out)"
expect_match "a name that is not a bus name: InvalidArgs" \
	'bad-name: org\.freedesktop\.DBus\.Error\.InvalidArgs' "$out"
expect_match "the daemon's own name: InvalidArgs" \
	'daemon: org\.freedesktop\.DBus\.Error\.InvalidArgs' "$out"
expect_match "WatchPeer without its argument: InvalidArgs" \
	'no-arg: org\.freedesktop\.DBus\.Error\.InvalidArgs' "$out"
expect_match "a name watched twice is one watch (no LimitsExceeded at 64)" \
	'again: ok' "$out"
expect_match "UnwatchPeer of a name not watched: InvalidArgs" \
	'unwatch-unknown: org\.freedesktop\.DBus\.Error\.InvalidArgs' "$out"
expect_match "UnwatchPeer of a watched name" 'unwatch: ok' "$out"
expect_match "... frees a watch: the next WatchPeer is allowed" 'rewatch: ok' "$out"

# Meanwhile: the limit is per connection.
out=$(timeout 60 afbus-watch-peer 64 0 </dev/null 2>&1)
expect_match "another client still gets its 64 watches" '^watched=64 matched=0$' "$out"

# Meanwhile: a caller with the application's own rule (all of its
# max_match_rules_per_connection) calls a service directly, and the
# service dies mid-call.
# killed_mid_call LABEL [stop]: with "stop", the daemon is stopped from
# just before the call until after the service died, so the caller's
# WatchPeer reaches it after the service left: PeerGone at once.
killed_mid_call() {
	afbus-echo-service com.example.Hang >/tmp/pw-svc.out 2>&1 &
	svc_pid=$!
	wait_for_name com.example.Hang || not_ok "$1: the service gets its name"
	svc=$(sed -n 's/^ready //p' /tmp/pw-svc.out)
	rm -f /tmp/pw-go
	mkfifo /tmp/pw-go
	afbus-direct-call "$svc" Hang 20000 --match --wait </tmp/pw-go \
		>/tmp/pw-call.out 2>&1 &
	caller=$!
	exec 8>/tmp/pw-go
	wait_for_line /tmp/pw-call.out '^connected '
	[ "${2:-}" = stop ] && kill -STOP $BUS_PID
	echo go >&8
	exec 8>&-
	sleep 1
	kill -9 $svc_pid
	wait $svc_pid 2>/dev/null
	[ "${2:-}" = stop ] && kill -CONT $BUS_PID
	wait $caller
	out=$(cat /tmp/pw-call.out)
	expect_match "$1: the caller gets NoReply: recipient disconnected" \
		'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
	# Not a timed assert: 20 s is the call's own timeout, which would
	# give NoReply "Did not receive a reply" instead.
	ms=$(elapsed_ms "$out")
	check "... before the call's 20 s timeout (took ${ms} ms)" \
		test "${ms:-20000}" -lt 15000
	expect_eq "... its own rule works (NameOwnerChanged), no PeerGone shown" \
		"noc 1 peergone 0 stray 0" "$(tail -n 1 /tmp/pw-call.out)"
}
killed_mid_call "a direct call with the caller's one rule in place"
killed_mid_call "the callee dies while the daemon is stopped" stop

# A call straight to a well-known name's address: the watch is on the
# name.
killed_by_name /tmp/pw-calln.out
out=$(cat /tmp/pw-calln.out)
expect_match "a direct call by well-known name gets NoReply when its owner dies" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
expect_match "... and no stray reply" ' stray 0$' "$out"

# The hostile client leaves; the daemon lives on.
echo done >&7
exec 7>&-
i=0
while pidof afbus-watch-peer >/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the hostile client has left" test -z "$(pidof afbus-watch-peer)"
out=$(timeout 60 afbus-watch-peer 64 0 </dev/null 2>&1)
expect_match "a new client gets 64 watches" '^watched=64 matched=0$' "$out"
check "the daemon is still running" kill -0 $BUS_PID

# A hostile watcher killed while it watches 64 names: its watches end
# with it (bus_afbus_connection_closed()).  Owners of those names then
# come and leave, and the daemon, and another caller's NoReply, are
# unaffected.
rm -f /tmp/pw-in2
mkfifo -m 0666 /tmp/pw-in2
as_nobody /tmp/pw-killed.out "afbus-watch-peer 64 0 </tmp/pw-in2"
exec 7>/tmp/pw-in2
wait_for_line /tmp/pw-killed.out '^ready$'
expect_match "a second hostile watcher gets its 64 watches" \
	'^watched=64 matched=0$' "$(cat /tmp/pw-killed.out)"
kill -9 $(pidof afbus-watch-peer)  # busybox has no pkill
exec 7>&-
i=0
while pidof afbus-watch-peer >/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "... is killed" test -z "$(pidof afbus-watch-peer)"
for n in 0 1 2; do
	afbus-echo-service com.example.W.n$n >/tmp/pw-owner.out 2>&1 &
	owner=$!
	wait_for_name com.example.W.n$n || not_ok "com.example.W.n$n gets an owner"
	kill -9 $owner
	wait $owner 2>/dev/null
done
check "owners of the names it watched come and go: the daemon runs on" \
	kill -0 $BUS_PID
killed_mid_call "after it, a direct call whose callee dies"

finish
