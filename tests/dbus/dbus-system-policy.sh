#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bus protocol between the fork's libdbus and dbus-daemon under the
# default policy of Debian's system.conf (method calls denied but to the
# bus driver's own interfaces, with the holes a service's system.d file
# punches), as a system bus runs it (issue 35):
# - NoReply when a callee dies (the library's WatchPeer, on the daemon's
#   interface org.freedesktop.DBus.AF_BUS, which the policy does not
#   list: the daemon takes it whatever the policy says, as it takes
#   Hello), by unique name and by well-known name; NoReply at the bus's
#   reply timeout; Forwarded and the order of one client's calls;
# - that interface is the daemon's alone: a client (uid 65534) that
#   sends another one PeerGone, ReplyTimeout or a call on it, through
#   the daemon or straight through the kernel, changes nothing for it;
# - a message to a name that activation delivers and the policy then
#   refuses leaves the client on the direct path (its Forwarded comes;
#   its next calls are answered with the daemon stopped); one whose
#   Forwarded the daemon could not queue (the client's queue in the
#   daemon over max_outgoing_bytes) is repaired by the next message it
#   sends through the daemon (ForwardedLost), then it is back on the
#   direct path;
# - ReloadConfig gives the kernel and every client's library the new
#   reply_timeout and max_replies_per_connection.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

D=/tmp/sysp
rm -rf $D
mkdir -p $D/services
chmod 0777 $D
AF=afbus:file=$D/bus.afbus
UX=unix:path=$D/bus.sock
CONF=$D/bus.conf
NAMES="com.example.Hang com.example.HangByName com.example.Slow com.example.P
	com.example.Victim com.example.Act com.example.Order"
activatable com.example.Act "/usr/bin/afbus-protocol serve com.example.Act" \
	$D/services

# sysp_conf FILE REPLY-TIMEOUT MAX-REPLIES [LINE...]: the configuration.
# Activation refuses to deliver calls on com.example.Refused: a receive
# rule, which the daemon checks once the service is there.
sysp_conf() {
	_file=$1 _rt=$2 _mr=$3
	shift 3
	# shellcheck disable=SC2086  # one name per word
	system_bus_config "$_file" "$AF" "$UX" \
		"<servicedir>$D/services</servicedir>" \
		"$(system_holes $NAMES)" \
		'<policy context="default">
    <deny receive_interface="com.example.Refused" receive_type="method_call"/>
  </policy>' \
		"<limit name=\"reply_timeout\">$_rt</limit>" \
		"<limit name=\"max_replies_per_connection\">$_mr</limit>" "$@"
}

sysp_conf $CONF 3000 8
DBUS_SESSION_BUS_ADDRESS=$AF
export DBUS_SESSION_BUS_ADDRESS
check "a daemon with system.conf's default policy starts" \
	start_config_bus $CONF $D/bus.afbus $D/bus.sock
path=$(cat $D/bus.afbus)
daemon_pid=$BUS_PID
expect_eq "... its bus: reply tracking at 8 calls, 3000 ms" \
	"check-sender policy replies max-replies=8 reply-timeout=3000" \
	"$(nfdbus-ctl bus "$path" 2>&1)"

# The protocol's own calls: NoReply when the callee dies, not the bus's
# reply timeout (3 s) nor the call's (20 s).
afbus-echo-service com.example.Hang >$D/hang.out 2>&1 &
hang_pid=$!
wait_ready $D/hang.out
hang=$(sed -n 's/^ready //p' $D/hang.out)
afbus-direct-call "$hang" Hang 20000 >$D/call.out 2>&1 &
caller=$!
sleep 1
kill -9 $hang_pid
wait $hang_pid 2>/dev/null
wait $caller
expect_match "system policy: a direct call whose callee dies gets NoReply: recipient disconnected" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' \
	"$(cat $D/call.out)"
killed_by_name $D/calln.out
expect_match "... and a direct call by well-known name" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: Message recipient disconnected' \
	"$(cat $D/calln.out)"
expect_eq "... the daemon rejected none of the library's calls" 0 \
	"$(grep -c 'org.freedesktop.DBus.AF_BUS' $CONF.out)"

# The bus's reply timeout, by unique name and by the daemon.
afbus-echo-service com.example.Slow >$D/slow.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/slow.out
slow=$(sed -n 's/^ready //p' $D/slow.out)
timeout_re='Message did not receive a reply \(timeout by message bus\)'
for dest in "$slow" com.example.Slow; do
	timeout 30 afbus-direct-call "$dest" Hang 20000 >$D/rt.out 2>&1
	ms=$(elapsed_ms "$(cat $D/rt.out)")
	expect_match "system policy: a call to $dest never answered: the bus's NoReply" \
		"^error org\.freedesktop\.DBus\.Error\.NoReply: $timeout_re\$" "$(cat $D/rt.out)"
	check "... after the 3000 ms, before the call's 20 s (took ${ms} ms)" \
		test "${ms:-0}" -ge 3000 -a "${ms:-20000}" -lt 15000
done

# Forwarded: the first call to a name goes through the daemon, which
# tells the library the name's address; then the order of calls
# alternating between the name and its owner's unique name.
out=$(timeout 60 afbus-echo-client com.example.Slow 10 2>&1)
expect_match "system policy: 10 calls to a name, the later ones straight to its address" \
	'^calls=10 ok=10 errors=0 forwarded=([1-9]|10) ' "$out"
afbus-echo-service com.example.Order >$D/order.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/order.out
rm -f $D/order.in
mkfifo $D/order.in
afbus-order-client --mixed com.example.Order 600 64 <$D/order.in >$D/oc.out 2>&1 &
oc=$!
exec 6>$D/order.in
wait_for_line $D/oc.out '^connected '
echo go >&6
exec 6>&-
wait $oc
expect_eq "system policy: 600 calls alternating name and unique name arrive in order" \
	"seq=600 in-order=1" "$(tail -n 1 $D/oc.out)"

# A service, and a victim that owns a name and calls it.
afbus-protocol serve com.example.P >$D/p.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/p.out
p=$(sed -n 's/^ready //p' $D/p.out)
proto_start victim 7
proto victim 7 "own com.example.Victim"
proto victim 7 "name"
victim=${out#name }
NOBODY="su -s /bin/sh nobody -c"
forge() {
	$NOBODY "dbus-send --bus=$AF $*" >$D/forge.out 2>&1
}

# A call through the daemon to a name: its Forwarded names the callee,
# which the library watches.  A PeerGone about that callee, forged by
# nobody through the daemon while the call waits, must not end it.
proto victim 7 "send com.example.P / com.example.Proto.Echo s:warm"
proto victim 7 "read 300"
(sleep 1; forge --type=signal --dest=com.example.Victim /org/freedesktop/DBus \
	org.freedesktop.DBus.AF_BUS.PeerGone string:"$p") &
forger=$!
proto victim 7 "call $p / com.example.Proto.Sleep 20000 u:2500"
wait $forger
expect_match "a PeerGone forged through the daemon (by nobody) does not end the victim's call" \
	'^reply slept$' "$out"
# ReplyTimeout of 1 ms forged the same way: the victim's next calls keep
# the bus's 3000 ms.
forge --type=signal --dest=com.example.Victim /org/freedesktop/DBus \
	org.freedesktop.DBus.AF_BUS.ReplyTimeout int32:1
proto victim 7 "read 300"
proto victim 7 "call $p / com.example.Proto.Sleep 20000 u:500"
expect_match "a ReplyTimeout of 1 ms forged through the daemon does not shorten the victim's calls" \
	'^reply slept$' "$out"
# A call on the daemon's interface through the daemon: AccessDenied.
forge --print-reply --dest=com.example.Victim /org/freedesktop/DBus \
	org.freedesktop.DBus.AF_BUS.PeerGone string:"$p"
expect_match "a call on org.freedesktop.DBus.AF_BUS to a client: AccessDenied, reserved for the bus" \
	'AccessDenied.*reserved for the message bus' "$(cat $D/forge.out)"
# Straight through the kernel, by the victim's unique name: the kernel
# refuses such a signal (the policy the daemon gave it), and counts it.
denied=$(nfdbus-ctl stats | sed -n 's/^denied //p')
forge --type=signal --dest="$victim" /org/freedesktop/DBus \
	org.freedesktop.DBus.AF_BUS.PeerGone string:"$p"
proto victim 7 "wait-signals PeerGone 1 1000"
expect_eq "... and one sent straight to its address never reaches it" \
	"signals PeerGone=0" "$out"
expect_eq "... the kernel refused it (denied)" $((denied + 1)) \
	"$(nfdbus-ctl stats | sed -n 's/^denied //p')"
proto victim 7 "call $p / com.example.Proto.Echo 20000 s:still"
expect_match "... and the victim's calls are answered" '^reply still$' "$out"

# SENDER is stamped without editing the application's message, which
# it may share (here: one signal sent twice): the message keeps no
# SENDER, and the receiver gets both copies with ours (it drops a
# message whose SENDER is not its source's).
proto victim 7 "match type='signal',interface='com.example.Proto',member='Shared'"
proto_start shared 4
proto shared 4 "signal-twice $victim /shared com.example.Proto.Shared u:1"
expect_eq "a message sent twice straight to a peer: the library left its SENDER unset" \
	"sent-twice sender=-" "$out"
proto victim 7 "wait-signals Shared 2 5000"
expect_eq "... and the peer got it twice" "signals Shared=2" "$out"
exec 4>&-

# A call that activates com.example.Act, whose delivery the policy
# refuses once the service is there: AccessDenied, and the caller's
# next calls still go straight through the kernel (answered with the
# daemon stopped).
proto_start act 4
proto act 4 "call com.example.Act / com.example.Refused.Do 30000"
expect_match "a call activation delivers and the policy refuses: AccessDenied" \
	'^error org\.freedesktop\.DBus\.Error\.AccessDenied' "$out"
kill -STOP $daemon_pid
proto act 4 "call $p / com.example.Proto.Echo 3000 s:direct"
kill -CONT $daemon_pid
expect_match "... and the caller's next call goes straight to its callee (the daemon stopped)" \
	'^reply direct$' "$out"

# ReloadConfig: reply_timeout halved, max_replies_per_connection 4.  The
# kernel takes both at once for every client; a client that joined
# before the reload and one that joins after get the bus's NoReply at
# the new timeout.
proto_start before 3
proto before 3 "name"
sysp_conf $CONF 1500 4
out=$(timeout 20 dbus-send --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ReloadConfig 2>&1)
expect_match "ReloadConfig" '^method return' "$out"
expect_eq "... the kernel has the new limits: 4 calls, 1500 ms" \
	"check-sender policy replies max-replies=4 reply-timeout=1500" \
	"$(nfdbus-ctl bus "$path" 2>&1)"
proto before 3 "read 300"
proto before 3 "call $p / com.example.Proto.Hold 20000"
ms=$(elapsed_ms "$out")
expect_match "a client that joined before the reload: the bus's NoReply" \
	"^error org\.freedesktop\.DBus\.Error\.NoReply: $timeout_re\$" "$out"
check "... at the new 1500 ms, not the old 3000 (took ${ms} ms)" \
	test "${ms:-0}" -ge 1500 -a "${ms:-3000}" -lt 2900
timeout 30 afbus-direct-call "$slow" Hang 20000 >$D/rt.out 2>&1
ms=$(elapsed_ms "$(cat $D/rt.out)")
check "... and one that joins after it (took ${ms} ms)" \
	test "${ms:-0}" -ge 1500 -a "${ms:-3000}" -lt 2900
timeout 30 afbus-protocol client >$D/many.out 2>&1 <<EOF
send $p / com.example.Proto.Hold
send $p / com.example.Proto.Hold
send $p / com.example.Proto.Hold
send $p / com.example.Proto.Hold
call $p / com.example.Proto.Hold 20000
EOF
expect_match "... the fifth call awaiting a reply: LimitsExceeded" \
	'^error org\.freedesktop\.DBus\.Error\.LimitsExceeded' "$(cat $D/many.out)"

# A Forwarded the daemon cannot queue: a client whose queue in the
# daemon is over max_outgoing_bytes (64 KiB) while it does not read
# (NameOwnerChanged signals pile up), and which then sends a call to a
# name, through the daemon: the Forwarded for it does not fit, and is
# counted.
kill $daemon_pid
wait $daemon_pid 2>/dev/null
sysp_conf $CONF 3000 8 '<limit name="max_outgoing_bytes">65536</limit>' \
	'<policy context="default"><allow own_prefix="com.example.churn"/></policy>'
check "a daemon with max_outgoing_bytes 64 KiB starts" \
	start_config_bus $CONF $D/bus.afbus $D/bus.sock
daemon_pid=$BUS_PID
afbus-protocol serve com.example.P >$D/p2.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/p2.out
p=$(sed -n 's/^ready //p' $D/p2.out)
rm -f /tmp/proto-lost.in
mkfifo /tmp/proto-lost.in
DBUS_AFBUS_SHOW_INTERNAL=1 afbus-protocol client </tmp/proto-lost.in \
	>/tmp/proto-lost.out 2>&1 &
_pids="$_pids $!"
exec 3>/tmp/proto-lost.in
_proto_n_lost=0
proto lost 3 "match type='signal',interface='org.freedesktop.DBus',member='NameOwnerChanged'"
echo "sleep 10000" >&3
_proto_n_lost=$((_proto_n_lost + 1))
timeout 60 afbus-signal churn 0 1500 >$D/churn.out 2>&1
proto lost 3 "send com.example.P / com.example.Proto.Echo s:lost"
proto lost 3 "read 3000"
proto lost 3 "wait-signals Forwarded 1 100"
expect_eq "a client over its queue limit: the daemon could not queue its Forwarded" \
	"signals Forwarded=0" "$out"
# The next message it sends through the daemon (all do, while it waits
# for that Forwarded) brings ForwardedLost (1) before its own Forwarded,
proto lost 3 "call $p / com.example.Proto.Echo 20000 s:repair"
expect_match "... its next call, through the daemon, is answered" '^reply repair$' "$out"
proto lost 3 "wait-signals ForwardedLost 1 2000"
expect_eq "... and brings it ForwardedLost" "signals ForwardedLost=1" "$out"
# and from then on its calls go straight to their callee again.
kill -STOP $daemon_pid
proto lost 3 "call $p / com.example.Proto.Echo 3000 s:direct"
kill -CONT $daemon_pid
expect_match "... then its calls go straight to their callee (the daemon stopped)" \
	'^reply direct$' "$out"


exec 3>&- 4>&- 7>&-
finish
