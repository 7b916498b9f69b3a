#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The daemon's pending replies for the calls it forwards (issue 17, item
# 1): a call the daemon forwards from one AF_BUS client to another is
# answered straight through the kernel, which awaits the reply (nfdbus
# NFDBUS_BUS_REPLIES), so the daemon keeps no pending reply for it; one
# that it kept would never end (LimitsExceeded after
# max_replies_per_connection calls, NoReply for calls long answered when
# the callee leaves).  The caller's libdbus learns of the callee from
# Forwarded and answers NoReply itself if the callee leaves first.
# Calls to and from legacy clients keep the daemon's own bookkeeping.
# afbus-daemon-calls makes each call to a new name of its service, so
# every one goes through the daemon.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

# mixed_bus_config's bus, with the limit the test is about
check "a daemon with max_replies_per_connection 4 starts" \
	start_mixed_bus /tmp/daemon-replies max_replies_per_connection=4
export DBUS_SESSION_BUS_ADDRESS=$AF
expect_eq "... and gives the kernel that limit" \
	"check-sender policy replies max-replies=4 reply-timeout=0" \
	"$(nfdbus-ctl bus "$(cat $D/bus.afbus)" 2>&1)"

# serve VAR PREFIX N [ADDRESS]: a service owning PREFIX.n0 .. PREFIX.nN-1;
# its unique name in VAR, its pid in VAR_pid.
serve() {
	DBUS_SESSION_BUS_ADDRESS=${4:-$AF} afbus-daemon-calls serve $2 $3 \
		>$D/$1.out 2>&1 &
	eval "${1}_pid=$!"
	_pids="$_pids $!"
	wait_ready $D/$1.out
	eval "$1=\$(sed -n 's/^ready //p' $D/$1.out)"
}

# show OUTPUT: the lines before the summary, as comments.
show() {
	printf '%s\n' "$1" | grep -v '^calls=' | head -n 5 | sed 's/^/#   /'
}

serve svc com.example.DC 60
check "an AF_BUS service owns 60 names" test -n "$svc"

out=$(timeout 120 afbus-daemon-calls call com.example.DC 0 20 500 2>&1)
expect_eq "20 calls through the daemon, one after the other, all answered (limit 4)" \
	"calls=20 ok=20 errors=0 stray=0" "$(printf '%s\n' "$out" | tail -n 1)"
show "$out"

# A callee that answers and then leaves: its caller, still connected,
# gets nothing more.
serve quitter com.example.DQ 10
out=$(timeout 120 afbus-daemon-calls call com.example.DQ 0 4 3000 quit 2>&1)
expect_eq "4 calls through the daemon to a callee that then exits: no NoReply afterwards" \
	"calls=4 ok=4 errors=0 stray=0" "$(printf '%s\n' "$out" | tail -n 1)"
show "$out"
wait_exit $quitter_pid
expect_eq "... (the callee exited on Quit)" 0 "$status"

# A callee that leaves without answering a call made through the
# daemon: NoReply at once, as dbus-daemon gives, from the caller's
# library (the daemon has no record of the call).
# The callee is killed once it has the call (it prints "hang"), not
# after a fixed second: under the debug kernel on a loaded host the
# caller took longer than that to start, called a name whose owner was
# gone already and got ServiceUnknown.
serve hang com.example.DH 1
timeout 30 afbus-direct-call com.example.DH.n0 Hang 20000 >$D/hang-call.out 2>&1 &
caller=$!
i=0
while ! grep -q '^hang ' $D/hang.out && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "... the callee has the call" grep -q '^hang ' $D/hang.out
kill -9 $hang_pid
wait $caller
out=$(cat $D/hang-call.out)
expect_match "a call through the daemon whose callee dies: NoReply, recipient disconnected" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
ms=$(elapsed_ms "$out")
check "... before the call's 20 s timeout (took ${ms} ms)" test "${ms:-20000}" -lt 15000
expect_eq "... and the application sees no internal PeerGone" "noc 0 peergone 0 stray 0" \
	"$(tail -n 1 $D/hang-call.out)"

# Legacy clients: the daemon's bookkeeping, which sees their replies.
out=$(DBUS_SESSION_BUS_ADDRESS=$UX timeout 120 afbus-daemon-calls call com.example.DC 20 20 500 2>&1)
expect_eq "20 calls from a legacy client to the AF_BUS service, all answered" \
	"calls=20 ok=20 errors=0 stray=0" "$(printf '%s\n' "$out" | tail -n 1)"
show "$out"
serve legacy com.example.DL 30 $UX
out=$(timeout 120 afbus-daemon-calls call com.example.DL 0 20 500 2>&1)
expect_eq "20 calls from an AF_BUS client to a legacy service, all answered" \
	"calls=20 ok=20 errors=0 stray=0" "$(printf '%s\n' "$out" | tail -n 1)"
show "$out"
serve lquit com.example.DLQ 10 $UX
out=$(timeout 120 afbus-daemon-calls call com.example.DLQ 0 4 3000 quit 2>&1)
expect_eq "4 calls to a legacy callee that then exits: no NoReply afterwards" \
	"calls=4 ok=4 errors=0 stray=0" "$(printf '%s\n' "$out" | tail -n 1)"
show "$out"

# A caller over max_replies_per_connection through the daemon: the
# kernel counts the calls the daemon relays against their caller and
# refuses the relay of its fifth call awaiting a reply (EDQUOT); the
# daemon answers that call LimitsExceeded at once and logs it, as
# dbus-daemon does (before, it dropped it and the caller waited for its
# own timeout).  The flooder's 20 calls all go through the daemon (sent
# before any Forwarded is read); the callee stalls 3 s, then answers the
# first 4; the flooder's own wait is 120 s (timeout 60 here).
bg sh -c "exec afbus-echo-service com.example.DE >$D/de.out 2>&1"
check "a service owns com.example.DE" wait_for_name com.example.DE
out=$(timeout 60 afbus-flood-client com.example.DE 20 3000 2>&1)
printf '%s\n' "$out" | grep '^calls=' | sed 's/^/# /'
expect_match "20 calls through the daemon to a stalled callee (limit 4): the first 4 answered, in order" \
	'^calls=20 ok=4 .* ok-in-order=1$' "$out"
expect_match "... the other 16 answered LimitsExceeded, none left to the caller's timeout" \
	'^calls=20 .* errors=16 error=org\.freedesktop\.DBus\.Error\.LimitsExceeded limits-exceeded=16 ' "$out"
expect_eq "... by the daemon, which logged each as dbus-daemon does" 16 \
	"$(count_lines $D/bus.conf.out 'pending replies for ".*" \(.*\) has been reached \(max_replies_per_connection=4\)')"
expect_match "... then another client's calls to the callee are answered" \
	'^calls=5 ok=5 errors=0 ' "$(timeout 60 afbus-echo-client com.example.DE 5 2>&1)"

out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the daemon still answers" 'string "com.example.DC.n59"' "$out"

finish
