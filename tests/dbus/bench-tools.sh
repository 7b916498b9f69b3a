#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The benchmark tools (tests/bench/) do what `make bench` counts on: on
# the afbus bus and peer to peer, every call gets its payload back, every
# matching subscriber gets every signal in order and the others none,
# and AF_BUS multicast reaches every receiver.  Small counts; no timing
# is asserted.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_bus afbus:
bg sh -c 'bench-echo-service --bus "$DBUS_SESSION_BUS_ADDRESS" org.afbus.Echo >/tmp/bench-svc.out 2>&1'
check "the benchmark service gets its name" wait_for_name org.afbus.Echo

for size in 0 4096; do
	out=$(timeout 120 bench-roundtrip -n 300 -w 20 -s $size \
		--bus "$DBUS_SESSION_BUS_ADDRESS" org.afbus.Echo 2>&1)
	expect_match "afbus round trip, $size bytes: 300 calls, 300 payloads back" \
		'^result calls=300 ok=300 ' "$out"
done

bg sh -c 'bench-echo-service --listen unix:path=/tmp/bench-p2p >/tmp/bench-p2p.out 2>&1'
i=0
while [ ! -S /tmp/bench-p2p ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
for run in 1 2; do
	out=$(timeout 120 bench-roundtrip -n 200 -w 10 -s 4096 \
		--peer unix:path=/tmp/bench-p2p 2>&1)
	expect_match "peer-to-peer round trip (client $run): 200 payloads back" \
		'^result calls=200 ok=200 ' "$out"
done

out=$(timeout 300 bench-signals -N 4 -m 150 --bus "$DBUS_SESSION_BUS_ADDRESS" 2>&1)
expect_match "afbus signals to 4 matching subscribers: each gets all 150, in order" \
	'^result subscribers=4 matching=4 signals=150 delivered=600 expected=600 bad=0 ' "$out"
out=$(timeout 300 bench-signals -N 4 -m 150 --half -s 64 --bus "$DBUS_SESSION_BUS_ADDRESS" 2>&1)
expect_match "afbus signals, 2 of 4 subscribers matching: 300 delivered, none astray" \
	'^result subscribers=4 matching=2 signals=150 delivered=300 expected=300 bad=0 ' "$out"
check "bench-signals --half with 3 subscribers exits 0 (its per-subscriber counts hold)" \
	sh -c "timeout 300 bench-signals -N 3 -m 50 --half --bus '$DBUS_SESSION_BUS_ADDRESS' >/dev/null 2>&1"
out=$(timeout 300 bench-signals -N 4 -m 150 --half --peer /tmp 2>&1)
expect_match "peer-to-peer signals, 2 of 4 matching: 300 delivered" \
	'^result subscribers=4 matching=2 signals=150 delivered=300 expected=300 bad=0 ' "$out"

rm -f /tmp/idle.out
bench-idle-peers -k 8 -r 4 --bus "$DBUS_SESSION_BUS_ADDRESS" >/tmp/idle.out 2>&1 &
idle=$!
_pids="$_pids $idle"
i=0
while [ ! -s /tmp/idle.out ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
expect_eq "8 idle peers with 4 match rules each are registered" "ready 8 4" "$(cat /tmp/idle.out)"
out=$(timeout 120 bench-roundtrip -n 100 -w 10 --bus "$DBUS_SESSION_BUS_ADDRESS" org.afbus.Echo 2>&1)
expect_match "round trip with idle peers present" '^result calls=100 ok=100 ' "$out"
out=$(timeout 300 bench-signals -N 1 -m 100 --bus "$DBUS_SESSION_BUS_ADDRESS" 2>&1)
expect_match "signals with idle peers' non-matching rules: only the subscriber's 100" \
	'^result subscribers=1 matching=1 signals=100 delivered=100 expected=100 bad=0 ' "$out"
kill $idle

for fam in bus unix; do
	out=$(timeout 120 bench-raw pingpong $fam -n 500 -w 10 -s 4096 2>&1)
	expect_match "raw $fam ping-pong: 500 rounds intact" '^result rounds=500 ok=500 ' "$out"
	out=$(timeout 120 bench-raw fanout $fam -N 8 -m 300 2>&1)
	expect_match "raw $fam fan-out: 8 receivers get all 300, in order" \
		'^result receivers=8 messages=300 delivered=2400 expected=2400 bad=0 ' "$out"
done

finish
