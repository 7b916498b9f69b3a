#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Signals between AF_BUS clients: multicast through the kernel, which
# applies the subscribers' match rules (nfdbus) that the daemon gave it
# for their AddMatch and RemoveMatch.  Monitors get theirs from the
# daemon, which has the kernel copy it the bus (dbus-monitor.sh).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_bus afbus:
path=${DBUS_SESSION_BUS_ADDRESS#afbus:path=}
path=${path%%,*}

# stat NAME: one nfdbus counter (kernel-wide, this guest has one bus).
stat() {
	nfdbus-ctl stats | sed -n "s/^$1 //p"
}

# signals FILE: the signal lines of a listener's output.
signals() {
	grep -v '^ready \|^removed$' "$1"
}

# summary FILE: "COUNT FIRST-ARG0 LAST-ARG0 in-order=0|1" of a
# listener's signals, whose arg0 are PREFIX-N: in order if each N is the
# one before plus 1.
summary() {
	signals "$1" | awk '{ split($2, a, "-"); i = a[2] + 0
			if (n++ && i != prev + 1) bad = 1
			if (n == 1) first = $2
			last = $2; prev = i }
		END { print n + 0, first, last, "in-order=" (bad ? 0 : 1) }'
}

afbus-signal listen "type='signal',interface='com.example.A'" >/tmp/sig-a.out 2>&1 &
a_pid=$!
_pids="$_pids $a_pid"
bg sh -c "afbus-signal listen \"type='signal',interface='com.example.B'\" >/tmp/sig-b.out 2>&1"
bg sh -c "afbus-signal listen >/tmp/sig-none.out 2>&1"
bg sh -c "afbus-signal listen \"sender='com.example.Emitter'\" >/tmp/sig-sender.out 2>&1"
bg sh -c "dbus-monitor --session \"type='signal',interface='com.example.B'\" >/tmp/mon-b.out 2>&1"
wait_ready /tmp/sig-a.out /tmp/sig-b.out /tmp/sig-none.out /tmp/sig-sender.out
sleep 1		# dbus-monitor has no ready line

a=$(sed -n 's/^ready //p' /tmp/sig-a.out)
none=$(sed -n 's/^ready //p' /tmp/sig-none.out)
a_addr=0x0000$(printf '%012x' "0x${a#:0.}")
rules=$(nfdbus-ctl list "$path" 2>&1)
expect_match "the kernel has subscriber A's rule, in canonical form" \
	"^$a_addr	type='signal',interface='com\\.example\\.A'\$" "$rules"
expect_match "... a rule on a well-known sender, with the name's address" \
	"sender='com\\.example\\.Emitter'	sender-addr=0x0001" "$rules"
check "... but not the monitor's: it gets every message from the daemon" \
	sh -c "! printf '%s\n' \"\$1\" | grep -q \"eavesdrop='true'\"" sh "$rules"

parsed=$(stat parsed) filtered=$(stat filtered)
dbus-send --session --type=signal /com/example com.example.A.Ping string:one
dbus-send --session --type=signal /com/example com.example.B.Ping string:two
dbus-send --session --type=signal /com/example com.example.A.Ping string:three
# The same name owned by one process, then another: the rule on the
# name follows it to its new owner.
afbus-signal emit --own com.example.Emitter com.example.C.Ping 2 first
afbus-signal emit --own com.example.Emitter com.example.C.Ping 1 second
sleep 1

expect_eq "subscriber A gets the A signals, in order" \
	"com.example.A.Ping one com.example.A.Ping three" \
	"$(signals /tmp/sig-a.out | cut -d' ' -f1,2 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "subscriber B gets the B signal only" "com.example.B.Ping two" \
	"$(signals /tmp/sig-b.out | cut -d' ' -f1,2)"
expect_eq "a client without match rules gets no signal" "" \
	"$(signals /tmp/sig-none.out)"
expect_eq "a rule on a well-known sender matches its owners' signals only" \
	"first-0 first-1 second-0" \
	"$(signals /tmp/sig-sender.out | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... sent from two different unique names" 2 \
	"$(signals /tmp/sig-sender.out | cut -d' ' -f3 | sort -u | wc -l)"
out=$(grep -c 'interface=com.example.B; member=Ping' /tmp/mon-b.out)
expect_eq "dbus-monitor with a rule sees the B signal" 1 "$out"
expect_eq "... and nothing else" 0 "$(grep -c 'interface=com.example.[AC]' /tmp/mon-b.out)"
# 6 multicasts, each parsed once by nfdbus in the kernel: the daemon
# saw them only as the eavesdropper it is for the monitor.  3 clients
# have rules in the kernel (subscribers A, B and the one on the sender
# name), and each signal matches one of them: 2 filtered each.  The
# clients without rules (sig-none, the monitor's connection, the
# emitters) are not even asked about, nor counted; the eavesdropper gets
# everything, unfiltered and uncounted.
expect_eq "the 6 signals went through the kernel (nfdbus parsed them)" 6 \
	$(($(stat parsed) - parsed))
expect_eq "... which kept them from the 12 recipients whose rules did not match" 12 \
	$(($(stat filtered) - filtered))

out=$(dbus-send --session --type=signal --dest="$none" /com/example \
	com.example.D.Ping string:unicast 2>&1; sleep 1; signals /tmp/sig-none.out)
expect_eq "a signal sent to a unique name reaches it, whatever its rules" \
	"com.example.D.Ping unicast" "$(echo "$out" | cut -d' ' -f1,2)"

out=$(timeout 20 afbus-signal emit --self "interface='com.example.Self'" \
	com.example.Self.Ping 3 self 2>&1)
expect_eq "a sender whose rule matches its own signals gets them" "self=3" "$out"

# A subscriber that stops reading holds up nobody: the daemon made
# multicasts skip a full queue (BUS_SET_MCAST_DROP), so it misses what
# does not fit, as dbus-daemon drops signals for a connection past its
# outgoing limit.
afbus-signal listen "interface='com.example.F'" >/tmp/sig-f-live.out 2>&1 &
live_pid=$!
afbus-signal listen "interface='com.example.F'" >/tmp/sig-f-stop.out 2>&1 &
stop_pid=$!
_pids="$_pids $live_pid $stop_pid"
wait_ready /tmp/sig-f-live.out /tmp/sig-f-stop.out
# The signals go out in 4 bursts of 500, each once the live subscriber
# has read the one before: it is never more than 500 behind, so its
# 1024-message queue never fills, however slow the guest.
kill -STOP $stop_pid
rc=0
for first in 0 500 1000 1500; do
	timeout 60 afbus-signal emit --first $first com.example.F.Ping 500 f || rc=$?
	i=0
	while [ "$(signals /tmp/sig-f-live.out | wc -l)" -lt $((first + 500)) ] &&
		[ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
done
expect_eq "2000 signals go out while a subscriber is stopped" 0 "$rc"
expect_eq "... the other subscriber gets all of them, in order" "2000 f-0 f-1999 in-order=1" \
	"$(summary /tmp/sig-f-live.out)"
# What the stopped one lost is counted in its socket's Drops. Queued
# messages are charged to their recipient's receive buffer, which the
# daemon made large enough (max_outgoing_bytes, at most 8 MiB) that the
# 1024-message queue limit is what fills first.
stop=$(sed -n 's/^ready :0\.//p' /tmp/sig-f-stop.out)
stop_drops=$(awk -v a="$(printf '%016x' "0x$stop")" \
	'$4 == "client" && substr($11, 1, 16) == a { print $10 }' /proc/net/bus)
expect_eq "... the kernel counted the 976 it missed" 976 "$stop_drops"
kill -CONT $stop_pid
sleep 2
expect_eq "... the stopped one reads the 1024 its queue held, then nothing it missed" \
	"1024 f-0 f-1023 in-order=1" \
	"$(summary /tmp/sig-f-stop.out)"
kill $live_pid $stop_pid

# RemoveMatch: the rule leaves the kernel, the signals stop.
bg sh -c "afbus-signal listen --remove-after 1 \"interface='com.example.E'\" >/tmp/sig-e.out 2>&1"
wait_ready /tmp/sig-e.out
e=$(sed -n 's/^ready //p' /tmp/sig-e.out)
e_addr=0x0000$(printf '%012x' "0x${e#:0.}")
expect_match "the kernel has the rule once AddMatch is answered" \
	"^$e_addr	interface='com\\.example\\.E'\$" \
	"$(nfdbus-ctl list "$path" "$e_addr")"
dbus-send --session --type=signal /com/example com.example.E.Ping string:before
i=0
while ! grep -q '^removed$' /tmp/sig-e.out && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if ! grep -q '^removed$' /tmp/sig-e.out; then
	echo "# the listener did not get its signal: its output, its socket"
	sed 's/^/#   /' /tmp/sig-e.out
	grep "$(printf '%016x' "0x${e#:0.}")" /proc/net/bus | sed 's/^/#   /'
fi
dbus-send --session --type=signal /com/example com.example.E.Ping string:after
sleep 1
expect_eq "after RemoveMatch no more signals" "com.example.E.Ping before" \
	"$(signals /tmp/sig-e.out | cut -d' ' -f1,2 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and the kernel has no rule left for the client" "" \
	"$(nfdbus-ctl list "$path" "$e_addr")"

out=$(timeout 60 afbus-signal many-rules 513 2>/dev/null)
expect_eq "the 513th match rule exceeds the kernel's 512 per client" \
	"added=512 error=org.freedesktop.DBus.Error.LimitsExceeded" "$out"
out=$(timeout 20 afbus-signal listen "type='signal',interface='com.example.A',bogus='1'" 2>&1)
expect_match "an invalid rule is refused before it reaches the kernel" \
	'MatchRuleInvalid' "$out"

# A subscriber's rules go with it.
kill "$a_pid"
i=0
while nfdbus-ctl list "$path" "$a_addr" | grep -q . && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect_eq "a subscriber that exits leaves no rule in the kernel" "" \
	"$(nfdbus-ctl list "$path" "$a_addr")"

finish
