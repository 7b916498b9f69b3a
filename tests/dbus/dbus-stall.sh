#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A client that stops reading holds up nobody but those who talk to it,
# and each of them only as far as a limit says:
# - its receive queue in the kernel holds at most 1024 messages
#   (BUS_SET_MAXQLEN); a peer sending to it directly then gets EAGAIN,
#   and its libdbus keeps the rest in its own outgoing queue (its own
#   memory) until the stalled peer reads or leaves (dbus-queue.sh);
# - dbus-daemon never blocks on it: its sockets are non-blocking, and
#   what it cannot write waits in its outgoing queue for that
#   connection, at most max_outgoing_bytes of the bus configuration
#   (1 GB in session.conf, 127 MB by default as in system.conf; 256 KiB
#   here), past which the daemon refuses messages for it with
#   LimitsExceeded;
# - everybody else goes on: other services answer, the daemon answers.
# The flooding clients are unprivileged (uid 65534; the bus lets
# anybody connect).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

conf=/tmp/stall-bus.conf
cat >"$conf" <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/session.conf</include>
  <limit name="max_outgoing_bytes">262144</limit>
  <policy context="default">
    <allow user="*"/>
  </policy>
</busconfig>
CONF
start_bus afbus: "$conf"
bg sh -c 'exec afbus-echo-service com.example.Slow >/tmp/s-slow.out 2>&1'
slow_pid=$!
bg sh -c 'afbus-echo-service com.example.Echo >/tmp/s-echo.out 2>&1'
check "the stalling service gets its name" wait_for_name com.example.Slow
check "the other service gets its name" wait_for_name com.example.Echo
slow=$(sed -n 's/^ready //p' /tmp/s-slow.out)

# The service stops reading until SIGUSR1 (no timer ends the stall, so
# a slow machine changes nothing; 120 s at most); 1500 direct calls
# fill its queue.
as_nobody /tmp/s-flood.out \
	"DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS exec afbus-flood-client $slow 1500 120000"
flood=$!
wait_for_line /tmp/s-flood.out '^flushing'
# 16 calls of 64 KiB by name go through the daemon, which cannot write
# them to the full queue: it keeps 256 KiB worth and refuses the rest.
as_nobody /tmp/s-big.out \
	"DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS exec afbus-flood-client com.example.Slow 16 0 - 65536"
big=$!
wait_for_line /tmp/s-big.out '^flushing'

out=$(timeout 60 afbus-echo-client com.example.Echo 20 2>&1)
expect_match "another service answers 20 calls while the first one stalls" \
	'^calls=20 ok=20 ' "$out"
out=$(timeout 60 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.ListNames 2>&1)
expect_match "the daemon answers meanwhile" 'string "com.example.Slow"' "$out"
# The order of events, not a time: the flooding client is still blocked.
check "... all while the stalled service's queue is still full" \
	sh -c "kill -0 $flood && ! grep -q '^calls=' /tmp/s-flood.out"
flood_uid=$(for _d in /proc/[0-9]*; do
	tr '\0' ' ' <"$_d/cmdline" 2>/dev/null | grep -q "^afbus-flood-client $slow " &&
		grep '^Uid:' "$_d/status"
done)
expect_match "... which an unprivileged client filled" '^Uid:.65534.' "$flood_uid"
kill -USR1 "$slow_pid"

wait $flood
expect_match "the calls to the stalled service all get their replies, in order" \
	'^calls=1500 ok=1500 in-order=1 ' "$(cat /tmp/s-flood.out)"
wait $big
expect_kept_and_refused "through the daemon" /tmp/s-big.out 16

out=$(timeout 20 afbus-echo-client com.example.Slow 3 2>&1)
expect_match "the service that stalled answers again" '^calls=3 ok=3 ' "$out"

finish
