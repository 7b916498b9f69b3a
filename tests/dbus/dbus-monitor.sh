#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Monitors (dbus-monitor, BecomeMonitor) see every message on the bus
# once, in bus order, including what AF_BUS clients send each other
# directly through the kernel: while there is a monitor the daemon has the
# kernel copy it the bus (an eavesdropping socket of its own, the "tap";
# bus-afbus-monitor.c), and closes that when the last monitor leaves.
# The daemon listens on afbus: and unix: ("legacy" clients, bridged).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

AF_PATH=/tmp/monitor-bus
UX_PATH=/tmp/monitor-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH

# library_traffic FILE: how many lines of dbus-monitor's output FILE show
# the AF_BUS library's own traffic (copied to standard error with the
# line before each).
library_traffic() {
	_re="interface=org\\.freedesktop\\.DBus\\.AF_BUS|member='PeerGone'|member=GetNameOwner"
	grep -E -B 1 -- "$_re" "$1" | sed "s|^|# $1: |" >&2
	count_lines "$1" "$_re"
}

# end_marker MEMBER FILE...: signal com.example.Ready.MEMBER, and wait
# until each monitor's output FILE shows it (and so what came before).
end_marker() {
	_m=$1
	shift
	$native dbus-send --session --type=signal /ready com.example.Ready.$_m
	for _f in "$@"; do
		wait_for_line $_f "member=$_m\$"
	done
}

mixed_bus_config /tmp/monitor.conf $AF $UX

native="env DBUS_SESSION_BUS_ADDRESS=$AF"
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

check "the daemon listens on afbus: and unix:" \
	start_config_bus /tmp/monitor.conf $AF_PATH $UX_PATH

start_echo_services $AF $UX
expect_eq "no eavesdropper on the bus without monitors" 0 "$(kernel_eavesdroppers)"
base=$(bus_sockets)

# Three monitors: everything (AF_BUS and legacy), and one with rules.
$native dbus-monitor --session >/tmp/mn-all.out 2>&1 &
mon_all=$!
$legacy dbus-monitor --session >/tmp/mn-leg.out 2>&1 &
mon_leg=$!
$native dbus-monitor --session "type='signal',interface='com.example.Ready'" \
	"type='method_call',interface='com.example.Echo',member='Echo'" \
	"type='signal',interface='com.example.M'" >/tmp/mn-rule.out 2>&1 &
mon_rule=$!
_pids="$_pids $mon_all $mon_leg $mon_rule"
wait_seen $AF /tmp/mn-all.out /tmp/mn-leg.out /tmp/mn-rule.out
expect_eq "monitors make the daemon one eavesdropper on the bus" 1 "$(kernel_eavesdroppers)"
expect_eq "... with the longest queue the kernel allows" 1048576 "$(kernel_eavesdropper_qlen)"

# Calls: direct between AF_BUS clients (the daemon never sees them), by
# well-known name, legacy <-> AF_BUS.
echo_traffic $AF $UX "$nsvc" "$lsvc"
# Signals between AF_BUS clients (kernel multicasts), and a legacy
# client's; a call to the daemon.
$native afbus-signal emit com.example.M.Ping 5 nm
$legacy afbus-signal emit com.example.M.Ping 2 lm
id=$(timeout 20 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId | sed -n 's/^ *string "\(.*\)"$/\1/p')

# Order: three AF_BUS clients multicast 60 signals each at once; the
# monitor sees them in the order a subscriber received them.
$native afbus-signal listen "type='signal',interface='com.example.O'" >/tmp/mn-sub.out 2>&1 &
sub_pid=$!
_pids="$_pids $sub_pid"
wait_ready /tmp/mn-sub.out
e_pids=
for p in a b c; do
	$native afbus-signal emit com.example.O.Ping 60 $p &
	e_pids="$e_pids $!"
done
for p in $e_pids; do wait $p; done
# The end marker, once everything before it reached the monitors.
end_marker End /tmp/mn-all.out /tmp/mn-leg.out /tmp/mn-rule.out
i=0
while [ "$(grep -c '^com.example.O.Ping' /tmp/mn-sub.out)" -lt 180 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done

for t in all leg; do
	f=/tmp/mn-$t.out
	expect_saw_echo_traffic $t $f "$nsvc"
	expect_eq "$t: the AF_BUS client's 5 signals once each, in order" \
		"nm-0 nm-1 nm-2 nm-3 nm-4" \
		"$(monitor_strings $f 'interface=com.example.M; member=Ping$' | grep '^nm-' | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "$t: the legacy client's 2 signals once each, in order" "lm-0 lm-1" \
		"$(monitor_strings $f 'interface=com.example.M; member=Ping$' | grep '^lm-' | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "$t: GetId once, and its reply once" "1 1" \
		"$(count_lines $f 'member=GetId$') $(count_lines $f "^   string \"$id\"\$")"
	c=$(first_line $f 'member=GetId$')
	r=$(first_line $f "^   string \"$id\"\$")
	check "$t: ... in that order" test -n "$c" -a -n "$r" -a "${c:-0}" -lt "${r:-0}"
	# (echo_traffic's calls by name earn Forwarded signals, its
	# direct calls peer watches)
	expect_eq "$t: none of the AF_BUS library's own traffic (Forwarded, PeerGone, WatchPeer, GetNameOwner)" 0 \
		"$(library_traffic $f)"
	expect_eq "$t: 180 signals from 3 concurrent senders, in the order a subscriber got them" \
		"$(grep '^com.example.O.Ping' /tmp/mn-sub.out | cut -d' ' -f2 | tr '\n' ' ')" \
		"$(monitor_strings $f 'interface=com.example.O; member=Ping$' | tr '\n' ' ')"
done

f=/tmp/mn-rule.out
expect_eq "a monitor with rules sees the 31 Echo calls to the AF_BUS service" 31 \
	"$(count_lines $f "^method call .* -> destination=($nsvc|com.example.NEcho) .*member=Echo\$")"
expect_eq "... the 7 com.example.M signals" 7 "$(count_lines $f 'interface=com.example.M; member=Ping$')"
expect_eq "... and no reply, no other signal, no other call" 0 \
	"$(count_lines $f '^(method return|error) |interface=com.example.O|member=GetId')"

# A client gone before the daemon read its peer watch: the daemon stops
# while the client calls the service directly (its library asks the
# daemon to watch the service) and exits, so the tap's copies of its
# calls come from a client the daemon no longer knows.
n0=$(count_lines /tmp/mn-all.out "destination=$nsvc .*member=Echo\$")
mkfifo /tmp/mn-wait.in
$native afbus-echo-client --wait "$nsvc" 2 </tmp/mn-wait.in >/tmp/mn-wait.out 2>&1 &
w_pid=$!
exec 7>/tmp/mn-wait.in
wait_for_line /tmp/mn-wait.out '^connected$'
kill -STOP $BUS_PID
echo go >&7
exec 7>&-
wait_exit $w_pid
kill -CONT $BUS_PID
expect_eq "a client calls directly and leaves while the daemon is stopped" \
	"0 calls=2 ok=2 errors=0 forwarded=0 owners=" "$status $(tail -n 1 /tmp/mn-wait.out)"
end_marker End2 /tmp/mn-all.out /tmp/mn-leg.out
for t in all leg; do
	f=/tmp/mn-$t.out
	expect_eq "$t: then its 2 calls, and none of its library's traffic" "$((n0 + 2)) 0" \
		"$(count_lines $f "destination=$nsvc .*member=Echo\$") $(library_traffic $f)"
done

# A monitor may send nothing, and no monitor sees what one sent.  One
# that calls an AF_BUS peer directly: the kernel refuses the call (the
# monitor has no bus policy), its library answers AccessDenied, and the
# daemon, shown the refused call by the tap, closes it.  One that calls
# AddMatch: the daemon closes it, and the call gets NoReply, as from
# dbus-daemon (upstream's /monitor/become).
out=$($native timeout 30 afbus-monitor-send call "$nsvc" 2>&1)
expect_eq "a monitor's direct call is refused, and the daemon closes the monitor" \
	"monitor error org.freedesktop.DBus.Error.AccessDenied disconnected=1" "$(echo $out)"
out=$($native timeout 30 afbus-monitor-send addmatch "member='FromMonitor'" 2>&1)
expect_eq "a monitor's AddMatch gets NoReply: the daemon closes the monitor" \
	"monitor error org.freedesktop.DBus.Error.NoReply disconnected=1" "$(echo $out)"
# A monitor stays without a bus policy across a ReloadConfig, which
# gives every other client its policy anew.
mkfifo /tmp/mn-send.in
$native afbus-monitor-send --wait call "$nsvc" </tmp/mn-send.in >/tmp/mn-send.out 2>&1 &
s_pid=$!
exec 7>/tmp/mn-send.in
wait_for_line /tmp/mn-send.out '^ready$'
out=$(timeout 20 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ReloadConfig 2>&1; echo "rc=$?")
echo go >&7
exec 7>&-
wait_exit $s_pid
expect_match "the daemon reloads its configuration" 'rc=0$' "$out"
expect_eq "... after which a monitor's direct call is still refused" \
	"0 monitor ready error org.freedesktop.DBus.Error.AccessDenied disconnected=1" \
	"$status $(echo $(cat /tmp/mn-send.out))"
end_marker End3 /tmp/mn-all.out /tmp/mn-leg.out
for t in all leg; do
	f=/tmp/mn-$t.out
	expect_eq "$t: none of what the three monitors sent" 0 \
		"$(count_lines $f 'from-monitor|FromMonitor')"
done
expect_eq "the daemon logged why it closed each" "2 1" \
	"$(count_lines /tmp/monitor.conf.out 'sent a message to its peers .*member="Echo".*closing it') $(count_lines /tmp/monitor.conf.out 'is not allowed to send messages; closing it')"

# A client whose library watches a peer it called directly, and that
# then becomes a monitor: when the peer leaves, the daemon sends it no
# PeerGone, which its library would answer with UnwatchPeer, a message
# from a monitor, for which the daemon would close it.
$native afbus-echo-service com.example.Leaver >/tmp/mn-leaver.out 2>&1 &
leaver_pid=$!
wait_ready /tmp/mn-leaver.out
leaver=$(sed -n 's/^ready //p' /tmp/mn-leaver.out)
mkfifo /tmp/mn-idle.in
$native afbus-monitor-send --wait --first "$leaver" idle </tmp/mn-idle.in \
	>/tmp/mn-idle.out 2>&1 &
idle_pid=$!
exec 7>/tmp/mn-idle.in
wait_for_line /tmp/mn-idle.out '^ready$'
kill $leaver_pid
wait $leaver_pid 2>/dev/null
echo go >&7
exec 7>&-
wait_exit $idle_pid
expect_eq "a monitor that called a peer before stays connected when the peer leaves" \
	"0 first reply monitor ready idle disconnected=0" \
	"$status $(echo $(cat /tmp/mn-idle.out))"

# The monitors leave (and the subscriber): so does the daemon's
# eavesdropper.
kill $mon_all $mon_leg $mon_rule $sub_pid
wait_value 0 kernel_eavesdroppers
expect_eq "without monitors the daemon stops eavesdropping" 0 "$(kernel_eavesdroppers)"
wait_value "$base" bus_sockets
expect_eq "... and closes its sockets" "$base" "$(bus_sockets)"
out=$(timeout 20 $native dbus-send --session --print-reply --dest="$nsvc" / \
	com.example.Echo.Echo string:after 2>&1)
expect_match "the bus works as before" 'string "after"' "$out"

# A new monitor gets a new tap.
$native dbus-monitor --session "type='signal',interface='com.example.Ready'" \
	>/tmp/mn-again.out 2>&1 &
mon_again=$!
_pids="$_pids $mon_again"
wait_seen $AF /tmp/mn-again.out
expect_eq "a new monitor makes the daemon eavesdrop again" 1 "$(kernel_eavesdroppers)"
kill $mon_again

finish
