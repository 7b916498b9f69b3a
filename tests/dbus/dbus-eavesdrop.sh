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

# Order.  A native eavesdropper gets the copies of what AF_BUS clients
# send each other directly from the daemon, which reads them off its
# tap, but the multicasts its rules match and the messages to itself
# from the kernel: one queue, two sources that nothing orders against
# each other.  A copy never comes before what the kernel gave the
# eavesdropper before the copied message was sent, and may come after
# what it gave it later; dbus-daemon's single queue gives every
# eavesdropper the order sent (doc/afbus-transport.md 10,
# design.md "Eavesdropping match rules"; upstream's
# /eavedrop/match_keyword/unicast_to_* in tests/upstream/differences).
# Shown with the daemon stopped while one client sends m0 (for
# everybody), u1 (to X), m1 (for everybody), u2 (to X).  A legacy
# eavesdropper gets all of it through the daemon, from the tap and from
# its AF_BUS socket, likewise not ordered against each other.
ord="type='signal',interface='com.example.Ord'"
$native afbus-signal listen "eavesdrop=true,$ord" >/tmp/ev-ord-n.out 2>&1 &
ev_ord_n=$!
$legacy afbus-signal listen "eavesdrop=true,$ord" >/tmp/ev-ord-l.out 2>&1 &
ev_ord_l=$!
$native afbus-signal listen "$ord" >/tmp/ev-ord-x.out 2>&1 &
ev_ord_x=$!
_pids="$_pids $ev_ord_n $ev_ord_l $ev_ord_x"
wait_ready /tmp/ev-ord-n.out /tmp/ev-ord-l.out /tmp/ev-ord-x.out
x=$(sed -n 's/^ready //p' /tmp/ev-ord-x.out)
# (the sender connects, then waits for a line on its fifo)
rm -f /tmp/ev-ord-go
mkfifo /tmp/ev-ord-go
$native afbus-signal sequence - com.example.Ord.M m0 "$x" com.example.Ord.U u1 \
	- com.example.Ord.M m1 "$x" com.example.Ord.U u2 \
	</tmp/ev-ord-go >/tmp/ev-ord-s.out 2>&1 &
ord_pid=$!
_pids="$_pids $ord_pid"
exec 7>/tmp/ev-ord-go
wait_ready /tmp/ev-ord-s.out
kill -STOP $BUS_PID
echo go >&7
exec 7>&-
wait_exit $ord_pid
wait_for_line /tmp/ev-ord-x.out '^com\.example\.Ord\.U u2 '
wait_for_line /tmp/ev-ord-n.out '^com\.example\.Ord\.M m1 '
sleep 0.5
# ord_args FILE: the arguments of the com.example.Ord signals FILE got.
ord_args() {
	awk '$1 ~ /^com\.example\.Ord\./ { printf "%s%s", sep, $2; sep = " " }
		END { print "" }' "$1"
}
expect_eq "order: one client sent its four signals, the daemon stopped" \
	"sent 4 0" "$(tail -n 1 /tmp/ev-ord-s.out) $status"
expect_eq "... their recipient got them in the order sent (direct and multicast)" \
	"m0 u1 m1 u2" "$(ord_args /tmp/ev-ord-x.out)"
expect_eq "... a native eavesdropper the multicasts only (the copies wait in the tap)" \
	"m0 m1" "$(ord_args /tmp/ev-ord-n.out)"
expect_eq "... a legacy eavesdropper nothing yet" "" "$(ord_args /tmp/ev-ord-l.out)"
kill -CONT $BUS_PID
wait_for_line /tmp/ev-ord-n.out '^com\.example\.Ord\.U u2 '
wait_value 4 count_lines /tmp/ev-ord-l.out '^com\.example\.Ord\.'
expect_eq "daemon running: the native eavesdropper got the copies after the later multicast, in their order" \
	"m0 m1 u1 u2" "$(ord_args /tmp/ev-ord-n.out)"
expect_eq "... the legacy eavesdropper all four, once each" \
	"m0 m1 u1 u2" "$(ord_args /tmp/ev-ord-l.out | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')"
kill $ev_ord_n $ev_ord_l $ev_ord_x

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
