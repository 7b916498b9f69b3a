#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Hostile clients against sd-bus (libsystemd with the afbus: transport),
# on the system bus with Debian's policy, as for the fork's libdbus
# (tests/rootfs/forged-replies.sh, tests/system/direct.sh):
#  - the daemon's own signals forged: while an sd-bus caller waits 20 s for
#    an answer, an unprivileged client sends it
#    org.freedesktop.DBus.AF_BUS.PeerGone (which would end the call with
#    NoReply), ReplyTimeout (1 ms) and Forwarded, straight (AF_BUS) and
#    through the daemon (a unix client); none reaches the caller: the
#    interface is the bus's own (issue 35), the kernel does not deliver
#    such a signal between clients and the daemon refuses it
#    (AccessDenied), while the same signals on another interface (the
#    control) do reach it, all while it waits (checked: each emit is
#    slow under TCG; sd-bus's own timeout is 25 s); the call gets its
#    answer, after the 20 s (sd-bus would act on the bus's signals only
#    from the bus master with SENDER org.freedesktop.DBus anyway);
#  - forged replies: a client (as nobody) sends that caller method returns
#    and errors with the serial of its call and those around it; the
#    kernel refuses each (EPERM: nobody awaits them), and the caller gets
#    the service's answer and nothing else;
#  - a caller that does not read: it floods an sd-bus service with 100
#    calls (as many as the system bus lets one client await: 128) whose
#    answers (64 KiB each) fill its queue; the service goes on answering
#    everybody else at once, and the flooder gets every answer, in order,
#    once it reads.
# On Debian's kernel the sd-bus programs are unix clients: the forged
# signals go through the daemon, which refuses them as well.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS

AS_USER="setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus"
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/"
# the fork's libdbus clients' system bus, as the session bus they use
afbus_addr="$(sed 's/^/afbus:path=/;s/$/;/' /run/dbus/system_bus.afbus 2>/dev/null)unix:path=/run/dbus/system_bus_socket"

sdbus-peer serve com.example.Echo >/tmp/hsvc.out 2>&1 &
svc=$!
_pids=$svc
wait_for_line /tmp/hsvc.out '^ready '
name=$(awk '/^ready/ { print $2 }' /tmp/hsvc.out)
check "an sd-bus service owns com.example.Echo" test -n "$name"

# --- the daemon's signals, forged
$AS_USER sdbus-peer watch-stall "$name" 20000 >/tmp/victim.out 2>&1 &
victim_pid=$!
wait_for_line /tmp/victim.out '^serial '
victim=$(sed -n 's/^unique //p' /tmp/victim.out)
for a in "" "--address=unix:path=/run/dbus/system_bus_socket"; do
	# shellcheck disable=SC2086  # $a: one option or none
	for sig in "PeerGone s $name" "ReplyTimeout i 1" \
		"Forwarded stuss com.example.Echo 281474976710657 0 $name $name"; do
		for iface in org.freedesktop.DBus.AF_BUS com.example.NotTheBus; do
			$AS_USER timeout 20 busctl $a emit --destination="$victim" /org/freedesktop/DBus \
				$iface $sig >>/tmp/forge-signals.out 2>&1 ||
				echo "emit failed: $iface $sig" >>/tmp/forge-signals.out
		done
	done
done
kill -0 $victim_pid 2>/dev/null && waited=yes || waited=no
wait $victim_pid
out=$(cat /tmp/victim.out)
expect_eq "the caller still waited when the last forged signal was sent" yes "$waited"
expect_eq "the forged signals were sent (12: AF_BUS and through the daemon, bus's interface and another)" "" \
	"$(grep 'emit failed' /tmp/forge-signals.out)"
expect_eq "... none on the bus's interface reached the sd-bus caller (kernel policy, daemon's AccessDenied)" 0 \
	"$(echo "$out" | grep -c '^stray 4 [^ ]* org\.freedesktop\.DBus\.AF_BUS\.')"
expect_eq "... the same signals on another interface did (6, the application sees them)" 6 \
	"$(echo "$out" | grep -c '^stray 4 :[0-9.a-f]* com\.example\.NotTheBus\.')"
expect_match "... which still got its answer" '^reply stalled$' "$out"
ms=$(elapsed_ms "$out")
check "... after the 20 s stall (${ms:-none} ms), not at once" test "${ms:-0}" -ge 20000

# --- forged replies
: >/tmp/victim.out # (not the first victim's "serial" line)
$AS_USER sdbus-peer watch-stall "$name" 10000 >/tmp/victim.out 2>&1 &
victim_pid=$!
wait_for_line /tmp/victim.out '^serial '
victim=$(sed -n 's/^unique //p' /tmp/victim.out)
serial=$(sed -n 's/^serial //p' /tmp/victim.out)
: >/tmp/forge.out
for s in $((serial - 2)) $((serial - 1)) $serial $((serial + 1)) $((serial + 2)); do
	[ "$s" -gt 0 ] || continue
	for t in "" error; do
		# shellcheck disable=SC2086  # $t: error or nothing
		DBUS_SESSION_BUS_ADDRESS=$afbus_addr timeout 20 $AS_NOBODY \
			afbus-reply forge "$victim" $s $t >>/tmp/forge.out 2>&1
	done
done
wait $victim_pid
out=$(cat /tmp/victim.out)
n=$(grep -c '^forge: ' /tmp/forge.out)
case $AFBUS_KERNEL in
afbus)
	expect_eq "the kernel refused every forged reply to the sd-bus caller ($n)" \
		"$n forge: Operation not permitted" "$(sort /tmp/forge.out | uniq -c | awk '{ $1 = $1; print }')"
	sed 's/^/#   /' /tmp/forge.out
	;;
stock)
	# (afbus-reply forge sends through the kernel only)
	skip "the kernel refused every forged reply to the sd-bus caller" "no AF_BUS on Debian's kernel"
	;;
esac
expect_match "... which got the service's answer" '^reply stalled$' "$out"
expect_eq "... and no other reply or error" "" "$(echo "$out" | grep -E '^stray [23] ')"

# --- a caller that does not read
$AS_USER env DBUS_SESSION_BUS_ADDRESS="$afbus_addr" \
	timeout 200 afbus-slow-caller "$name" 100 65536 >/tmp/slow.out 2>&1 &
slow=$!
wait_for_line /tmp/slow.out '^sent '
slow_pid=$(sed -n 's/^sent //p' /tmp/slow.out)
sleep 3
t0=$(date +%s%N)
out=$(timeout 30 sdbus-peer call "$name" 20 2>&1)
t1=$(date +%s%N)
expect_match "while a caller does not read 100 answers of 64 KiB, the sd-bus service answers another at once" \
	'^calls=20 ok=20 errors=0 ' "$out"
echo "# 20 calls took $(((t1 - t0) / 1000000)) ms"
expect_match "... and an sd-bus service of systemd answers too (hostnamed)" 'Static hostname: ' \
	"$(timeout 60 hostnamectl status 2>&1)"
check "... the flooder still waits (no result yet)" test -z "$(grep '^replies=' /tmp/slow.out)"
kill -USR1 "$slow_pid" 2>/dev/null
wait $slow
expect_match "the flooder gets all 100 answers, in order, once it reads" \
	'^replies=100 ok=100 in-order=1 errors=0' "$(grep '^replies=' /tmp/slow.out)"
finish
