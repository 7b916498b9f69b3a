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

# joined FILE REGEX: the strings of monitor_strings, on one line.
joined() {
	monitor_strings "$1" "$2" | tr '\n' ' ' | sed 's/ $//'
}

check "the daemon listens on afbus: and unix:" \
	start_config_bus /tmp/eaves.conf $AF_PATH $UX_PATH
# Any user may connect (<allow user="*"/>); the kernel checks the socket
# file's permissions as for a unix socket.
chmod 0666 $AF_PATH $UX_PATH

start_echo_services $AF $UX
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

# Calls: direct between AF_BUS clients, by well-known name (the first
# through the daemon, which must not give it to eavesdroppers a second
# time), legacy <-> AF_BUS.
echo_traffic $AF $UX "$nsvc" "$lsvc"
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
	expect_saw_echo_traffic $t $f "$nsvc"
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
wait_value 0 kernel_eavesdroppers
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
wait_value 0 kernel_eavesdroppers
expect_eq "its RemoveMatch, with the client still there, ends that" "0 connected" \
	"$(kernel_eavesdroppers) $(kill -0 $ev_rm 2>/dev/null && echo connected)"
kill $ev_rm

wait_value "$base" bus_sockets
expect_eq "the daemon closed its sockets" "$base" "$(bus_sockets)"
out=$(timeout 20 $native dbus-send --session --print-reply --dest="$nsvc" / \
	com.example.Echo.Echo string:after 2>&1)
expect_match "the bus works as before" 'string "after"' "$out"

finish
