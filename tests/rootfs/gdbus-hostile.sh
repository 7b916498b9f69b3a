#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Hostile clients against GDBus on AF_BUS (glib/, through LD_LIBRARY_PATH
# as in gdbus-afbus.sh), on a bus whose receive buffers are 256 KiB
# (max_outgoing_bytes), that lets anybody connect and refuses replies
# nobody asked for, as the system bus does:
#  - a peer (dbus-python on the fork's libdbus, uid 65534) sends a GDBus
#    caller the daemon's own signals, org.freedesktop.DBus.AF_BUS.PeerGone
#    for the callee, ReplyTimeout (1 ms) and Forwarded, straight through
#    the kernel while its call waits: the interface is the bus's own
#    (issue 35), the kernel policy the daemon sets denies such signals
#    between clients (its denied counter goes up by 3; the sender's
#    libdbus drops a refused signal silently, as a denied signal is not
#    reported), so the call gets its real answer, not NoReply (GDBus
#    would act on them only from the bus master, address 0, anyway);
#  - a forged reply to that call is refused by the kernel (reply
#    tracking), and the call still gets its answer;
#  - a caller that stops reading (afbus-slow-caller, uid 65534) fills its
#    receive queue with a GDBus service's 64 KiB replies: the service's
#    replies to it wait, in order, while it answers other callers (by
#    unique name and by name) and calls the daemon; then the slow caller
#    gets all 40 replies, in order.
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

G=/usr/libexec/afbus/glib
GPY=/usr/libexec/afbus/gdbus-py
GD="env LD_LIBRARY_PATH=$G"

start_mixed_bus /tmp/gdbus-hostile max_outgoing_bytes=262144 '<allow user="*"/>' \
	'<deny send_requested_reply="false" send_type="method_return"/>' \
	'<deny send_requested_reply="false" send_type="error"/>' ||
	{ not_ok "the daemon starts"; finish; }
chmod 0777 "$D/bus.sock"
export DBUS_SESSION_BUS_ADDRESS=$AF

$GD $GPY service "$AF" com.example.GHost >/tmp/gh-svc.out 2>&1 &
svc_pid=$!
_pids="$_pids $svc_pid"
wait_for_line /tmp/gh-svc.out '^acquired '
svc=$(sed -n 's/^ready \([^ ]*\) .*/\1/p' /tmp/gh-svc.out)
expect_match "a GDBus service on afbus:" '^:0\.[0-9a-f]+$' "$svc"

# The forger: signals of the daemon's AF_BUS interface, and a reply, sent
# straight to DEST by a peer.
cat >/tmp/gh-forge.py <<'EOF'
import sys
import dbus
import dbus.lowlevel

address, dest, callee, serial = sys.argv[1:5]
bus = dbus.bus.BusConnection(address)
results = []
def send(m):
    m.set_destination(dest)
    try:
        bus.send_message(m)
        bus.flush()
        results.append('sent')
    except dbus.exceptions.DBusException as e:
        results.append(e.get_dbus_name())
for member, sig, args in (
        ('PeerGone', 's', [callee]),
        ('ReplyTimeout', 'i', [1]),
        ('Forwarded', 'stuss', ['com.example.GHost', 0, int(serial), callee, callee])):
    m = dbus.lowlevel.SignalMessage('/org/freedesktop/DBus', 'org.freedesktop.DBus.AF_BUS', member)
    m.append(*args, signature=sig)
    send(m)
print('forger', bus.get_unique_name(), ' '.join(results), flush=True)
EOF

# forged: a GDBus caller's Slow call (8 s); meanwhile the forger (as
# uid 65534) sends the caller the daemon's signals; prints the caller's
# output and the forger's.  The call outlasts the forger's start: on a
# loaded host python3 and dbus take seconds to load, and a forger that
# found the caller gone (2 s once) sent through the daemon, which
# refuses the interface too, so the kernel's counter did not move.
forged() {
	: >/tmp/gh-caller.out # (not an earlier caller's line)
	$GD $GPY slowcall "$AF" "$svc" 8000 >/tmp/gh-caller.out 2>&1 &
	_caller=$!
	wait_for_line /tmp/gh-caller.out '^caller '
	_c=$(sed -n 's/^caller //p' /tmp/gh-caller.out)
	sleep 0.3
	_d0=$(nfdbus-ctl stats | sed -n 's/^denied //p')
	as_nobody /tmp/gh-forge.out "python3 /tmp/gh-forge.py '$AF' '$_c' '$svc' 1"
	wait $!
	_d1=$(nfdbus-ctl stats | sed -n 's/^denied //p')
	wait_exit $_caller
	cat /tmp/gh-caller.out /tmp/gh-forge.out
	echo "denied $((_d1 - _d0))"
}

out=$(forged)
expect_match "a peer sends a GDBus caller PeerGone, ReplyTimeout and Forwarded straight through the kernel" \
	'^forger :0\.[0-9a-f]+ sent sent sent$' "$out"
expect_match "... which the kernel refuses: the bus's own interface (denied counter +3)" \
	'^denied 3$' "$out"
expect_match "... and change nothing: its call gets the service's answer, not NoReply" \
	'^reply slow$' "$out"

# A forged reply (afbus-reply forge: the errno of its send) to a waiting
# call (15 s: the forgeries take a while under TCG)
: >/tmp/gh-caller.out
$GD $GPY slowcall "$AF" "$svc" 15000 >/tmp/gh-caller.out 2>&1 &
caller=$!
wait_for_line /tmp/gh-caller.out '^caller '
c=$(sed -n 's/^caller //p' /tmp/gh-caller.out)
sleep 0.3
forged_reply=""
for serial in 1 2 3 4 5 6 7 8; do
	as_nobody /tmp/gh-reply.out "DBUS_SESSION_BUS_ADDRESS=$AF afbus-reply forge $c $serial"
	wait $!
	forged_reply="$forged_reply $(sed -n 's/^forge: //p' /tmp/gh-reply.out | tr ' ' _)"
done
kill -0 $caller 2>/dev/null && waiting=yes || waiting=no
wait_exit $caller
expect_eq "forged replies to a GDBus caller's serials 1-8 are refused by the kernel" \
	"$(printf ' Operation_not_permitted%.0s' 1 2 3 4 5 6 7 8)" "$forged_reply"
expect_eq "... while its call waited" yes "$waiting"
expect_eq "... and its call gets the service's answer" "reply slow" "$(grep '^reply\|^error' /tmp/gh-caller.out)"

# A caller that stops reading
as_nobody /tmp/gh-slow.out "DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller $svc 40 65536"
slow=$!
wait_for_line /tmp/gh-slow.out '^sent [0-9]+$'
slow_pid=$(sed -n 's/^sent //p' /tmp/gh-slow.out)
expect_match "a caller as uid 65534 makes 40 calls for 64 KiB replies and stops reading" \
	'^Uid:.65534.' "$(grep '^Uid:' /proc/$slow_pid/status 2>&1)"
sleep 1
expect_match "... the GDBus service answers a GDBus client by unique name meanwhile" \
	'^calls=20 ok=20 errors=0$' "$($GD timeout 60 $GPY call "$AF" "$svc" 20 2>&1)"
expect_match "... and by name" \
	'^calls=20 ok=20 errors=0$' "$($GD timeout 60 $GPY call "$AF" com.example.GHost 20 2>&1)"
expect_match "... and a client of the fork's libdbus" \
	'^calls=10 ok=10 errors=0 ' "$(timeout 60 afbus-echo-client "$svc" 10 2>&1)"
t0=$(cpu_ticks $svc_pid)
sleep 1.5
t1=$(cpu_ticks $svc_pid)
check "... the service sleeps while nobody else calls ($((t1 - t0)) ticks of CPU in 1.5 s)" \
	test $((t1 - t0)) -lt 30
check "... all while the slow caller has not read" \
	sh -c "kill -0 $slow && ! grep -q '^replies=' /tmp/gh-slow.out"
kill -USR1 "$slow_pid"
wait $slow
expect_match "... which then gets its 40 replies, whole and in order" \
	'^replies=40 ok=40 in-order=1 errors=0$' "$(cat /tmp/gh-slow.out)"

finish
