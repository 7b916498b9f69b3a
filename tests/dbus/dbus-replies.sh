#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Replies nobody asked for, on a bus managed by the fork's dbus-daemon
# with the default policy of the system bus (system.conf's, with holes
# for the test services as a service's system.d file would punch them).
# The daemon has the kernel track replies (nfdbus, NFDBUS_BUS_REPLIES):
# a method return or error from one AF_BUS client reaches another only
# as the answer to a call it awaits from that client, once, and with the
# system policy (<allow send_requested_reply="true" .../>) an unrequested
# one is refused: sendmsg(2) fails with EPERM and nfdbus counts it
# ("unrequested").  Monitors still see it, as dbus-daemon's see the
# replies it rejects.  A caller awaiting max_replies_per_connection
# replies gets LimitsExceeded for its next call.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

svcdir=/tmp/replies-services
activatable com.example.RActivated \
	"/usr/bin/afbus-reply serve com.example.RActivated" "$svcdir"

# write_conf FILE AF-FILE [LIMIT-LINE]: the default policy of upstream's
# system.conf (1.14), the test services' holes, root may monitor.
write_conf() {
	cat >"$1" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>afbus:file=$2</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$svcdir</servicedir>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus" />
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus"
          send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <!-- the test services' holes -->
  <policy context="default">
    <allow own_prefix="com.example"/>
    <allow send_destination="com.example.Reply"/>
    <allow send_destination="com.example.RActivated"/>
  </policy>
  ${3:-}
</busconfig>
EOF
}

unrequested() {
	nfdbus-ctl stats | sed -n 's/^unrequested //p'
}

conf=/tmp/replies.conf
rm -f /tmp/replies.afbus
write_conf "$conf" /tmp/replies.afbus
# (before the daemon starts: the services it activates get it too)
DBUS_SESSION_BUS_ADDRESS=afbus:file=/tmp/replies.afbus
export DBUS_SESSION_BUS_ADDRESS
check "the daemon starts with the system policy" \
	start_config_bus "$conf" /tmp/replies.afbus
path=$(cat /tmp/replies.afbus)

svc_out=/tmp/rp-svc.out
bg sh -c "afbus-reply serve com.example.Reply >$svc_out 2>&1"
wait_ready $svc_out
svc=$(sed -n 's/^ready //p' $svc_out)
check "the service gets its name" test -n "$svc"
# (the daemon takes charge of its bus when the first client joins)
expect_eq "the daemon has the kernel track replies, with its limits (128, never)" \
	"check-sender policy replies max-replies=128 reply-timeout=0" \
	"$(nfdbus-ctl bus "$path" 2>&1)"

# The legitimate cases.
out=$(timeout 30 afbus-reply call "$svc" Echo 20000 direct 2>&1 | tail -n 1)
expect_eq "a direct call gets its reply" "reply $svc direct" "$out"
out=$(timeout 30 afbus-reply call com.example.Reply Echo 20000 named 2>&1 | tail -n 1)
expect_eq "a call through the daemon (well-known name) gets its reply" \
	"reply $svc named" "$out"
out=$(timeout 60 afbus-reply call com.example.RActivated Echo 30000 activated 2>&1 | tail -n 1)
expect_match "a call that activates its service gets its reply" \
	'^reply :0\.[0-9a-f]+ activated$' "$out"
out=$(timeout 30 afbus-reply call "$svc" Fd 20000 2>&1 | tail -n 1)
expect_eq "a reply carrying a file descriptor" \
	"reply $svc read \"reply with a pipe\"" "$out"

# many_held N HELD: N Hold calls from one caller, released once the
# service has held HELD calls since it started.
many_held() {
	: >/tmp/rp-many.out
	timeout 120 afbus-reply many "$svc" "$1" 60000 >/tmp/rp-many.out 2>&1 &
	many_pid=$!
	wait_for_line $svc_out "^held $2\$"
	wait_for_line /tmp/rp-many.out '^sent '
	timeout 30 afbus-reply call "$svc" Release 20000 >/dev/null 2>&1
	wait "$many_pid"
}
# 128 calls awaiting their replies at once (the system bus' limit),
# answered together; the 129th is over the limit.
before=$(nfdbus-ctl stats | sed -n 's/^replies-exceeded //p')
many_held 128 128
expect_eq "a caller with 128 calls outstanding gets its 128 replies" \
	"replies=128 errors=0" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
many_held 129 256
expect_eq "... and with 129, one gets an error" \
	"replies=128 errors=1" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
expect_match "... LimitsExceeded, as from dbus-daemon" \
	'^first-error org\.freedesktop\.DBus\.Error\.LimitsExceeded: The maximum number of pending replies' \
	"$(cat /tmp/rp-many.out)"
expect_eq "... counted (replies-exceeded)" $((before + 1)) \
	"$(nfdbus-ctl stats | sed -n 's/^replies-exceeded //p')"

# A monitor, to see the refused replies.
bg sh -c 'dbus-monitor --session >/tmp/rp-mon.out 2>&1'
wait_seen "$DBUS_SESSION_BUS_ADDRESS" /tmp/rp-mon.out

# The monitor's copies of the calls (the daemon sends them with the
# caller as SENDER) must not count as calls awaiting replies: the daemon
# marks the monitor's address (NFDBUS_PEER_MONITOR) when it becomes one.
before=$(nfdbus-ctl stats | sed -n 's/^replies-exceeded //p')
many_held 128 384
expect_eq "with a monitor on the bus, a caller with 128 calls outstanding gets its 128 replies" \
	"replies=128 errors=0" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
expect_eq "... none over the limit (replies-exceeded)" "$before" \
	"$(nfdbus-ctl stats | sed -n 's/^replies-exceeded //p')"
expect_match "nfdbus-ctl peer: the kernel marks only connected clients" \
	'peer: No such file or directory' \
	"$(nfdbus-ctl peer "$path" 0x7fffffff monitor 2>&1)"

# Right serial, wrong replier: while the service holds the caller's
# call (Stall: it answers only once told to, by a Release), a third
# client answers it.  The forgers start once the service said it has
# the call, and the service answers once they are done: no race with
# a clock however slow the kernel (the call's own timeout, 10 min, and
# the tool's, are guards against a hang only).
base=$(unrequested)
timeout 900 afbus-reply call "$svc" Stall 600000 >/tmp/rp-call.out 2>&1 &
call_pid=$!
wait_for_line /tmp/rp-call.out '^serial ' 600
serial=$(sed -n 's/^serial //p' /tmp/rp-call.out)
caller=$(sed -n 's/^caller //p' /tmp/rp-call.out)
wait_for_line $svc_out "^stalling $caller $serial\$" 600
expect_eq "the service holds the call unanswered" \
	"stalling $caller $serial" "$(grep '^stalling ' $svc_out | tail -n 1)"
out=$(afbus-reply forge "$caller" "$serial" 2>&1)
expect_eq "a method return from the wrong replier, right serial: EPERM" \
	"forge: Operation not permitted" "$out"
out=$(afbus-reply forge "$caller" "$serial" error 2>&1)
expect_eq "an error from the wrong replier, right serial: EPERM" \
	"forge: Operation not permitted" "$out"
expect_eq "... the service answers it once told to" "reply $svc released" \
	"$(timeout 30 afbus-reply call "$svc" Release 20000 2>&1 | tail -n 1)"
wait "$call_pid"
expect_eq "the caller gets the true reply, from the service" \
	"reply $svc stalled" "$(tail -n 1 /tmp/rp-call.out)"

# Replayed reply, and an error after the callee already answered.
out=$(timeout 30 afbus-reply call "$svc" Twice 20000 2>&1)
expect_eq "the caller of Twice gets the first answer" "reply $svc first" \
	"$(printf '%s\n' "$out" | grep '^reply ')"
expect_eq "... and no other (its application sees no second reply)" "late-seen 0" \
	"$(printf '%s\n' "$out" | grep '^late-seen ')"
wait_for_line /tmp/rp-svc.out '^late-error: '
expect_eq "the same reply sent again: EPERM" \
	"replay: Operation not permitted" "$(grep '^replay: ' /tmp/rp-svc.out | tail -n 1)"
expect_eq "an error to a call already answered: EPERM" \
	"late-error: Operation not permitted" "$(grep '^late-error: ' /tmp/rp-svc.out | tail -n 1)"

# A reply to a call sent with NO_REPLY_EXPECTED.
out=$(timeout 30 afbus-reply unasked "$svc" 2000 2>&1)
wait_for_line /tmp/rp-svc.out '^unasked: '
expect_eq "a reply to a call that expected none: EPERM" \
	"unasked: Operation not permitted" "$(grep '^unasked: ' /tmp/rp-svc.out | tail -n 1)"
expect_eq "... and the caller's application never sees it" "replies-seen 0" \
	"$(printf '%s\n' "$out" | tail -n 1)"

expect_eq "the 5 refused replies are counted (unrequested)" $((base + 5)) "$(unrequested)"

# The monitor sees the refused replies, as dbus-daemon's monitors see
# the replies it rejects.
wait_for_line /tmp/rp-mon.out 'string "unasked"'
expect_eq "the monitor shows the forged return and error" "1 1" \
	"$(grep -E "^method return .* -> destination=$caller .*reply_serial=$serial\$" /tmp/rp-mon.out | grep -vc " sender=$svc ") $(count_lines /tmp/rp-mon.out "^error .* -> destination=$caller error_name=com.example.Reply.Error.Forged reply_serial=$serial\$")"
expect_eq "... the replayed reply and the late error" "2 1" \
	"$(monitor_strings /tmp/rp-mon.out "^method return .* sender=$svc " | grep -cx first) $(count_lines /tmp/rp-mon.out "^error .* sender=$svc .*error_name=com.example.Reply.Error.Late ")"
expect_eq "... and the reply to the call that expected none" 1 \
	"$(monitor_strings /tmp/rp-mon.out "^method return .* sender=$svc " | grep -cx unasked)"

# Calls still work after all that.
out=$(timeout 30 afbus-reply call "$svc" Echo 20000 after 2>&1 | tail -n 1)
expect_eq "a direct call still gets its reply" "reply $svc after" "$out"

kill "$BUS_PID" 2>/dev/null
wait "$BUS_PID" 2>/dev/null

# max_replies_per_connection at 4: the fifth call awaiting a reply gets
# LimitsExceeded; the kernel takes the daemon's limit.
conf4=/tmp/replies4.conf
rm -f /tmp/replies4.afbus
rm -f /tmp/replies4.sock
write_conf "$conf4" /tmp/replies4.afbus \
	'<limit name="max_replies_per_connection">4</limit>
  <listen>unix:path=/tmp/replies4.sock</listen>'
DBUS_SESSION_BUS_ADDRESS=afbus:file=/tmp/replies4.afbus
check "a daemon with max_replies_per_connection 4 (and legacy clients) starts" \
	start_config_bus "$conf4" /tmp/replies4.afbus /tmp/replies4.sock
svc_out=/tmp/rp-svc4.out
bg sh -c "afbus-reply serve com.example.Reply >$svc_out 2>&1"
wait_ready $svc_out
svc=$(sed -n 's/^ready //p' $svc_out)
expect_eq "... and gives the kernel that limit" \
	"check-sender policy replies max-replies=4 reply-timeout=0" \
	"$(nfdbus-ctl bus "$(cat /tmp/replies4.afbus)" 2>&1)"
many_held 5 4
expect_eq "4 calls outstanding get their replies, the fifth an error" \
	"replies=4 errors=1" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
expect_match "... LimitsExceeded" \
	'^first-error org\.freedesktop\.DBus\.Error\.LimitsExceeded: ' "$(cat /tmp/rp-many.out)"
many_held 4 8
expect_eq "4 calls outstanding, no more, all get their replies" \
	"replies=4 errors=0" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"

# A legacy monitor (unix:) gets its copies through its AF_BUS socket
# (C1), which the daemon marks instead; then a native one beside it.
bg sh -c 'dbus-monitor --address unix:path=/tmp/replies4.sock >/tmp/rp-mon4l.out 2>&1'
wait_seen unix:path=/tmp/replies4.sock /tmp/rp-mon4l.out
many_held 4 12
expect_eq "with a legacy monitor, 4 calls outstanding all get their replies" \
	"replies=4 errors=0" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
bg sh -c 'dbus-monitor --session >/tmp/rp-mon4n.out 2>&1'
wait_seen "$DBUS_SESSION_BUS_ADDRESS" /tmp/rp-mon4n.out
many_held 4 16
expect_eq "... and with a native one too" \
	"replies=4 errors=0" "$(sed -n 's/^replies=/replies=/p' /tmp/rp-many.out)"
expect_eq "... the monitors saw the Hold calls (8 and 4)" "8 4" \
	"$(count_lines /tmp/rp-mon4l.out '^method call .*member=Hold$') $(count_lines /tmp/rp-mon4n.out '^method call .*member=Hold$')"

finish
