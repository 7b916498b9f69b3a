#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Legacy clients: dbus-daemon listens on afbus: and unix: at once, and
# bridges each unix: client through a pair of AF_BUS sockets it opens to
# its own bus (bus-afbus-legacy.c).  The "legacy" clients here are the
# fork's own libdbus tools on the unix: address; the "native" ones the
# same tools on afbus:.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

AF_PATH=/tmp/legacy-bus
UX_PATH=/tmp/legacy-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH

mixed_bus_config /tmp/legacy.conf $AF $UX

# $native|$legacy COMMAND...: run COMMAND as a client on afbus: or unix:.
native="env DBUS_SESSION_BUS_ADDRESS=$AF"
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

# signals FILE: the signal lines of an afbus-signal listener.
signals() {
	grep -v '^ready \|^removed$' "$1" | cut -d' ' -f1,2 | tr '\n' ' ' |
		sed 's/ $//'
}

# One AF_BUS address per daemon: two buses would give two clients the
# same address, and so the same unique name.  (mixed_bus_config lists
# its third argument first: -a, then -b.)
mixed_bus_config /tmp/two-afbus.conf afbus:path=/tmp/two-afbus-b afbus:path=/tmp/two-afbus-a
out=$(timeout 20 dbus-daemon --config-file=/tmp/two-afbus.conf --nofork 2>&1; echo "exit $?")
expect_match "a daemon refuses to listen on two AF_BUS addresses, saying why" \
	'listens on one AF_BUS address at most .*not on both afbus:path=/tmp/two-afbus-a.* and afbus:path=/tmp/two-afbus-b' "$out"
expect_match "... and exits with an error" '^exit [1-9]' "$(printf '%s\n' "$out" | tail -n 1)"

check "the daemon listens on afbus: and unix: at once" \
	start_config_bus /tmp/legacy.conf $AF_PATH $UX_PATH
base=$(bus_sockets)
expect_eq "only the bus master is on the bus" 1 "$base"

# Names: one address space for both kinds of clients.
out=$(timeout 20 $legacy dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "a legacy client is named after an AF_BUS address (:0.N)" \
	'string ":0\.[1-9a-f][0-9a-f]*"' "$out"
check "... and has no name of dbus-daemon's own kind (:1.N)" \
	sh -c "! printf '%s\n' '$out' | grep -q 'string \":1\.'"

$legacy afbus-echo-service com.example.Legacy >/tmp/lg-svc.out 2>&1 &
lsvc_pid=$!
_pids="$_pids $lsvc_pid"
$native afbus-echo-service com.example.Native >/tmp/nt-svc.out 2>&1 &
nsvc_pid=$!
_pids="$_pids $nsvc_pid"
wait_ready /tmp/lg-svc.out /tmp/nt-svc.out
lsvc=$(sed -n 's/^ready //p' /tmp/lg-svc.out)
nsvc=$(sed -n 's/^ready //p' /tmp/nt-svc.out)
expect_match "a legacy service's unique name is :0.N" '^:0\.[1-9a-f][0-9a-f]*$' "$lsvc"
expect_match "a native service's unique name is :0.N" '^:0\.[1-9a-f][0-9a-f]*$' "$nsvc"
lsvc_addr=$(printf '%012x' "0x${lsvc#:0.}")
expect_match "/proc/net/bus has the legacy service's client socket, with a name address" \
	"client .*0000$lsvc_addr,0001" "$(cat /proc/net/bus)"
expect_match "... and its accepted socket" \
	"accepted .*0000$lsvc_addr,0001" "$(cat /proc/net/bus)"

pid=$(timeout 20 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetConnectionUnixProcessID string:"$lsvc" 2>&1 |
	sed -n 's/.*uint32 //p')
expect_eq "GetConnectionUnixProcessID of a legacy client is its own pid" \
	"$lsvc_pid" "$pid"

# Native clients connecting while the daemon opens pairs for legacy
# ones: connections queued on the listening socket before a pair's own
# are accepted and served as usual.
rm -f /tmp/par-*.out
par_pids=
i=0
while [ $i -lt 12 ]; do
	timeout 60 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.GetId >/tmp/par-n$i.out 2>&1 &
	par_pids="$par_pids $!"
	timeout 60 $legacy dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.GetId >/tmp/par-l$i.out 2>&1 &
	par_pids="$par_pids $!"
	i=$((i + 1))
done
for p in $par_pids; do wait $p; done
expect_eq "12 native and 12 legacy clients at once all get their replies" 24 \
	"$(grep -l 'string "[0-9a-f]*"' /tmp/par-*.out | wc -l)"

# Calls both ways, by unique and well-known name.
# echo_call CLIENT DEST STRING: Echo (STRING) on DEST, as CLIENT.
echo_call() {
	timeout 20 $1 dbus-send --session --print-reply --dest="$2" / \
		com.example.Echo.Echo string:"$3" 2>&1
}
expect_match "native -> legacy by well-known name" 'string "n2l-name"' \
	"$(echo_call "$native" com.example.Legacy n2l-name)"
expect_match "native -> legacy by unique name" 'string "n2l-unique"' \
	"$(echo_call "$native" "$lsvc" n2l-unique)"
expect_match "legacy -> native by well-known name" 'string "l2n-name"' \
	"$(echo_call "$legacy" com.example.Native l2n-name)"
expect_match "legacy -> native by unique name" 'string "l2n-unique"' \
	"$(echo_call "$legacy" "$nsvc" l2n-unique)"
expect_match "legacy -> legacy by well-known name" 'string "l2l"' \
	"$(echo_call "$legacy" com.example.Legacy l2l)"
out=$(timeout 20 $legacy dbus-send --session --print-reply --dest=com.example.Legacy / \
	com.example.Echo.Fail 2>&1)
expect_match "a legacy service's error reaches a legacy caller" \
	'com\.example\.Echo\.Error\.Failed' "$out"
out=$(timeout 20 $native dbus-send --session --print-reply --dest=com.example.Legacy / \
	com.example.Echo.Fail 2>&1)
expect_match "... and a native caller" 'com\.example\.Echo\.Error\.Failed' "$out"
out=$(timeout 20 $native dbus-send --session --print-reply --dest=com.example.Legacy / \
	com.example.Echo.Whoami 2>&1)
expect_match "Whoami on the legacy service gives its unique name" "string \"$lsvc\"" "$out"

# A native caller learns the address of the legacy service's name
# (Forwarded) and then calls it directly, through its AF_BUS pair.
out=$(timeout 60 $native afbus-echo-client com.example.Legacy 50 2>&1)
expect_match "50 native calls to a legacy name: a few Forwarded, then direct" \
	'^calls=50 ok=50 errors=0 forwarded=([1-9]|[1-4][0-9]) owners=$' "$out"
out=$(timeout 60 $native afbus-echo-client "$lsvc" 20 2>&1)
expect_eq "20 native calls to the legacy unique name, no Forwarded" \
	"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"
# A legacy client goes through the daemon and gets no Forwarded.
out=$(timeout 60 $legacy afbus-echo-client com.example.Native 50 2>&1)
expect_eq "50 legacy calls to a native name: no Forwarded for a legacy client" \
	"calls=50 ok=50 errors=0 forwarded=0 owners=" "$out"
out=$(timeout 60 $legacy afbus-echo-client "$lsvc" 20 2>&1)
expect_eq "20 legacy calls to a legacy unique name" \
	"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"

# fds both ways (both ends negotiated fd passing).
out=$(timeout 20 $native afbus-echo-client --fd com.example.Legacy 2>&1)
expect_eq "a native client passes an fd to a legacy service" 'read "through AF_BUS"' "$out"
out=$(timeout 20 $legacy afbus-echo-client --fd com.example.Native 2>&1)
expect_eq "a legacy client passes an fd to a native service" 'read "through AF_BUS"' "$out"
out=$(timeout 20 $legacy afbus-echo-client --fd "$lsvc" 2>&1)
expect_eq "a legacy client passes an fd to a legacy service" 'read "through AF_BUS"' "$out"

# A name moves between a legacy and a native owner, and back.
$legacy afbus-echo-service com.example.Move 1 >/tmp/mv-l.out 2>&1 &
mvl_pid=$!
_pids="$_pids $mvl_pid"
wait_ready /tmp/mv-l.out
mvl=$(sed -n 's/^ready //p' /tmp/mv-l.out)
out=$(timeout 20 $native afbus-echo-client com.example.Move 5 0 2>&1)
expect_match "a legacy client owns com.example.Move" \
	"^calls=5 ok=5 errors=0 forwarded=[0-9]+ owners=$mvl\$" "$out"
$native afbus-echo-service com.example.Move 2 >/tmp/mv-n.out 2>&1 &
mvn_pid=$!
_pids="$_pids $mvn_pid"
wait_ready /tmp/mv-n.out
mvn=$(sed -n 's/^ready //p' /tmp/mv-n.out)
wait_for_line /tmp/mv-l.out '^lost '
expect_match "a native client takes the name over; the legacy one loses it" \
	'^lost com\.example\.Move$' "$(grep '^lost ' /tmp/mv-l.out)"
out=$(timeout 20 $native afbus-echo-client com.example.Move 5 0 2>&1)
expect_match "native calls follow the name to its native owner" \
	"^calls=5 ok=5 errors=0 forwarded=[0-9]+ owners=$mvn\$" "$out"
out=$(timeout 20 $legacy afbus-echo-client com.example.Move 5 0 2>&1)
expect_eq "... and legacy calls" \
	"calls=5 ok=5 errors=0 forwarded=0 owners=$mvn" "$out"
kill $mvn_pid
wait $mvn_pid 2>/dev/null
i=0
while ! timeout 20 $native dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetNameOwner string:com.example.Move 2>/dev/null |
	grep -q "\"$mvl\"" && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
out=$(timeout 20 $native afbus-echo-client com.example.Move 5 0 2>&1)
expect_match "the native owner leaves: the queued legacy client owns it again" \
	"^calls=5 ok=5 errors=0 forwarded=[0-9]+ owners=$mvl\$" "$out"
kill $mvl_pid
wait $mvl_pid 2>/dev/null

# Signals both ways, filtered by the subscribers' rules in the kernel.
$legacy afbus-signal listen "type='signal',interface='com.example.A'" >/tmp/ls-a.out 2>&1 &
_pids="$_pids $!"
$legacy afbus-signal listen "type='signal',interface='com.example.B'" >/tmp/ls-b.out 2>&1 &
_pids="$_pids $!"
$native afbus-signal listen "type='signal',interface='com.example.A'" >/tmp/ns-a.out 2>&1 &
_pids="$_pids $!"
$legacy afbus-signal listen "type='signal',sender='com.example.Emitter'" >/tmp/ls-s.out 2>&1 &
_pids="$_pids $!"
wait_ready /tmp/ls-a.out /tmp/ls-b.out /tmp/ns-a.out /tmp/ls-s.out
la=$(sed -n 's/^ready //p' /tmp/ls-a.out)
la_addr=0x0000$(printf '%012x' "0x${la#:0.}")
expect_match "the kernel has the legacy subscriber's rule, under its address" \
	"^$la_addr	type='signal',interface='com\\.example\\.A'\$" \
	"$(nfdbus-ctl list $AF_PATH 2>&1)"

$native afbus-signal emit com.example.A.Ping 3 native
$legacy afbus-signal emit com.example.A.Ping 3 legacy
$native afbus-signal emit com.example.B.Ping 1 nb
$legacy afbus-signal emit --own com.example.Emitter com.example.C.Ping 2 owned
sleep 1
expect_eq "a legacy subscriber gets native and legacy signals, in order" \
	"com.example.A.Ping native-0 com.example.A.Ping native-1 com.example.A.Ping native-2 com.example.A.Ping legacy-0 com.example.A.Ping legacy-1 com.example.A.Ping legacy-2" \
	"$(signals /tmp/ls-a.out)"
expect_eq "a native subscriber gets them too, in the same order" \
	"$(signals /tmp/ls-a.out)" "$(signals /tmp/ns-a.out)"
expect_eq "a legacy subscriber gets only the signal its rule matches" \
	"com.example.B.Ping nb-0" "$(signals /tmp/ls-b.out)"
expect_eq "a rule on a legacy sender's well-known name" \
	"com.example.C.Ping owned-0 com.example.C.Ping owned-1" "$(signals /tmp/ls-s.out)"
out=$(timeout 20 $legacy afbus-signal emit --self "type='signal',interface='com.example.Self'" \
	com.example.Self.Ping 5 self 2>&1)
expect_eq "a legacy emitter with a matching rule gets each of its signals once" \
	"self=5" "$out"
out=$(timeout 20 $legacy afbus-signal emit --self "type='signal',interface='com.example.Other'" \
	com.example.Self.Ping 5 self 2>&1)
expect_eq "... and none with a rule that does not match" "self=0" "$out"

# Monitors on either transport see a legacy client's signals (kernel
# multicasts) and its calls (through the daemon) once each.
for t in native legacy; do
	client=$native
	[ $t = legacy ] && client=$legacy
	$client dbus-monitor --session "type='signal',interface='com.example.M'" \
		"type='method_call',interface='com.example.Echo',member='Echo'" \
		>/tmp/mon-$t.out 2>&1 &
	_pids="$_pids $!"
done
sleep 2		# dbus-monitor has no ready line
$legacy afbus-signal emit com.example.M.Ping 2 lm
$native afbus-signal emit com.example.M.Ping 1 nm
echo_call "$legacy" com.example.Native monitored >/dev/null
sleep 1
for t in native legacy; do
	expect_eq "a $t monitor sees 3 signals and 1 call, once each" \
		"3 1 1" "$(grep -c 'interface=com.example.M; member=Ping$' /tmp/mon-$t.out) \
$(grep -c 'member=Echo$' /tmp/mon-$t.out) \
$(grep -c 'string "monitored"' /tmp/mon-$t.out)"
done

# NoReply when a legacy callee leaves mid-call.
$legacy afbus-echo-service com.example.Hang >/tmp/hang.out 2>&1 &
hang_pid=$!
wait_ready /tmp/hang.out
hang=$(sed -n 's/^ready //p' /tmp/hang.out)
$native afbus-direct-call "$hang" Hang 20000 >/tmp/hang-direct.out 2>&1 &
c1=$!
$legacy afbus-direct-call com.example.Hang Hang 20000 >/tmp/hang-legacy.out 2>&1 &
c2=$!
# both calls must have reached the service before it dies (30 s at most)
i=0
while [ "$(grep -c '^hang$' /tmp/hang.out)" -lt 2 ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -9 $hang_pid
wait $hang_pid 2>/dev/null
wait $c1
wait $c2
out=$(cat /tmp/hang-direct.out)
expect_match "a native caller of a legacy service that dies gets NoReply" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"
ms=$(elapsed_ms "$out")
check "... before the call's 20 s timeout (took ${ms} ms)" test "${ms:-20000}" -lt 15000
expect_match "... and sees no PeerGone" '^noc 0 peergone 0 stray 0$' "$(tail -n 1 /tmp/hang-direct.out)"
out=$(cat /tmp/hang-legacy.out)
expect_match "a legacy caller of a legacy service that dies gets NoReply" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' "$out"

$native afbus-echo-service com.example.NHang >/tmp/nhang.out 2>&1 &
nhang_pid=$!
wait_ready /tmp/nhang.out
$legacy afbus-direct-call com.example.NHang Hang 20000 >/tmp/nhang-call.out 2>&1 &
c3=$!
wait_for_line /tmp/nhang.out '^hang$'
kill -9 $nhang_pid
wait $nhang_pid 2>/dev/null
wait $c3
expect_match "a legacy caller of a native service that dies gets NoReply" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' \
	"$(cat /tmp/nhang-call.out)"

# Nothing is left on the bus once the clients are gone.
kill $lsvc_pid $nsvc_pid
for p in $_pids; do
	[ "$p" = "$BUS_PID" ] || kill "$p" 2>/dev/null
done
wait_value "$base" bus_sockets
expect_eq "no AF_BUS socket is left once the clients left" "$base" "$(bus_sockets)"
out=$(timeout 20 $legacy dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the daemon still answers legacy clients" 'string "org.freedesktop.DBus"' "$out"

finish
