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
# Every client here runs as root: the user="root" and group="root"
# contexts apply to all of them, between default and mandatory.
# TODO once legacy clients are bridged through AF_BUS pairs: the same
# matrix between an AF_BUS client and a legacy one.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

conf=/tmp/policy-test.conf

# write_conf RELOAD-PATH: the configuration, denying calls to the path
# RELOAD-PATH (the one that ReloadConfig changes).
write_conf() {
	cat >"$conf.tmp" <<EOF_CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
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
    <deny send_type="signal" send_interface="com.example.SendSig"/>
    <deny receive_interface="com.example.Echo" receive_member="Echo" receive_path="/receive"/>
    <deny receive_type="signal" receive_interface="com.example.RecvSig"/>
    <deny receive_sender="com.example.Noisy" receive_type="signal"/>
    <deny send_path="/user_allowed"/>
    <deny send_path="$1"/>
  </policy>
  <policy user="root">
    <allow send_path="/user_allowed"/>
    <allow send_path="/mandatory"/>
  </policy>
  <policy group="root">
    <deny send_path="/group_denied"/>
  </policy>
  <policy context="mandatory">
    <deny send_path="/mandatory"/>
  </policy>
</busconfig>
EOF_CONF
	mv "$conf.tmp" "$conf"
}

write_conf /reload_1
start_bus afbus: "$conf"
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

bg sh -c 'afbus-echo-service com.example.Echo >/tmp/pol-svc.out 2>&1'
check "the service gets its name" wait_for_name com.example.Echo
svc=$(sed -n 's/^ready //p' /tmp/pol-svc.out)
bg sh -c 'afbus-echo-service com.example.Guarded >/tmp/pol-guarded.out 2>&1'
check "the guarded service gets its name" wait_for_name com.example.Guarded
guarded=$(sed -n 's/^ready //p' /tmp/pol-guarded.out)

expect_eq "the daemon has the kernel check senders and apply the policy" \
	"check-sender policy" "$(nfdbus-ctl bus "$path" 2>&1)"
svc_policy=$(nfdbus-ctl peer-policy "$path" "$(addr "$svc")" 2>&1)
expect_match "the service has a kernel policy" '^[1-9][0-9]*$' "$svc_policy"
expect_eq "... the one of every root client (one policy for both services)" \
	"$svc_policy" "$(nfdbus-ctl peer-policy "$path" "$(addr "$guarded")" 2>&1)"
expect_match "... with the send and receive rules of the configuration" \
	'^rules (2[0-9]|1[0-9])$' "$(nfdbus-ctl policy-info "$path" "$svc_policy" | head -n 1)"

# call DEST PATH [METHOD [IFACE]]: dbus-send's output for a call.
call() {
	timeout 20 dbus-send --session --print-reply --reply-timeout=5000 \
		--dest="$1" "$2" "${4:-com.example.Echo}.${3:-Echo}" string:hi 2>&1
}

denied='org\.freedesktop\.DBus\.Error\.AccessDenied: .*over AF_BUS: Operation not permitted'
ok_reply='string "hi"'

# allowed DESC PATH [METHOD [IFACE]] / refused ...: a direct call to the
# service by its unique name.
allowed() {
	out=$(call "$svc" "$2" "$3" "$4")
	expect_match "$1: allowed" "$ok_reply" "$out"
}
refused() {
	d0=$(stat denied)
	out=$(call "$svc" "$2" "$3" "$4")
	expect_match "$1: AccessDenied" "$denied" "$out"
	expect_eq "... refused by the kernel (denied counter)" \
		$((d0 + 1)) "$(stat denied)"
}

allowed "a call no rule denies" /
out=$(call "$svc" / Fail)
expect_match "send_member: deny Fail gives AccessDenied, not the service's error" \
	"$denied" "$out"
refused "send_path /send_path" /send_path
refused "send_interface com.example.Echo on /send_iface" /send_iface
allowed "send_interface com.example.Nope on /other_iface" /other_iface
refused "send_type method_call on /send_type" /send_type
allowed "send_type signal on /other_type" /other_type
out=$(call "$guarded" /)
expect_match "send_destination com.example.Guarded: its owner's unique name is denied" \
	"$denied" "$out"
allowed "send_destination: another service" /
refused "receive_interface/member/path" /receive
allowed "... the same call elsewhere" /receive_not
allowed "user context allows what default denies" /user_allowed
refused "group context denies" /group_denied
refused "mandatory denies what the user context allows" /mandatory
refused "the configuration as loaded denies /reload_1" /reload_1
allowed "... not /reload_2" /reload_2

# Through the daemon (by well-known name) the daemon itself decides.
out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.Guarded / \
	com.example.Echo.Echo string:hi 2>&1)
expect_match "by well-known name the daemon denies too" \
	'org\.freedesktop\.DBus\.Error\.AccessDenied' "$out"

out=$(timeout 20 afbus-echo-service com.example.Forbidden 2>&1)
expect_match "own rules stay in the daemon: RequestName is denied" \
	'is not allowed to own the service "com\.example\.Forbidden"' "$out"

# Signals: multicasts through the kernel, a denied recipient misses them.
bg sh -c "afbus-signal listen \"type='signal',interface='com.example.SendSig'\" \"type='signal',interface='com.example.RecvSig'\" \"type='signal',interface='com.example.Ok'\" \"type='signal',interface='com.example.N'\" >/tmp/pol-sig.out 2>&1"
wait_for_line /tmp/pol-sig.out '^ready '
d0=$(stat denied)
afbus-signal emit com.example.SendSig.Ping 3 send >/dev/null 2>&1
afbus-signal emit com.example.RecvSig.Ping 3 recv >/dev/null 2>&1
afbus-signal emit --own com.example.Noisy com.example.N.Ping 3 noisy >/dev/null 2>&1
afbus-signal emit --own com.example.Quiet com.example.N.Ping 3 quiet >/dev/null 2>&1
afbus-signal emit com.example.Ok.Ping 3 ok >/dev/null 2>&1
wait_for_line /tmp/pol-sig.out '^com\.example\.Ok\.Ping ok-2 '
sigs=$(grep -v '^ready ' /tmp/pol-sig.out | awk '{ print $1, $2 }' | tr '\n' ' ')
expect_eq "only allowed signals arrive: send_type/interface, receive_type/interface, receive_sender" \
	"com.example.N.Ping quiet-0 com.example.N.Ping quiet-1 com.example.N.Ping quiet-2 com.example.Ok.Ping ok-0 com.example.Ok.Ping ok-1 com.example.Ok.Ping ok-2 " "$sigs"
# (signals the emitter's own policy refuses are refused for every
# recipient with a matching rule, the listener only here)
d1=$(stat denied)
check "... the 9 others were denied by the kernel (at least 9 checks)" \
	test "$d1" -ge $((d0 + 9))

# ReloadConfig: the new configuration denies /reload_2, not /reload_1.
write_conf /reload_2
out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ReloadConfig 2>&1)
expect_match "ReloadConfig succeeds" '^method return' "$out"
allowed "after ReloadConfig /reload_1" /reload_1
refused "after ReloadConfig /reload_2" /reload_2
new_policy=$(nfdbus-ctl peer-policy "$path" "$(addr "$svc")" 2>&1)
check "... the service has a new kernel policy" \
	test "$new_policy" != "$svc_policy" -a -n "$new_policy"
out=$(nfdbus-ctl policy-info "$path" "$svc_policy" 2>&1)
expect_match "... and the old one is gone" 'No such file or directory' "$out"
refused "... the rest holds: send_path /send_path" /send_path

finish
