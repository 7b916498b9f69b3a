#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Messages with unix fds that their recipient cannot take, and messages
# with more fds than the bus allows (issue 17, item 8), as dbus-daemon
# handles them:
# - to a client that did not negotiate fd passing: the sender gets
#   org.freedesktop.DBus.Error.NotSupported with dbus-daemon's text
#   (bus/dispatch.c), whether the daemon routes the message or an AF_BUS
#   client sends it straight to the client's address; nothing is dropped
#   silently, and the refused calls leave no reply awaited in the kernel;
# - more than 16 fds (max_message_unix_fds): the sender is disconnected,
#   as by dbus-daemon (upstream's test/fdpass.c, /too-many), never the
#   recipient; a recipient that gets more fds than it takes from a peer
#   that bypassed libdbus drops the message and answers NotSupported.
# The client that does not negotiate fd passing is afbus-nofd-service, a
# raw unix: client (libdbus always negotiates it).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

# a low max_replies_per_connection: a refused call whose reply the
# kernel kept awaiting would soon fail every direct call
check "the daemon starts on afbus: and unix:" \
	start_mixed_bus /tmp/dbus-fds max_replies_per_connection=4
export DBUS_SESSION_BUS_ADDRESS=$AF
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

afbus-nofd-service $D/bus.sock com.example.NoFd >$D/nofd.out 2>&1 &
_pids="$_pids $!"
afbus-echo-service com.example.Native >$D/native.out 2>&1 &
native_pid=$!
_pids="$_pids $native_pid"
wait_ready $D/nofd.out $D/native.out
nofd=$(sed -n 's/^ready //p' $D/nofd.out)
native=$(sed -n 's/^ready //p' $D/native.out)
expect_match "a legacy service that does not negotiate fd passing is on the bus" \
	'^:0\.[0-9a-f]+$' "$nofd"

NS="error org.freedesktop.DBus.Error.NotSupported"
TEXT="Tried to send message with Unix file descriptorsto a client that doesn't support that."

# Straight from an AF_BUS client to the legacy client's address: answered
# in the recipient's name (so that the kernel's reply tracking ends).
out=$(timeout 30 afbus-fds "$nofd" 1 2>&1)
expect_eq "a direct call with an fd to it: NotSupported, dbus-daemon's text" \
	"$NS from $nofd: $TEXT" "$out"
out=$(timeout 60 afbus-fds --count 8 --then "$nofd" 1 2>&1)
expect_eq "8 such calls in a row (limit 4) are all answered NotSupported" \
	8 "$(printf '%s\n' "$out" | grep -c "^$NS from $nofd: ")"
expect_eq "... and leave no reply awaited: a call without fds then works" \
	"then: reply " "$(printf '%s\n' "$out" | tail -n 1)"
out=$(timeout 30 afbus-fds --signal "$nofd" 1 2>&1)
expect_eq "a direct signal with an fd: NotSupported from the daemon" \
	"$NS from org.freedesktop.DBus: $TEXT" "$out"
out=$(timeout 30 afbus-fds --no-reply "$nofd" 1 2>&1)
expect_eq "a direct call awaiting no reply, with an fd: NotSupported from the daemon" \
	"$NS from org.freedesktop.DBus: $TEXT" "$out"

# Through the daemon (a well-known name, or from a legacy client).
out=$(timeout 30 afbus-fds com.example.NoFd 1 2>&1)
expect_eq "an AF_BUS client's call by name, through the daemon: NotSupported" \
	"$NS from org.freedesktop.DBus: $TEXT" "$out"
out=$(timeout 30 $legacy afbus-fds com.example.NoFd 1 2>&1)
expect_eq "a legacy client's call with an fd: NotSupported" \
	"$NS from org.freedesktop.DBus: $TEXT" "$out"

expect_eq "the service got none of the messages with fds" \
	0 "$(grep -c ReadFd $D/nofd.out)"
out=$(timeout 20 dbus-send --session --print-reply --dest="$nofd" / \
	com.example.Echo.Echo string:x 2>&1)
expect_match "... and still answers calls without fds" '^method return' "$out"

# The limit: 16 fds.
out=$(timeout 30 afbus-fds "$native" 16 2>&1)
expect_eq "16 fds straight to an AF_BUS service" 'reply through AF_BUS' "$out"
out=$(timeout 30 afbus-fds com.example.Native 16 2>&1)
expect_eq "16 fds through the daemon" 'reply through AF_BUS' "$out"
out=$(timeout 30 $legacy afbus-fds com.example.Native 16 2>&1)
expect_eq "16 fds from a legacy client" 'reply through AF_BUS' "$out"
out=$(timeout 30 afbus-fds "$native" 17 2>&1)
expect_eq "17 fds straight to a peer: the sender is disconnected, as by dbus-daemon" \
	disconnected "$out"
out=$(timeout 30 afbus-fds com.example.Native 17 2>&1)
expect_eq "17 fds through the daemon: the sender is disconnected" \
	disconnected "$out"
out=$(timeout 30 afbus-fds --signal "$native" 17 2>&1)
expect_eq "a signal with 17 fds: the sender is disconnected" \
	disconnected "$out"
out=$(timeout 30 $legacy afbus-fds com.example.Native 17 2>&1)
expect_eq "17 fds from a legacy client: the daemon disconnects it (upstream)" \
	disconnected "$out"

# A peer bypassing libdbus sends more fds than the recipient takes.
out=$(timeout 30 afbus-fds --raw --then "$native" 20 2>&1)
expect_eq "20 fds sent raw to an AF_BUS service: NotSupported from it" \
	"$NS from $native: Tried to send message with more Unix file descriptors than the recipient takes" \
	"$(printf '%s\n' "$out" | head -n 1)"
expect_eq "... and the caller's next call is answered" \
	"then: reply then" "$(printf '%s\n' "$out" | tail -n 1)"
out=$(timeout 30 afbus-fds "$native" 1 2>&1)
expect_eq "the recipient stayed on the bus and takes fds" 'reply through AF_BUS' "$out"
check "... its process is still running" kill -0 "$native_pid"
check "the daemon is still running" kill -0 "$BUS_PID"

# A lower max_message_unix_fds holds for messages through the daemon,
# whose sender it disconnects as dbus-daemon does; the kernel does not
# know the limit, so direct messages may carry up to 16.
mixed_bus_config $D/four.conf afbus:file=$D/four.afbus unix:path=$D/four.sock
config_limit $D/four.conf max_message_unix_fds 4
check "a daemon with max_message_unix_fds 4 starts" \
	start_config_bus $D/four.conf $D/four.afbus $D/four.sock
export DBUS_SESSION_BUS_ADDRESS=afbus:file=$D/four.afbus
afbus-echo-service com.example.Four >$D/four.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/four.out
four=$(sed -n 's/^ready //p' $D/four.out)
out=$(timeout 30 afbus-fds com.example.Four 4 2>&1)
expect_eq "4 fds through that daemon" 'reply through AF_BUS' "$out"
out=$(timeout 30 afbus-fds com.example.Four 5 2>&1)
expect_eq "5 fds through that daemon: the sender is disconnected" \
	disconnected "$out"
out=$(timeout 30 afbus-fds "$four" 5 2>&1)
expect_eq "5 fds straight to a peer on that bus go through" \
	'reply through AF_BUS' "$out"

finish
