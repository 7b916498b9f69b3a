#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# What monitors and eavesdroppers learn when the kernel drops the copies
# of the bus it keeps for them (the daemon's tap, bus-afbus-monitor.c).
# The tap's queue is short here (the limit max_afbus_monitor_queue); the
# daemon is stopped while two AF_BUS clients keep calling each other
# directly, so the kernel drops copies rather than hold them up; once the
# daemon runs again it learns of the drops (SO_RXQ_OVFL), logs them and
# disconnects the monitor and the eavesdropper.  A new monitor gets a new
# tap.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

AF_PATH=/tmp/loss-bus
UX_PATH=/tmp/loss-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH
QLEN=50
export DBUS_SESSION_BUS_ADDRESS=$AF

# with_limit FILE NAME VALUE: add <limit name="NAME">VALUE</limit> to the
# configuration FILE.
with_limit() {
	awk -v l="  <limit name=\"$2\">$3</limit>" '/^<\/busconfig>/ { print l } { print }' \
		"$1" >"$1.new" && mv "$1.new" "$1"
}

# Out of range: the daemon does not start.
mixed_bus_config /tmp/loss-bad.conf afbus:path=/tmp/loss-bad unix:path=/tmp/loss-bad-unix
with_limit /tmp/loss-bad.conf max_afbus_monitor_queue 0
out=$(timeout 20 dbus-daemon --config-file=/tmp/loss-bad.conf --nofork 2>&1)
expect_match "max_afbus_monitor_queue 0: the daemon refuses its configuration" \
	'max_afbus_monitor_queue.*must be between 1 and 1048576' "$out"

mixed_bus_config /tmp/loss.conf $AF $UX
with_limit /tmp/loss.conf max_afbus_monitor_queue $QLEN
check "the daemon listens on afbus: and unix:" \
	start_config_bus /tmp/loss.conf $AF_PATH $UX_PATH

afbus-echo-service com.example.Loss >/tmp/ls-svc.out 2>&1 &
_pids="$_pids $!"
wait_ready /tmp/ls-svc.out
svc=$(sed -n 's/^ready //p' /tmp/ls-svc.out)

dbus-monitor --session >/tmp/ls-mon.out 2>&1 &
mon=$!
afbus-signal listen "eavesdrop=true,type='method_call',interface='com.example.Echo'" \
	>/tmp/ls-eav.out 2>&1 &
eav=$!
_pids="$_pids $mon $eav"
wait_seen $AF /tmp/ls-mon.out
wait_ready /tmp/ls-eav.out
expect_eq "the tap's queue is as long as the limit says" $QLEN \
	"$(kernel_eavesdropper_qlen)"

# A client calls the service directly (by unique name), 400 times with
# Whoami in between; once the monitor saw its first call the daemon stops.
afbus-echo-client "$svc" 400 2 >/tmp/ls-client.out 2>&1 &
client=$!
_pids="$_pids $client"
wait_for_line /tmp/ls-mon.out "^method call .* -> destination=$svc "
kill -STOP $BUS_PID
sleep 2
drops=$(awk '$4 == "client" && $7 == 1 { print $10 }' /proc/net/bus)
kill -CONT $BUS_PID
# The drop count comes with the next copy queued after the drops.
dbus-send --session --type=signal /x com.example.After.Ping
expect_match "the kernel dropped copies for the stopped daemon" '^[1-9][0-9]*$' "$drops"

wait_exit $mon
check "the monitor is disconnected" test "$status" != running
wait_exit $eav
check "... and so is the eavesdropper" test "$status" != running
expect_match "the daemon says why" \
	'Disconnected the monitors and eavesdroppers of the AF_BUS bus: they missed [1-9][0-9]* messages' \
	"$(cat /tmp/loss.conf.out)"
expect_eq "... once, not again for the copies dropped while they left" 1 \
	"$(grep -c 'they missed' /tmp/loss.conf.out)"
n=$(count_lines /tmp/ls-mon.out "^method call .* -> destination=$svc ")
check "the monitor saw only part of the 800 calls ($n)" test "$n" -lt 800
wait_exit $client
expect_eq "the client's calls all went on meanwhile" 0 "$status"
expect_eq "... and were all answered" "calls=400 ok=400 errors=0 forwarded=0 owners=$svc" \
	"$(cat /tmp/ls-client.out)"
wait_value 0 kernel_eavesdroppers
expect_eq "the daemon stopped eavesdropping" 0 "$(kernel_eavesdroppers)"

# A new monitor: a new tap, which sees the next call once.
dbus-monitor --session >/tmp/ls-mon2.out 2>&1 &
_pids="$_pids $!"
wait_seen $AF /tmp/ls-mon2.out
expect_eq "a new monitor makes the daemon eavesdrop again" 1 "$(kernel_eavesdroppers)"
timeout 20 dbus-send --session --print-reply --dest="$svc" / \
	com.example.Echo.Echo string:again >/dev/null
dbus-send --session --type=signal /ready com.example.Ready.End
wait_for_line /tmp/ls-mon2.out 'member=End$'
expect_eq "... and sees the next call once" 1 \
	"$(monitor_strings /tmp/ls-mon2.out 'member=Echo$' | grep -cx again)"

# The daemon exits with the monitor still there: closing its bus ends
# the tap, which is no failure to warn about.
kill $BUS_PID
wait_exit $BUS_PID
check "the daemon exits with a monitor connected" test "$status" != running
expect_eq "... without a false alarm about its tap" 0 \
	"$(grep -c 'copy of the bus failed' /tmp/loss.conf.out)"

finish
