#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# sd-bus programs on the system bus (libsystemd with the afbus: transport,
# systemd/): an sd-bus service (sdbus-peer serve) and its sd-bus callers
# are AF_BUS clients, joined, in /proc/net/bus; calls between them, by
# unique name and by well-known name once the caller's library learnt
# the name's address, are answered while the bus daemon is stopped
# (SIGSTOP; a new client's Hello meanwhile is not), so they go through
# the kernel;
# they pass fds, talk to clients of the fork's libdbus both ways, get
# the caller's uid from the bus (sd_bus_query_sender_creds()), and a
# call to a service that dies gets NoReply at once (PeerGone), not at
# its timeout, or at the bus's reply timeout (on a bus of its own with
# reply_timeout 1500 ms) when the callee keeps it.  busctl call,
# introspect, monitor and status work as on Debian's dbus.  On Debian's kernel the same programs are unix clients
# and everything but the kernel's part works.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS

daemon=$(systemctl show -P MainPID dbus.service)
AS_USER="setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus"

sdbus-peer serve com.example.Echo >/tmp/sdsvc.out 2>&1 &
svc=$!
_pids=$svc
wait_for_line /tmp/sdsvc.out '^ready '
name=$(awk '/^ready/ { print $2 }' /tmp/sdsvc.out)
fam=$(awk '/^ready/ { print $3 }' /tmp/sdsvc.out)
expect_match "an sd-bus service owns com.example.Echo on the system bus" '^:[0-9]+\.[0-9a-f]+$' "$name"
sockets=$(bus_client_sockets $svc | tr '\n' ' ')

case $AFBUS_KERNEL in
stock)
	expect_eq "Debian's kernel: its connection is a unix socket" AF_UNIX "$fam"
	expect_eq "... no AF_BUS socket" "" "$sockets"
	expect_match "... an sd-bus caller reaches it by unique name" \
		'^calls=10 ok=10 errors=0 AF_UNIX' "$(timeout 60 sdbus-peer call "$name" 10 2>&1)"
	;;
afbus)
	expect_eq "its connection is an AF_BUS socket" AF_BUS "$fam"
	expect_match "... an AF_BUS client in /proc/net/bus" '^[0-9]+ $' "$sockets"
	expect_match "... joined to the system bus" \
		"^[0-9a-f]+ +${sockets% } +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"

	# A caller connected (its Hello answered, two calls made: its library
	# knows where a well-known name lives), then the daemon stopped.
	for dest in "$name" com.example.Echo; do
		rm -f /tmp/sdin
		mkfifo /tmp/sdin
		sdbus-peer call --wait "$dest" 8 </tmp/sdin >/tmp/sdcall.out 2>&1 &
		caller=$!
		exec 8>/tmp/sdin
		wait_for_line /tmp/sdcall.out '^connected '
		kill -STOP "$daemon"
		stopped=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$daemon/status)
		echo go >&8
		exec 8>&-
		i=0
		while kill -0 $caller 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		out=$(timeout 3 sdbus-peer info 2>&1; echo "rc=$?")
		kill -CONT "$daemon"
		wait $caller
		rc=$?
		expect_eq "the bus daemon was stopped during the calls to $dest" T "$stopped"
		expect_match "... a new sd-bus client got no Hello answer meanwhile" 'rc=124$' "$out"
		expect_match "the sd-bus caller's 8 calls to $dest were answered, the daemon stopped" \
			'^calls=8 ok=8 errors=0 AF_BUS' "$(grep '^calls=' /tmp/sdcall.out)"
		expect_eq "... and it exited 0" 0 "$rc"
	done
	;;
esac

out=$(timeout 30 sdbus-peer call com.example.Echo 10 2>&1)
expect_match "an sd-bus caller reaches it by well-known name" '^calls=10 ok=10 errors=0 ' "$out"
expect_eq "sd-bus passes a pipe to it by unique name" "reply fd-passed" \
	"$(timeout 30 sdbus-peer fd "$name" 2>&1)"
expect_eq "... and by well-known name" "reply fd-passed" \
	"$(timeout 30 sdbus-peer fd com.example.Echo 2>&1)"

# The fork's libdbus and sd-bus, both ways
expect_match "a client of the fork's libdbus calls the sd-bus service" \
	'^calls=10 ok=10 errors=0 ' \
	"$(DBUS_SESSION_BUS_ADDRESS="$(sed 's/^/afbus:path=/;s/$/;/' /run/dbus/system_bus.afbus 2>/dev/null)unix:path=/run/dbus/system_bus_socket" \
		timeout 60 afbus-echo-client "$name" 10 -1 2>&1)"
kill $svc
wait $svc 2>/dev/null
afbus_addr="$(sed 's/^/afbus:path=/;s/$/;/' /run/dbus/system_bus.afbus 2>/dev/null)unix:path=/run/dbus/system_bus_socket"
DBUS_SESSION_BUS_ADDRESS=$afbus_addr afbus-echo-service com.example.Echo >/tmp/fsvc.out 2>&1 &
fsvc=$!
_pids="$_pids $fsvc"
wait_for_line /tmp/fsvc.out '^ready '
fname=$(sed -n 's/^ready //p' /tmp/fsvc.out)
expect_match "an sd-bus caller calls a service of the fork's libdbus by unique name" \
	'^calls=10 ok=10 errors=0 ' "$(timeout 60 sdbus-peer call "$fname" 10 2>&1)"
expect_eq "... and passes it a pipe" "reply fd-passed" "$(timeout 30 sdbus-peer fd "$fname" 2>&1)"
kill $fsvc
wait $fsvc 2>/dev/null

: >/tmp/sdsvc.out # (not the first service's "ready" line)
sdbus-peer serve com.example.Echo >/tmp/sdsvc.out 2>&1 &
svc=$!
_pids="$_pids $svc"
wait_for_line /tmp/sdsvc.out '^ready '
name=$(awk '/^ready/ { print $2 }' /tmp/sdsvc.out)

# The caller's credentials, which sd-bus asks the bus for
expect_eq "the service gets a root caller's uid from the bus" 's "uid 0"' \
	"$(timeout 30 busctl call "$name" / com.example.Echo CallerUid 2>&1)"
expect_eq "... and an unprivileged caller's" "s \"uid $(id -u afbus)\"" \
	"$(timeout 30 $AS_USER busctl call "$name" / com.example.Echo CallerUid 2>&1)"

# busctl, as on Debian's dbus
out=$(timeout 30 busctl introspect com.example.Echo /some/path 2>&1)
expect_match "busctl introspect lists the service's methods" 'com\.example\.Echo +interface' "$out"
expect_match "... with their signatures" '^\.Stall +method +u +s ' "$out"
timeout 20 busctl monitor com.example.Echo >/tmp/busctl-monitor.out 2>&1 &
mon=$!
sleep 2
timeout 30 busctl call com.example.Echo / com.example.Echo Echo s monitored >/dev/null 2>&1
sleep 2
kill $mon 2>/dev/null
wait $mon 2>/dev/null
expect_match "busctl monitor sees the call to the service" 'Member=Echo' "$(cat /tmp/busctl-monitor.out)"
expect_match "... and its reply, with the string" 'STRING "monitored"' "$(cat /tmp/busctl-monitor.out)"
out=$(timeout 30 busctl status com.example.Echo 2>&1)
expect_match "busctl status: the service's pid, from the bus" "^PID=$svc\$" "$out"
expect_match "... and its unique name" "^UniqueName=$name\$" "$out"
out=$(timeout 30 busctl status 2>&1)
expect_match "busctl status of the bus itself" '^BusAddress=' "$out"
expect_match "... the bus owner's (dbus-daemon's) credentials" '^PID=[0-9]+$' "$out"

# A call to a service that dies: NoReply as soon as it is gone
timeout 60 sdbus-peer wait "$name" Hang 20000 >/tmp/hang.out 2>&1 &
hang=$!
sleep 2
kill -9 $svc
wait $svc 2>/dev/null
wait $hang
out=$(cat /tmp/hang.out)
expect_match "a call to an sd-bus service that dies gets NoReply" \
	'^error org\.freedesktop\.DBus\.Error\.NoReply: ' "$out"
ms=$(elapsed_ms "$out")
check "... within 10 s, not at its 20 s timeout (${ms:-none} ms)" test "${ms:-99999}" -lt 10000

# The bus's reply timeout (the library's NoReply for the calls the kernel
# awaits; on Debian's kernel the daemon's), on a bus with reply_timeout
# 1500 ms, by unique name (direct) and by well-known name (through the
# daemon, which hands the call to the service)
start_mixed_bus /tmp/sdbus-timeout reply_timeout=1500
if [ "$AFBUS_KERNEL" = afbus ]; then
	DBUS_SYSTEM_BUS_ADDRESS="$AF;$UX"
else
	DBUS_SYSTEM_BUS_ADDRESS=$UX
fi
export DBUS_SYSTEM_BUS_ADDRESS
sdbus-peer serve com.example.Echo >/tmp/sdsvc-t.out 2>&1 &
_pids="$_pids $!"
wait_for_line /tmp/sdsvc-t.out '^ready '
tname=$(awk '/^ready/ { print $2 }' /tmp/sdsvc-t.out)
for dest in "$tname" com.example.Echo; do
	out=$(timeout 60 sdbus-peer wait "$dest" Hang 20000 2>&1)
	expect_match "a call to $dest that is never answered gets the bus's NoReply" \
		'^error org\.freedesktop\.DBus\.Error\.NoReply: Message did not receive a reply \(timeout by message bus\)' "$out"
	ms=$(elapsed_ms "$out")
	check "... after the bus's 1.5 s (${ms:-none} ms), not its own 20 s" \
		test "${ms:-0}" -ge 1400 -a "${ms:-99999}" -lt 10000
done
expect_match "... and a call answered in time gets its answer" '^reply stalled$' \
	"$(timeout 60 sdbus-peer wait "$tname" Stall 200 20000 2>&1)"
unset DBUS_SYSTEM_BUS_ADDRESS
finish
