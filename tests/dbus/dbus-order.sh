#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One client's messages to a well-known name arrive in the order it sent
# them, as from dbus-daemon (issue 17, item 4), across the name's
# restart: the client's library has the name's address from the
# daemon's Forwarded, the service quits, and the client sends 2000
# numbered calls to the name.  The first find the address without an
# owner: the kernel refuses them (BUS_NO_DEFAULT_ROUTE) and the library
# sends them, and everything after them, through the daemon, which
# activates the service again; the library goes back to the address only
# once the daemon said it passed on all of them.  Before, those first
# calls took the kernel's default route to the daemon unseen by the
# library, which kept sending to the address, and once the new instance
# had it, later calls went straight to it, ahead of the ones the daemon
# still held.
. /usr/libexec/afbus/dbus-test-lib.sh

# gated TAG OUT COMMAND...: COMMAND in the background, its output in
# OUT, reading a fifo this shell holds open on fd 7 (each "echo go >&7"
# lets it go on, "exec 7>&-" ends its input); its pid in $gated_pid.
gated() {
	_fifo=/tmp/$1-go _out=$2
	shift 2
	rm -f "$_fifo"
	mkfifo "$_fifo"
	"$@" <"$_fifo" >"$_out" 2>&1 &
	gated_pid=$!
	exec 7>"$_fifo"
}
cd /tmp

activatable com.example.Order

start_bus afbus:

for round in 1 2 3; do
	out=$(timeout 120 afbus-order-client com.example.Order 2000 2>&1)
	expect_match "round $round: the client had the name's address" \
		'^cached 1[0-9a-f]{12}$' "$out"
	expect_match "... its 2000 calls across the restart all arrived, in order" \
		'^seq=2000 in-order=1$' "$out"
	timeout 20 dbus-send --session --print-reply --dest=com.example.Order / \
		com.example.Echo.Quit >/dev/null 2>&1
done

# More names than the library's cache holds (64), each with calls still
# in the daemon: the daemon is stopped while a client makes 3 rounds of
# calls to 70 names of one service.  While any call waits in the
# daemon, every call goes through it (before, the cache counted them
# per name, and a name could lose its count to another).  Each name's
# calls must be answered in order, and once the daemon has passed all
# of them on, a fourth round, the most recently used names first, goes
# straight to the 64 names the cache holds (6 of its 70 calls earn a
# Forwarded).
bg sh -c 'afbus-daemon-calls serve com.example.Many 70 >/tmp/order-many.out 2>&1'
wait_for_line /tmp/order-many.out '^ready '
gated order /tmp/order-burst.out afbus-daemon-calls burst com.example.Many 70 3
burst_pid=$gated_pid
wait_for_line /tmp/order-burst.out '^connected$'
kill -STOP $BUS_PID
echo go >&7
exec 7>&-
sleep 2
kill -CONT $BUS_PID
wait_exit $burst_pid
out=$(tail -n 1 /tmp/order-burst.out)
expect_match "70 names x 3 rounds sent while the daemon was stopped, then a 4th: all 280 answered, each name's in order" \
	'^replies=280 in-order=1 ' "$out"
f=$(printf '%s\n' "$out" | sed -n 's/.*last-forwarded=//p')
expect_eq "... the 4th round then went straight to the 64 cached names (calls through the daemon)" \
	6 "$f"

# One sender's messages to one receiver, by its well-known name and by
# its unique name in turn, arrive in the order sent (issue 17, item 3).
# The client has no address for the name yet: its first call goes
# through the daemon, and while that one waits there, so do the calls
# to the unique name behind it (before, they went straight to the
# owner and overtook it).  The second time the owner is stopped while
# the first 1500 calls go to its name: its queue fills (1024 messages),
# the daemon
# queues the calls it cannot hand on, and says so (Forwarded with
# address 0 and the owner).  Once the daemon has answered them all
# (the client's GetId returns), the other 1500 alternate between the
# two names: until the daemon's queue for the owner is empty, they too
# go through the daemon, behind the ones it holds.
for stop in no yes; do
	bg afbus-echo-service com.example.Mixed$stop >/tmp/mixed-svc.out 2>&1
	mixed_pid=$!
	wait_for_line /tmp/mixed-svc.out '^ready '
	mixed_svc=$(sed -n 's/^ready //p' /tmp/mixed-svc.out)
	gated mixed /tmp/mixed.out afbus-order-client \
		$([ $stop = yes ] && echo --after || echo --mixed) \
		com.example.Mixed$stop 3000 200
	client_pid=$gated_pid
	wait_for_line /tmp/mixed.out '^connected '
	[ $stop = yes ] && kill -STOP "$mixed_pid"
	echo go >&7
	exec 7>&-
	if [ $stop = yes ]; then
		wait_for_line /tmp/mixed.out '^queued$'
		sleep 2
		kill -CONT "$mixed_pid"
	fi
	wait_exit $client_pid
	expect_eq "3000 calls to a name and its owner's unique name, owner stopped: $stop: the client used the owner's unique name" \
		"connected $mixed_svc" "$(sed -n 1p /tmp/mixed.out)"
	expect_eq "... all arrived, in the order sent" \
		"seq=3000 in-order=1" "$(tail -n 1 /tmp/mixed.out)"
done

# A receiver that does not read slows down only what goes to it: a
# client queues 1500 calls for it (the daemon holds the ~500 past its
# 1024-message queue), then calls another service by its unique name 20
# times with the daemon stopped, which only direct calls survive.
bg afbus-echo-service com.example.Hog >/tmp/hog-svc.out 2>&1
hog_pid=$!
bg afbus-echo-service com.example.Peer >/tmp/peer-svc.out 2>&1
wait_ready /tmp/hog-svc.out /tmp/peer-svc.out
peer=$(sed -n 's/^ready //p' /tmp/peer-svc.out)
kill -STOP $hog_pid
gated hog /tmp/hog.out afbus-order-client --hog com.example.Hog 1500 "$peer" 20
client_pid=$gated_pid
wait_for_line /tmp/hog.out '^synced$'
kill -STOP $BUS_PID
echo go >&7
wait_for_line /tmp/hog.out '^peer-calls='
kill -CONT $BUS_PID
kill -CONT $hog_pid
echo go >&7
exec 7>&-
wait_exit $client_pid
expect_eq "1500 calls queued for a receiver that does not read: the same client's 20 calls to another service still go straight to it" \
	"peer-calls=20 ok=20" "$(grep '^peer-calls=' /tmp/hog.out)"
expect_eq "... and once the receiver reads, it gets all 1500, in order" \
	"seq=1500 in-order=1" "$(tail -n 1 /tmp/hog.out)"

# A call to the driver is ordered before the same client's later
# messages, as dbus-daemon orders them (issue 35, item 3).  AddMatch sent
# without waiting for its reply (dbus_bus_add_match() with no error),
# then a call by unique name to a service that answers with a signal
# the rule matches, with the daemon stopped: the daemon has not told the
# kernel about the rule when the call would reach the service, so the
# call goes through the daemon, behind the AddMatch, and the signal
# comes.  (Before, the call went straight to the service, whose signal
# the kernel dropped for want of the rule.)
bg afbus-echo-service com.example.Answer >/tmp/answer-svc.out 2>&1
wait_for_line /tmp/answer-svc.out '^ready '
answer_svc=$(sed -n 's/^ready //p' /tmp/answer-svc.out)
gated answer /tmp/answer.out afbus-order-client --match com.example.Answer
client_pid=$gated_pid
wait_for_line /tmp/answer.out '^connected '
kill -STOP $BUS_PID
echo go >&7
exec 7>&-
sleep 2
kill -CONT $BUS_PID
wait_exit $client_pid
expect_eq "AddMatch sent without waiting, then a direct call answered with a signal, daemon stopped between: the client called the owner's unique name" \
	"connected $answer_svc" "$(sed -n 1p /tmp/answer.out)"
expect_eq "... the call was answered and the signal delivered" \
	"reply=1 signal=1" "$(tail -n 1 /tmp/answer.out)"

# RequestName sent without waiting, then a signal for everybody, with
# the daemon stopped: a subscriber whose rule says sender=the name gets
# it (the signal waits in the client's queue until the daemon answered;
# before, the kernel multicast it at once, from a client that did not
# own the name yet, and the subscriber's rule did not match).
bg afbus-signal listen "type='signal',sender='com.example.Owned',member='Answer'" \
	>/tmp/owned-listen.out 2>&1
wait_for_line /tmp/owned-listen.out '^ready '
gated owned /tmp/owned.out afbus-order-client --own com.example.Answer com.example.Owned
client_pid=$gated_pid
wait_for_line /tmp/owned.out '^connected '
kill -STOP $BUS_PID
echo go >&7
sleep 2
kill -CONT $BUS_PID
wait_for_line /tmp/owned.out '^owner='
sleep 1
echo go >&7
exec 7>&-
wait_exit $client_pid
expect_eq "RequestName sent without waiting, then a signal, daemon stopped between: the client became the name's owner" \
	"owner=1" "$(grep '^owner=' /tmp/owned.out)"
expect_eq "... and the subscriber with sender=the name got the signal" \
	1 "$(grep -c '^com.example.Echo.Answer own ' /tmp/owned-listen.out)"

finish
