#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# GDBus on AF_BUS: GLib's own D-Bus implementation with the afbus:
# transport of glib/ (libgio and gdbus in /usr/libexec/afbus/glib, used
# through LD_LIBRARY_PATH; Debian's stay the default, for the legacy
# client tests).  On a bus that listens on AF_BUS and on a unix socket:
# gdbus call, introspect and monitor over afbus:, to the bus driver, to
# a service of the fork's libdbus and to a GDBus service (gdbus-py); a
# GDBus service's socket is a joined AF_BUS client; a GDBus client calls
# it by unique name while the daemon is stopped (SIGSTOP), so through
# the kernel alone; names: a queued owner gets the name when the first
# leaves, as on unix:, and a watcher sees each owner; file descriptors
# (GUnixFDList) through the kernel; signals filtered in the kernel by
# the subscribers' rules (the rule in nfdbus, nothing queued to a
# stopped subscriber's socket that its rule does not match); an afbus:
# entry that does not connect falls back to the next address, and a
# malformed one is refused.
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

G=/usr/libexec/afbus/glib
GPY=/usr/libexec/afbus/gdbus-py
# $GD COMMAND...: COMMAND on the afbus: build of libgio (env execs it:
# $! of "$GD ... &" is the program's own pid)
GD="env LD_LIBRARY_PATH=$G"
GDBUS="$GD $G/gdbus"

start_mixed_bus /tmp/gdbus-afbus || not_ok "the bus starts"
bus=$(cat "$D/bus.afbus")
AFP=afbus:path=$bus
DBUS_SESSION_BUS_ADDRESS="$AF;$UX"
export DBUS_SESSION_BUS_ADDRESS

# The transport: GDBus takes the first address, afbus:
out=$($GD timeout 20 $GPY transport session 2>&1)
expect_match "a GDBus client connects over afbus: (GDBusAfbusStream), named after its bus address" \
	'^GDBusAfbusStream :0\.[1-9a-f][0-9a-f]*$' "$out"
out=$(timeout 20 $GPY transport session 2>&1)
expect_match "... Debian's GDBus skips afbus: and uses the socket" '^GUnixConnection :0\.' "$out"
out=$($GD timeout 20 $GPY transport "afbus:path=/nonexistent/bus;$UX" 2>&1)
expect_match "an afbus: entry that does not connect falls back to the next address" \
	'^GUnixConnection :0\.' "$out"
out=$($GD timeout 20 $GPY transport "afbus:path=$bus,abstract=x" 2>&1)
expect_match "afbus: with two locations is refused" "cannot specify two of" "$out"
out=$($GD timeout 20 $GPY transport "afbus:tmpdir=/tmp" 2>&1)
expect_match "afbus:tmpdir= is refused for a client" "only meaningful for a listening address" "$out"
out=$($GD timeout 20 $GPY transport "afbus:file=$D/bus.afbus" 2>&1)
expect_match "afbus:file= reads the bus's path" '^GDBusAfbusStream :0\.' "$out"

# gdbus, the tool
out=$($GDBUS call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
	--method org.freedesktop.DBus.GetNameOwner org.freedesktop.DBus 2>&1)
expect_eq "gdbus call over afbus: to the bus driver" "('org.freedesktop.DBus',)" "$out"

afbus-echo-service com.example.Echo >/tmp/gdbus-echo.out 2>&1 &
_pids="$_pids $!"
wait_ready /tmp/gdbus-echo.out
echo_name=$(sed -n 's/^ready //p' /tmp/gdbus-echo.out)
out=$($GDBUS call --session --dest com.example.Echo --object-path / \
	--method com.example.Echo.Echo "through the kernel" 2>&1)
expect_eq "gdbus call over afbus: to a service of the fork's libdbus, by name" \
	"('through the kernel',)" "$out"
out=$($GDBUS call --session --dest "$echo_name" --object-path / \
	--method com.example.Echo.Whoami 2>&1)
expect_eq "... and by unique name" "('$echo_name',)" "$out"
out=$($GDBUS call --session --dest com.example.Echo --object-path / \
	--method com.example.Echo.Fail 2>&1)
expect_match "... its error reaches gdbus" 'com\.example\.Echo\.Error\.Failed' "$out"

# A GDBus service on afbus:
$GD $GPY service session com.example.GEcho >/tmp/gdbus-svc.out 2>&1 &
svc=$!
_pids="$_pids $svc"
wait_for_line /tmp/gdbus-svc.out '^acquired '
gname=$(sed -n 's/^ready \([^ ]*\) .*/\1/p' /tmp/gdbus-svc.out)
expect_match "a GDBus service owns its name over afbus:" \
	'^ready :0\.[0-9a-f]+ GDBusAfbusStream$' "$(head -n 1 /tmp/gdbus-svc.out)"
ino=$(bus_client_sockets $svc)
expect_match "... its socket is an AF_BUS client, joined" \
	"^[0-9a-f]+ +$ino +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"
out=$($GDBUS introspect --session --dest com.example.GEcho --object-path / 2>&1)
expect_match "gdbus introspect over afbus: of the GDBus service" 'ReadFd\(in +h ' "$out"
out=$(timeout 60 afbus-echo-client com.example.GEcho 20 2>&1)
expect_match "a client of the fork's libdbus calls the GDBus service (20 calls)" \
	'^calls=20 ok=20 errors=0 ' "$out"
out=$(timeout 60 env DBUS_SESSION_BUS_ADDRESS=$UX afbus-echo-client com.example.GEcho 5 2>&1)
expect_match "... and a legacy (unix:) client of it" '^calls=5 ok=5 errors=0 ' "$out"
out=$($GD timeout 60 $GPY call session com.example.GEcho 50 2>&1)
expect_match "a GDBus client calls the GDBus service by name (50 calls)" \
	'^calls=50 ok=50 errors=0$' "$out"

# By unique name while the daemon is stopped: through the kernel alone
rm -f /tmp/gdbus-go
$GD $GPY call session "$gname" 200 /tmp/gdbus-go >/tmp/gdbus-stopped.out 2>&1 &
caller=$!
wait_for_line /tmp/gdbus-stopped.out '^connected '
kill -STOP "$BUS_PID"
stopped=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$BUS_PID/status)
touch /tmp/gdbus-go
wait_exit $caller
during=$status
out=$(timeout 2 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId 2>&1; echo "rc=$?")
kill -CONT "$BUS_PID"
expect_eq "the daemon was stopped" T "$stopped"
expect_match "... a call to the daemon then got no answer" 'rc=1[0-9][0-9]$' "$out"
expect_eq "a GDBus client's 200 calls by unique name to a GDBus service, all answered meanwhile" \
	"calls=200 ok=200 errors=0 0" "$(grep '^calls=' /tmp/gdbus-stopped.out) $during"

# File descriptors through the kernel (GUnixFDList)
out=$($GD timeout 20 $GPY fd session com.example.GEcho "a pipe from GDBus" 2>&1)
expect_eq "a GDBus client passes a pipe to the GDBus service" "read a pipe from GDBus" "$out"
out=$($GD timeout 20 $GPY fd session "$echo_name" "a pipe to libdbus" 2>&1)
expect_eq "... and to the fork's libdbus service" "read a pipe to libdbus" "$out"

# Signals: a multicast, filtered in the kernel by each subscriber's rules
$GD $GPY listen session "$gname" 3 >/tmp/gdbus-l1.out 2>&1 &
l1=$!
$GD $GPY listen session "$echo_name" 1 >/tmp/gdbus-l2.out 2>&1 &
l2=$!
$GDBUS monitor --session --dest com.example.GEcho >/tmp/gdbus-mon.out 2>&1 &
mon=$!
_pids="$_pids $l2 $mon"
wait_ready /tmp/gdbus-l1.out /tmp/gdbus-l2.out
sleep 1
# The subscriptions' rules are in the kernel (nfdbus): with both
# subscribers stopped (SIGSTOP: nothing read), the kernel queues the 3
# signals to the matching one's socket and none to the other's (RecvQ
# of /proc/net/bus).
l2name=$(sed -n 's/^ready //p' /tmp/gdbus-l2.out)
l2addr=0x0000$(printf '%012x' "0x${l2name#:0.}")
expect_match "the kernel has the GDBus subscriber's rule (g_dbus_connection_signal_subscribe)" \
	"^$l2addr	.*interface='com\\.example\\.Echo'" "$(nfdbus-ctl list "$bus" "$l2addr" 2>&1)"
# recvq PID: messages queued to PID's AF_BUS client socket
recvq() {
	awk -v i="$(bus_client_sockets "$1" | head -n 1)" '$2 == i && $4 == "client" { print $8 }' /proc/net/bus
}
kill -STOP $l1 $l2
q1=$(recvq $l1) q2=$(recvq $l2)
$GDBUS call --session --dest com.example.GEcho --object-path / \
	--method com.example.Echo.Emit hello 3 >/dev/null 2>&1
sleep 0.5
expect_eq "the kernel queued the 3 signals to the stopped matching subscriber, none to the other" \
	"3 0" "$(($(recvq $l1) - ${q1:-99})) $(($(recvq $l2) - ${q2:-99}))"
kill -CONT $l1 $l2
wait_exit $l1
expect_eq "a GDBus subscriber gets the GDBus service's 3 signals, in order" \
	"Ping $gname hello 1
Ping $gname hello 2
Ping $gname hello 3" "$(grep '^Ping' /tmp/gdbus-l1.out)"
sleep 0.5
expect_eq "... one subscribed to another sender gets none" "" "$(grep '^Ping' /tmp/gdbus-l2.out)"
expect_eq "gdbus monitor over afbus: sees them" 3 "$(grep -c 'com.example.Echo.Ping' /tmp/gdbus-mon.out)"

# Names: a queued owner, NameOwnerChanged
$GD $GPY watch session com.example.GQueue 60 >/tmp/gdbus-watch.out 2>&1 &
watcher=$!
_pids="$_pids $watcher"
sleep 1
$GD $GPY service session com.example.GQueue >/tmp/gdbus-q1.out 2>&1 &
q1=$!
wait_for_line /tmp/gdbus-q1.out '^acquired '
$GD $GPY service session com.example.GQueue >/tmp/gdbus-q2.out 2>&1 &
q2=$!
_pids="$_pids $q2"
wait_for_line /tmp/gdbus-q2.out '^ready '
sleep 1
q1name=$(sed -n 's/^ready \([^ ]*\) .*/\1/p' /tmp/gdbus-q1.out)
q2name=$(sed -n 's/^ready \([^ ]*\) .*/\1/p' /tmp/gdbus-q2.out)
check "a second GDBus owner of the name is queued" test -z "$(grep '^acquired' /tmp/gdbus-q2.out)"
$GDBUS call --session --dest com.example.GQueue --object-path / --method com.example.Echo.Quit >/dev/null 2>&1
wait_exit $q1
wait_for_line /tmp/gdbus-q2.out '^acquired com.example.GQueue'
check "... and gets it when the first leaves" grep -q '^acquired com.example.GQueue' /tmp/gdbus-q2.out
out=$($GDBUS call --session --dest com.example.GQueue --object-path / --method com.example.Echo.Whoami 2>&1)
expect_eq "... calls to the name reach the new owner" "('$q2name',)" "$out"
sleep 1
kill $watcher
expect_eq "a GDBus watcher sees the first owner, then the second (NameOwnerChanged)" \
	"appeared com.example.GQueue $q1name
appeared com.example.GQueue $q2name" "$(grep '^appeared' /tmp/gdbus-watch.out)"

finish
