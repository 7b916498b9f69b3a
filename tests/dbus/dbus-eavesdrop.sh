#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Eavesdroppers: connections with eavesdrop='true' match rules (AddMatch)
# get the messages addressed to others that their rules match, as from
# dbus-daemon, including what AF_BUS clients send each other directly
# through the kernel: while there is such a rule the daemon has the kernel
# copy it the bus (its tap, as for monitors; bus-afbus-monitor.c) and
# passes those messages on through its own matching and policy code.
# dbus-monitor here falls back to eavesdropping because the policy
# refuses BecomeMonitor.  The daemon listens on afbus: and unix:.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

AF_PATH=/tmp/eaves-bus
UX_PATH=/tmp/eaves-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH

mixed_bus_config /tmp/eaves.conf $AF $UX \
	'<allow user="*"/>' \
	'<deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>' \
	'<deny receive_type="signal" receive_interface="com.example.Secret" eavesdrop="true"/>'

native="env DBUS_SESSION_BUS_ADDRESS=$AF"
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

# wait_kernel_eavesdroppers N: until the bus has N eavesdroppers (10 s).
wait_kernel_eavesdroppers() {
	i=0
	while [ "$(kernel_eavesdroppers)" != "$1" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# joined FILE REGEX: the strings of monitor_strings, on one line.
joined() {
	monitor_strings "$1" "$2" | tr '\n' ' ' | sed 's/ $//'
}

check "the daemon listens on afbus: and unix:" \
	start_config_bus /tmp/eaves.conf $AF_PATH $UX_PATH
# Any user may connect (<allow user="*"/>); the kernel checks the socket
# file's permissions as for a unix socket.
chmod 0666 $AF_PATH $UX_PATH

$native afbus-echo-service com.example.NEcho >/tmp/ev-nsvc.out 2>&1 &
_pids="$_pids $!"
$legacy afbus-echo-service com.example.LEcho >/tmp/ev-lsvc.out 2>&1 &
_pids="$_pids $!"
wait_ready /tmp/ev-nsvc.out /tmp/ev-lsvc.out
nsvc=$(sed -n 's/^ready //p' /tmp/ev-nsvc.out)
lsvc=$(sed -n 's/^ready //p' /tmp/ev-lsvc.out)
expect_eq "no eavesdropper on the bus to begin with" 0 "$(kernel_eavesdroppers)"
base=$(bus_sockets)

# Only a privileged connection (root or the daemon's user) may eavesdrop,
# as on dbus-daemon; a refused rule opens no tap.
out=$(timeout 20 $native afbus-signal --uid 65534 many-rules 1 2>&1)
expect_eq "an unprivileged AF_BUS client may add ordinary rules" \
	"added=1 error=none" "$out"
out=$(timeout 20 $native afbus-signal --uid 65534 listen \
	"eavesdrop=true,type='method_call'" 2>&1)
expect_match "... but not an eavesdropping one: AccessDenied" \
	'org\.freedesktop\.DBus\.Error\.AccessDenied' "$out"
expect_eq "... and the daemon does not eavesdrop on the bus for it" 0 \
	"$(kernel_eavesdroppers)"

# Three eavesdroppers (AF_BUS and legacy, everything; AF_BUS with rules),
# and a subscriber that does not eavesdrop.
$native dbus-monitor --session >/tmp/ev-all.out 2>/tmp/ev-all.err &
ev_all=$!
$legacy dbus-monitor --session >/tmp/ev-leg.out 2>/tmp/ev-leg.err &
ev_leg=$!
$native dbus-monitor --session "type='signal',interface='com.example.Ready'" \
	"type='method_call',interface='com.example.Echo',member='Echo'" \
	>/tmp/ev-rule.out 2>/tmp/ev-rule.err &
ev_rule=$!
$native afbus-signal listen "type='signal',interface='com.example.Open'" \
	>/tmp/ev-sub.out 2>&1 &
ev_sub=$!
_pids="$_pids $ev_all $ev_leg $ev_rule $ev_sub"
wait_seen $AF /tmp/ev-all.out /tmp/ev-leg.out /tmp/ev-rule.out
wait_ready /tmp/ev-sub.out
for t in all leg rule; do
	expect_match "$t: dbus-monitor, refused BecomeMonitor, eavesdrops" \
		'Falling back to eavesdropping' "$(cat /tmp/ev-$t.err)"
done
expect_eq "eavesdropping rules make the daemon one eavesdropper on the bus" 1 \
	"$(kernel_eavesdroppers)"

# Direct calls between AF_BUS clients, by unique name.
out=$(timeout 60 $native afbus-echo-client "$nsvc" 20 2>&1)
expect_eq "20 direct calls to an AF_BUS service's unique name" \
	"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"
# By well-known name: the first through the daemon, then directly.
out=$(timeout 60 $native afbus-echo-client com.example.NEcho 10 2>&1)
# (Under load a reply can beat each Forwarded: then all ten go through
# the daemon; see dbus-names.sh.)
expect_match "10 calls to its well-known name, the first through the daemon" \
	'^calls=10 ok=10 errors=0 forwarded=([1-9]|10) ' "$out"
# Legacy <-> AF_BUS.
timeout 20 $legacy dbus-send --session --print-reply --dest=com.example.NEcho / \
	com.example.Echo.Echo string:l2n >/dev/null
timeout 20 $native dbus-send --session --print-reply --dest="$lsvc" / \
	com.example.Echo.Echo string:n2l >/dev/null
# A call to the daemon.
id=$(timeout 20 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId | sed -n 's/^ *string "\(.*\)"$/\1/p')
# Signals addressed to the service (direct), one of them of an interface
# that the policy keeps from eavesdroppers; and one for everybody.
$native dbus-send --session --type=signal --dest="$nsvc" /x com.example.Open.Tell string:open-1
$native dbus-send --session --type=signal --dest="$nsvc" /x com.example.Secret.Tell string:secret-1
$legacy dbus-send --session --type=signal --dest="$nsvc" /x com.example.Open.Tell string:open-2
$native dbus-send --session --type=signal /x com.example.Open.Tell string:open-all
# The end marker, once everything before it reached the eavesdroppers.
$native dbus-send --session --type=signal /ready com.example.Ready.End
for t in all leg rule; do
	wait_for_line /tmp/ev-$t.out 'member=End$'
done
wait_for_line /tmp/ev-sub.out '^com\.example\.Open\.Tell open-all '

for t in all leg; do
	f=/tmp/ev-$t.out
	expect_eq "$t: the 20 direct calls, each once" 20 \
		"$(count_lines $f "^method call .* -> destination=$nsvc .*member=Echo\$")"
	expect_eq "$t: the service's 31 replies (20 + 10 + 1 to a legacy caller), each once" 31 \
		"$(count_lines $f "^method return .* sender=$nsvc -> ")"
	out=$(monitor_strings $f "member=Echo\$|^method return .* sender=$nsvc " |
		grep '^message ' | sort | uniq -c | awk '{ print $1 }' | sort | uniq -c |
		awk '{ printf "%dx%d ", $2, $1 }')
	expect_eq "$t: message 0-9 in 4 messages each, 10-19 in 2" "2x10 4x10 " "$out"
	out=$(awk '/^(method call|method return|error|signal) / { type = $1 "-" $2 }
		/^   string "message [0-9]*"$/ { n[$0]++
			if (n[$0] <= 2) print type }' $f | paste - - | sort | uniq -c |
		awk '{ print $1, $2, $3 }')
	expect_eq "$t: each call comes before its reply" "20 method-call method-return" "$out"
	expect_eq "$t: the legacy -> AF_BUS call and its reply, once each" "l2n l2n" \
		"$(monitor_strings $f '.' | grep -x l2n | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "$t: the AF_BUS -> legacy call and its reply, once each" "n2l n2l" \
		"$(monitor_strings $f '.' | grep -x n2l | tr '\n' ' ' | sed 's/ $//')"
	# As from dbus-daemon: the daemon's own replies go to their
	# recipient only.
	expect_eq "$t: the call to the daemon once, its reply not" "1 0" \
		"$(count_lines $f 'member=GetId$') $(count_lines $f "^   string \"$id\"\$")"
	expect_eq "$t: the signals addressed to the service once each, in order," \
		"open-1 open-2" \
		"$(joined $f "^signal .* -> destination=$nsvc .*interface=com.example.(Open|Secret); ")"
	expect_eq "... the policy keeping the com.example.Secret one from eavesdroppers" 0 \
		"$(count_lines $f 'interface=com.example.Secret;')"
	expect_eq "$t: the signal for everybody once" "open-all" \
		"$(monitor_strings $f '^signal .* interface=com.example.Open; ' | grep -x open-all)"
done

f=/tmp/ev-rule.out
expect_eq "an eavesdropper with rules sees the 31 Echo calls to the AF_BUS service" 31 \
	"$(count_lines $f "^method call .* -> destination=($nsvc|com.example.NEcho) .*member=Echo\$")"
expect_eq "... and the one to the legacy service" 1 \
	"$(count_lines $f "^method call .* -> destination=$lsvc .*member=Echo\$")"
expect_eq "... and no reply, no other signal, no other call" 0 \
	"$(count_lines $f '^(method return|error) |interface=com.example.(Open|Secret)|member=GetId')"
expect_eq "a subscriber that does not eavesdrop gets only the signal for everybody" \
	"com.example.Open.Tell open-all" "$(cut -d' ' -f1,2 /tmp/ev-sub.out | grep -v '^ready ')"

# The eavesdroppers leave: so does the daemon's eavesdropper.
kill $ev_all $ev_leg $ev_rule $ev_sub
wait_kernel_eavesdroppers 0
expect_eq "without eavesdroppers the daemon stops eavesdropping" 0 "$(kernel_eavesdroppers)"

# RemoveMatch of the last eavesdropping rule closes the tap too.
$native afbus-signal listen --remove-after 1 \
	"eavesdrop=true,type='signal',interface='com.example.R'" >/tmp/ev-rm.out 2>&1 &
ev_rm=$!
_pids="$_pids $ev_rm"
wait_ready /tmp/ev-rm.out
expect_eq "an eavesdropping rule makes the daemon eavesdrop again" 1 "$(kernel_eavesdroppers)"
$native dbus-send --session --type=signal /x com.example.R.Ping string:r
wait_for_line /tmp/ev-rm.out '^removed$'
wait_kernel_eavesdroppers 0
expect_eq "its RemoveMatch, with the client still there, ends that" "0 connected" \
	"$(kernel_eavesdroppers) $(kill -0 $ev_rm 2>/dev/null && echo connected)"
kill $ev_rm

i=0
while [ "$(bus_sockets)" != "$base" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect_eq "the daemon closed its sockets" "$base" "$(bus_sockets)"
out=$(timeout 20 $native dbus-send --session --print-reply --dest="$nsvc" / \
	com.example.Echo.Echo string:after 2>&1)
expect_match "the bus works as before" 'string "after"' "$out"

finish
