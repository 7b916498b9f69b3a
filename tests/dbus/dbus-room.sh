#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Many callers that stop reading do not hold up a native service's
# replies to the others (issue 36, per-recipient flow control).  The
# service's libdbus asks the kernel for room notifications
# (BUS_ROOM_NOTIFY, af_bus.rst "Room notifications"): the replies to a
# caller whose queue is full wait, in order, in the service's outgoing
# queue until the kernel says that caller read, and the replies to
# everybody else go on (write_pass() in dbus-transport-afbus.c).  No
# timer polls the full callers (the service sleeps while nobody else
# calls) and there is no cap on how many may be full (before, 17 such
# callers held up every reply).  Nothing is lost: each hostile caller
# gets all its replies, in order, once it reads; until then they cost
# the service's memory, at most max_replies_per_connection replies per
# caller where the bus tracks replies.
# The 100 hostile callers run as uid 65534, as whom the bus lets anybody
# connect.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

N=100
# Each caller's receive buffer (max_outgoing_bytes) holds one 32 KiB
# reply: three of its four wait in the service.
start_mixed_bus /tmp/room max_outgoing_bytes=65536 '<allow user="*"/>' ||
	{ not_ok "the daemon starts"; finish; }
chmod 0777 "$D/bus.sock"
export DBUS_SESSION_BUS_ADDRESS=$AF
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

bg sh -c 'afbus-echo-service com.example.Echo >/tmp/room-svc.out 2>&1'
check "the service gets its name" wait_for_name com.example.Echo
svc=$(sed -n 's/^ready //p' /tmp/room-svc.out)
svc_pid=$(pidof afbus-echo-service)

# wakeups PID: how often the process went to sleep and was woken.
wakeups() {
	sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$1/status"
}

# callers_with REGEX: how many of the callers' outputs have a line
# matching REGEX (grep -E).
callers_with() {
	grep -lE -- "$1" /tmp/room-c/[0-9]*.out 2>/dev/null | wc -l
}

# wait_callers REGEX: until each of the N callers printed a line matching
# REGEX or ended ("exit STATUS", which the shell running it adds), for
# as long as that takes while callers get there; the guard against a
# hang is 180 s in which none got there, after which the check that
# follows fails with its count.
wait_callers() {
	_last=-1 _idle=0
	while :; do
		_c=$(callers_with "$1|^exit ")
		[ "$_c" -ge $N ] && return 0
		if [ "$_c" != "$_last" ]; then
			_last=$_c _idle=0
		elif [ $_idle -ge 1800 ]; then
			echo "# no caller got further in 180 s: $_c of $N did"
			return 1
		fi
		sleep 0.1
		_idle=$((_idle + 1))
	done
}

rm -rf /tmp/room-c
mkdir /tmp/room-c
chmod 0777 /tmp/room-c
as_nobody /tmp/room-c/all.out "for i in \$(seq 1 $N); do
	(DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller $svc 4 32768
	 echo \"exit \$?\") >/tmp/room-c/\$i.out 2>&1 &
done; wait"
hostile=$!
wait_callers '^sent '
expect_eq "$N callers as uid 65534 made 4 calls each, with 32 KiB replies, and stopped reading" \
	$N "$(cat /tmp/room-c/[0-9]*.out | grep -c '^sent ')"
pid1=$(sed -n 's/^sent //p' /tmp/room-c/1.out)
expect_match "... they run as uid 65534" '^Uid:.65534.' \
	"$(grep '^Uid:' /proc/$pid1/status 2>&1)"

expect_answered_meanwhile "10 calls of another client are answered meanwhile" \
	"$svc" "$svc"
expect_answered_meanwhile "... and 10 by the service's name" com.example.Echo
expect_match "... and 10 with 32 KiB replies" '^calls=10 ok=10 errors=0 ' \
	"$(timeout 60 afbus-echo-client "$svc" 10 -1 32768 2>&1)"

# (Not a performance assert: a service that polls its full callers with
# a timer wakes about 15 times in 1.5 s, one that spins burns its CPU.)
_w0=$(wakeups $svc_pid)
_t0=$(cpu_ticks $svc_pid)
sleep 1.5
_w1=$(wakeups $svc_pid)
_t1=$(cpu_ticks $svc_pid)
check "... the service sleeps while the $N callers do not read ($((_w1 - _w0)) wakeups, $((_t1 - _t0)) ticks of CPU in 1.5 s)" \
	test $((_w1 - _w0)) -lt 5 -a $((_t1 - _t0)) -lt 30

# The first caller reads again: it gets all its replies while the 99
# others still do not read (its notification is its own).
kill -USR1 "$pid1"
wait_for_line /tmp/room-c/1.out '^replies=' 600
expect_match "caller 1 reads again and gets its 4 replies, in order" \
	'^replies=4 ok=4 in-order=1 errors=0$' "$(grep '^replies=' /tmp/room-c/1.out)"
expect_eq "... while the other $((N - 1)) have read nothing" 0 \
	"$(cat /tmp/room-c/[0-9]*.out | grep -c '^replies=' | awk '{ print $1 - 1 }')"

# Then all read: nothing was lost.
for f in /tmp/room-c/[0-9]*.out; do
	p=$(sed -n 's/^sent //p' "$f")
	[ "$f" = /tmp/room-c/1.out ] || kill -USR1 "$p"
done
wait_callers '^replies=' && wait $hostile
expect_eq "all $N callers then read and get their 4 replies each, whole and in order ($((N * 4)) replies)" \
	$N "$(cat /tmp/room-c/[0-9]*.out | grep -c '^replies=4 ok=4 in-order=1 errors=0$')"
expect_match "... and the service still answers" '^calls=10 ok=10 errors=0 ' \
	"$(timeout 60 afbus-echo-client "$svc" 10 2>&1)"
# (what the callers that did not get their 4 replies, and a service that
# ended, said: for a failure above)
grep -L '^replies=4 ok=4 in-order=1 errors=0$' /tmp/room-c/[0-9]*.out | head -n 3 |
	while read -r f; do sed "s|^|#   $f: |" "$f"; done
kill -0 "$svc_pid" 2>/dev/null ||
	sed 's/^/#   the service ended; it said: /' /tmp/room-svc.out | tail -n 5

# A relay the kernel refuses for another reason than the caller's limit
# is answered too, with the error dbus-daemon sends for that cause
# (issue 35; the table of doc/afbus-transport.md 4.8).  A callee as uid
# 65534 with 16 files allowed (RLIMIT_NOFILE) stalls without reading
# (for 10 min: longer than the case, however slow the kernel), and gets
# 24 files in 3 direct messages; a fresh client's call
# with a file to its well-known name then goes through the daemon, whose
# relay the kernel refuses (ETOOMANYREFS: the recipient's user holds too
# many files in flight), and its caller gets LimitsExceeded from the
# daemon at once (before, the daemon dropped it and the caller waited
# for its own 10 s).
as_nobody /tmp/room-hoard.out "ulimit -n 16 &&
	DBUS_SESSION_BUS_ADDRESS=$AF exec afbus-echo-service com.example.Hoard"
check "a service as uid 65534 with 16 files allowed owns com.example.Hoard" \
	wait_for_name com.example.Hoard
hoard=$(sed -n 's/^ready //p' /tmp/room-hoard.out)
hoard_pid=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetConnectionUnixProcessID string:"$hoard" 2>&1 |
	sed -n 's/^ *uint32 //p')
timeout 20 dbus-send --session --type=method_call --dest=com.example.Hoard / \
	com.example.Echo.Stall uint32:600000 >/dev/null 2>&1
out=$(timeout 30 afbus-fds --no-reply --count 3 "$hoard" 8 2>&1)
expect_eq "... 3 direct messages with 8 files each queued to it" \
	"$(printf 'no error\nno error\nno error')" "$out"
out=$(timeout 30 afbus-fds com.example.Hoard 1 2>&1)
printf "%s\n" "$out" | head -n 3 | sed "s/^/#   /"
expect_match "a call with a file through the daemon to it: LimitsExceeded from the daemon at once, saying the kernel refused it" \
	'^error org\.freedesktop\.DBus\.Error\.LimitsExceeded from org\.freedesktop\.DBus: The kernel refused to deliver the message to com\.example\.Hoard' "$out"
# (the stalled callee would outlive the daemon until its stall ends,
# and finish waits for it)
kill "$hoard_pid"

finish
