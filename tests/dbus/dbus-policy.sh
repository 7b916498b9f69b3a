#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# D-Bus policy for messages AF_BUS clients send each other directly: the
# daemon gives each client's <allow>/<deny> send and receive rules to the
# kernel (nfdbus policies), which applies them.  A denied method call
# fails with org.freedesktop.DBus.Error.AccessDenied (the caller's
# kernel send fails with EPERM), a denied signal is not delivered;
# ReloadConfig changes what is allowed.  Calls go to unique names, which
# AF_BUS clients call directly (never through the daemon).
#
# The same matrix between an AF_BUS client and a legacy (unix:) one,
# which the daemon bridges through an AF_BUS pair of its own (C1/A1):
# - an AF_BUS client calls a legacy one directly, at its C1 address: the
#   kernel applies the caller's send rules and the receive rules of the
#   legacy client's kernel policy (C1's), as between AF_BUS clients;
# - a legacy client's calls go through the daemon, which applies the
#   policy as upstream does (AccessDenied "Rejected send/receive
#   message"; the kernel never sees a denied one);
# - a legacy client's signals are kernel multicasts from its C1, which
#   the kernel filters with the send rules of C1's policy and each
#   recipient's receive rules.
#
# Every client here runs as root: the user="root" and group="root"
# contexts apply to all of them, between default and mandatory.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

conf=/tmp/policy-test.conf
UX=unix:path=/tmp/policy-unix
# $legacy COMMAND...: run COMMAND as a legacy client (on unix:)
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

# write_conf RELOAD-PATH: the configuration, denying calls to the path
# RELOAD-PATH (the one that ReloadConfig changes).
write_conf() {
	cat >"$conf.tmp" <<EOF_CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$UX</listen>
  <listen>afbus:</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny own="com.example.Forbidden"/>
    <deny send_interface="com.example.Echo" send_member="Fail"/>
    <deny send_path="/send_path"/>
    <deny send_interface="com.example.Echo" send_path="/send_iface"/>
    <deny send_interface="com.example.Nope" send_path="/other_iface"/>
    <deny send_type="method_call" send_path="/send_type"/>
    <deny send_type="signal" send_path="/other_type"/>
    <deny send_destination="com.example.Guarded"/>
    <deny send_destination="com.example.LegacyGuarded"/>
    <deny send_type="signal" send_interface="com.example.SendSig"/>
    <deny receive_interface="com.example.Echo" receive_member="Echo" receive_path="/receive"/>
    <deny receive_type="signal" receive_interface="com.example.RecvSig"/>
    <deny receive_sender="com.example.Noisy" receive_type="signal"/>
    <deny send_path="/user_allowed"/>
    <deny receive_path="/recv_user_allowed"/>
    <deny send_path="/prefix"/>
    <allow send_destination_prefix="com.example.Echo" send_path="/prefix"/>
    <deny send_path="$1"/>
  </policy>
  <policy user="root">
    <allow send_path="/user_allowed"/>
    <allow send_path="/mandatory"/>
    <allow receive_path="/recv_user_allowed"/>
    <allow receive_path="/recv_mandatory"/>
  </policy>
  <policy group="root">
    <deny send_path="/group_denied"/>
    <deny receive_path="/recv_group_denied"/>
  </policy>
  <policy context="mandatory">
    <deny send_path="/mandatory"/>
    <deny receive_path="/recv_mandatory"/>
  </policy>
</busconfig>
EOF_CONF
	mv "$conf.tmp" "$conf"
}

write_conf /reload_1
start_bus - "$conf"
# AF_BUS clients (the default here) use the afbus: address.
DBUS_SESSION_BUS_ADDRESS=$(printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" | tr ';' '\n' |
	grep '^afbus:')
path=${DBUS_SESSION_BUS_ADDRESS#afbus:path=}
path=${path%%,*}
check "the daemon is up with the test configuration" wait_for_name org.freedesktop.DBus

stat() {
	nfdbus-ctl stats | sed -n "s/^$1 //p"
}

# addr UNIQUE-NAME: the AF_BUS address of a client, as nfdbus-ctl takes it
addr() {
	printf '0x%x' "0x${1#:0.}"
}

# service [CLIENT] NAME: start afbus-echo-service NAME (as CLIENT, such
# as $legacy), until it owns NAME; then unique NAME prints its unique name.
service() {
	client=
	[ $# = 2 ] && { client=$1; shift; }
	bg sh -c "$client afbus-echo-service $1 >/tmp/pol-$1.out 2>&1"
	wait_for_line "/tmp/pol-$1.out" '^ready '
	wait_for_name "$1"
}
unique() {
	sed -n 's/^ready //p' "/tmp/pol-$1.out"
}

check "the service gets its name" service com.example.Echo
svc=$(unique com.example.Echo)
check "the guarded service gets its name" service com.example.Guarded
guarded=$(unique com.example.Guarded)
check "the legacy service gets its name" service "$legacy" com.example.LegacyEcho
lsvc=$(unique com.example.LegacyEcho)
expect_match "... and has the unique name of an AF_BUS address" '^:0\.[0-9a-f]+$' "$lsvc"
check "the guarded legacy service gets its name" \
	service "$legacy" com.example.LegacyGuarded
lguarded=$(unique com.example.LegacyGuarded)

expect_eq "the daemon has the kernel check senders and apply the policy" \
	"check-sender policy replies max-replies=128 reply-timeout=0" \
	"$(nfdbus-ctl bus "$path" 2>&1)"
svc_policy=$(nfdbus-ctl peer-policy "$path" "$(addr "$svc")" 2>&1)
expect_match "the service has a kernel policy" '^[1-9][0-9]*$' "$svc_policy"
expect_eq "... the one of every root client (one policy for both services)" \
	"$svc_policy" "$(nfdbus-ctl peer-policy "$path" "$(addr "$guarded")" 2>&1)"
expect_eq "... and of the legacy services' C1 sockets" \
	"$svc_policy $svc_policy" \
	"$(nfdbus-ctl peer-policy "$path" "$(addr "$lsvc")" 2>&1) $(nfdbus-ctl peer-policy "$path" "$(addr "$lguarded")" 2>&1)"
expect_match "... with the send and receive rules of the configuration" \
	'^rules (2[0-9])$' "$(nfdbus-ctl policy-info "$path" "$svc_policy" | head -n 1)"

# direction FROM-TO: who calls whom from now on: afbus-afbus,
# afbus-legacy or legacy-afbus.  Sets $caller (the client command
# prefix), $to and $guard (the callee's unique names: the service and
# the one send_destination denies).
direction() {
	dir=$1
	case $1 in
	afbus-afbus)	caller= to=$svc guard=$guarded ;;
	afbus-legacy)	caller= to=$lsvc guard=$lguarded ;;
	legacy-afbus)	caller=$legacy to=$svc guard=$guarded ;;
	esac
}

# call DEST PATH [METHOD [IFACE]]: dbus-send's output for a call, as $caller.
call() {
	timeout 20 $caller dbus-send --session --print-reply --reply-timeout=5000 \
		--dest="$1" "$2" "${4:-com.example.Echo}.${3:-Echo}" string:hi 2>&1
}

denied='org\.freedesktop\.DBus\.Error\.AccessDenied: .*over AF_BUS: Operation not permitted'
daemon_denied_send='org\.freedesktop\.DBus\.Error\.AccessDenied: Rejected send message'
daemon_denied_receive='org\.freedesktop\.DBus\.Error\.AccessDenied: Rejected receive message'
ok_reply='string "hi"'

# allowed DESC DEST PATH [METHOD [IFACE]] / refused ...: a call by unique
# name, in the current direction.  An AF_BUS caller is refused by its
# kernel send (the denied counter goes up), a legacy one by the daemon
# (the kernel never sees the call), which says whether the sender's send
# rules or the recipient's receive rules refused it (a DESC that names
# "receive" expects the latter).
allowed() {
	out=$(call "$2" "$3" "$4" "$5")
	expect_match "$dir: $1: allowed" "$ok_reply" "$out"
}
refused() {
	if [ -z "$caller" ]; then
		refused_by kernel "$@"
	else
		refused_by daemon "$@"
	fi
}
# refused_by kernel|daemon DESC DEST PATH [METHOD [IFACE]]
refused_by() {
	by=$1
	shift
	d0=$(stat denied)
	out=$(call "$2" "$3" "$4" "$5")
	if [ $by = kernel ]; then
		expect_match "$dir: $1: AccessDenied" "$denied" "$out"
		expect_eq "... refused by the kernel (denied counter)" \
			$((d0 + 1)) "$(stat denied)"
	else
		case $1 in
		*receive*)	re="$daemon_denied_receive" ;;
		*)		re="$daemon_denied_send" ;;
		esac
		expect_match "$dir: $1: AccessDenied" "$re" "$out"
		expect_eq "... refused by the daemon (kernel denied counter unchanged)" \
			"$d0" "$(stat denied)"
	fi
}

# matrix: every call rule, allowed and denied, in the current direction.
matrix() {
	allowed "a call no rule denies" "$to" /
	refused "send_member: deny Fail, not the service's error" "$to" / Fail
	refused "send_path /send_path" "$to" /send_path
	refused "send_interface com.example.Echo on /send_iface" "$to" /send_iface
	allowed "send_interface com.example.Nope on /other_iface" "$to" /other_iface
	refused "send_type method_call on /send_type" "$to" /send_type
	allowed "send_type signal on /other_type" "$to" /other_type
	refused "send_destination: the unique name of a denied name's owner" "$guard" /
	refused "receive_interface/member/path" "$to" /receive
	allowed "... the same call elsewhere" "$to" /receive_not
	allowed "user context allows what default denies (send)" "$to" /user_allowed
	allowed "... (receive)" "$to" /recv_user_allowed
	refused "group context denies (send)" "$to" /group_denied
	refused "... (receive)" "$to" /recv_group_denied
	refused "mandatory denies what the user context allows (send)" "$to" /mandatory
	refused "... (receive)" "$to" /recv_mandatory
	refused "the configuration as loaded denies /reload_1" "$to" /reload_1
	allowed "... not /reload_2" "$to" /reload_2
}

for d in afbus-afbus afbus-legacy legacy-afbus; do
	direction $d
	matrix
done

# What the kernel cannot check it denies: the daemon allows calls to
# /prefix to owners of com.example.Echo[.*] (the service), but allow
# rules with send_destination_prefix are left out of the kernel's policy.
direction afbus-afbus
refused "send_destination_prefix: the kernel denies what the daemon would allow" \
	"$svc" /prefix
direction legacy-afbus
refused_by kernel "the daemon allows, the kernel refuses the legacy client's C1" \
	"$svc" /prefix
direction afbus-legacy
refused "send_destination_prefix: no prefix, the kernel denies as the daemon would" \
	"$lsvc" /prefix

# Through the daemon (by well-known name) the daemon itself decides.
out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.Guarded / \
	com.example.Echo.Echo string:hi 2>&1)
expect_match "by well-known name the daemon denies too" "$daemon_denied_send" "$out"
out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.LegacyGuarded / \
	com.example.Echo.Echo string:hi 2>&1)
expect_match "... a legacy owner too" "$daemon_denied_send" "$out"

out=$(timeout 20 afbus-echo-service com.example.Forbidden 2>&1)
expect_match "own rules stay in the daemon: RequestName is denied" \
	'is not allowed to own the service "com\.example\.Forbidden"' "$out"
out=$(timeout 20 $legacy afbus-echo-service com.example.Forbidden 2>&1)
expect_match "... to a legacy client too" \
	'is not allowed to own the service "com\.example\.Forbidden"' "$out"

# Signals: multicasts through the kernel, a denied recipient misses them.
# An AF_BUS and a legacy listener; an AF_BUS, then a legacy emitter.
for l in afbus legacy; do
	client=
	[ $l = legacy ] && client=$legacy
	bg sh -c "$client afbus-signal listen \"type='signal',interface='com.example.SendSig'\" \"type='signal',interface='com.example.RecvSig'\" \"type='signal',interface='com.example.Ok'\" \"type='signal',interface='com.example.N'\" >/tmp/pol-sig-$l.out 2>&1"
done
wait_for_line /tmp/pol-sig-afbus.out '^ready '
wait_for_line /tmp/pol-sig-legacy.out '^ready '
for e in afbus legacy; do
	client=
	[ $e = legacy ] && client=$legacy
	d0=$(stat denied)
	$client afbus-signal emit com.example.SendSig.Ping 3 $e-send >/dev/null 2>&1
	$client afbus-signal emit com.example.RecvSig.Ping 3 $e-recv >/dev/null 2>&1
	$client afbus-signal emit --own com.example.Noisy com.example.N.Ping 3 $e-noisy >/dev/null 2>&1
	$client afbus-signal emit --own com.example.Quiet com.example.N.Ping 3 $e-quiet >/dev/null 2>&1
	$client afbus-signal emit com.example.Ok.Ping 3 $e-ok >/dev/null 2>&1
	for l in afbus legacy; do
		wait_for_line /tmp/pol-sig-$l.out "^com\\.example\\.Ok\\.Ping $e-ok-2 "
		sigs=$(awk -v e="^$e-" '$1 != "ready" && $2 ~ e { print $1, $2 }' \
			/tmp/pol-sig-$l.out | tr '\n' ' ')
		expect_eq "$e-$l: only allowed signals arrive: send_type/interface, receive_type/interface, receive_sender" \
			"com.example.N.Ping $e-quiet-0 com.example.N.Ping $e-quiet-1 com.example.N.Ping $e-quiet-2 com.example.Ok.Ping $e-ok-0 com.example.Ok.Ping $e-ok-1 com.example.Ok.Ping $e-ok-2 " "$sigs"
	done
	# (signals the emitter's own policy refuses are refused for every
	# recipient with a matching rule, the two listeners here)
	d1=$(stat denied)
	check "... the 9 others were denied by the kernel for each listener (at least 18 checks)" \
		test "$d1" -ge $((d0 + 18))
done

# ReloadConfig: the new configuration denies /reload_2, not /reload_1.
write_conf /reload_2
out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ReloadConfig 2>&1)
expect_match "ReloadConfig succeeds" '^method return' "$out"
for d in afbus-afbus afbus-legacy legacy-afbus; do
	direction $d
	allowed "after ReloadConfig /reload_1" "$to" /reload_1
	refused "after ReloadConfig /reload_2" "$to" /reload_2
	refused "... the rest holds: send_path /send_path" "$to" /send_path
	refused "... and receive_path /recv_mandatory" "$to" /recv_mandatory
done
new_policy=$(nfdbus-ctl peer-policy "$path" "$(addr "$svc")" 2>&1)
check "... the service has a new kernel policy" \
	test "$new_policy" != "$svc_policy" -a -n "$new_policy"
expect_eq "... and so has the legacy service's C1" \
	"$new_policy" "$(nfdbus-ctl peer-policy "$path" "$(addr "$lsvc")" 2>&1)"
out=$(nfdbus-ctl policy-info "$path" "$svc_policy" 2>&1)
expect_match "... and the old one is gone" 'No such file or directory' "$out"

finish
