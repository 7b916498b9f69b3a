#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bridge trusts only its own bytes.  A legacy client's C1 loads a
# datagram without validating it again, or takes the message the daemon
# sent, only when the kernel names another legacy client's C1 as its
# source (trusted_source() in bus-afbus-legacy.c): what a native client
# sends a legacy client is validated as before.  A native client that
# sends a legacy client a malformed message (honest header, a string in
# the body that is not UTF-8, which the kernel does not read) gets its
# datagram taken by the kernel and nothing else: no reply, no error; the
# daemon drops it, and the legacy client never sees it.  Had the daemon
# passed it on unvalidated, the legacy client's libdbus would find its
# stream corrupt and disconnect (a daemon whose bridge trusted every
# source failed 10 of these 13 cases), and its Seq count would include
# it.  Run with a permissive configuration, then under Debian's
# system.conf policy with holes for the service's name.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

# seq_report ADDRESS: the service's Seq count, asked from ADDRESS.
seq_report() {
	timeout 20 env DBUS_SESSION_BUS_ADDRESS=$1 dbus-send --session --print-reply \
		--dest=com.example.Trust / com.example.Echo.SeqReport 2>&1 |
		sed -n 's/^ *string "\(.*\)"$/\1/p'
}

# trust_cases WHAT: the cases on the bus at $AF and $UX (config WHAT).
trust_cases() {
	native="env DBUS_SESSION_BUS_ADDRESS=$AF"
	legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

	$legacy afbus-echo-service com.example.Trust >/tmp/trust-svc.out 2>&1 &
	svc_pid=$!
	_pids="$_pids $svc_pid"
	wait_ready /tmp/trust-svc.out
	svc=$(sed -n 's/^ready //p' /tmp/trust-svc.out)
	expect_match "$1: a legacy service on unix: (bridged), named :0.N" \
		'^:0\.[1-9a-f][0-9a-f]*$' "$svc"

	# Malformed, honest, malformed, honest: Seq 0 and Seq 1 must
	# arrive, in order, and nothing else.
	out=$($native afbus-malformed "$svc" 0 bad 2>&1)
	expect_match "$1: a native client's malformed Seq to the legacy service: the kernel takes it (it does not read a unicast body)" \
		"^sent [0-9]+ bytes to $svc\$" "$out"
	out=$($native afbus-malformed "$svc" 0 2>&1)
	expect_match "... then an honest Seq 0 from the same client" "^sent [0-9]+ bytes" "$out"
	out=$($native afbus-malformed "$svc" 1 bad 2>&1)
	expect_match "... a second malformed one" "^sent [0-9]+ bytes" "$out"
	out=$($native afbus-malformed "$svc" 1 2>&1)
	expect_match "... and an honest Seq 1" "^sent [0-9]+ bytes" "$out"

	expect_eq "$1: the legacy service got the two honest calls, in order, and neither malformed one" \
		"seq=2 in-order=1" "$(seq_report $AF)"
	check "... and is still connected (its libdbus never saw a corrupt message)" \
		kill -0 $svc_pid
	expect_eq "... and answers a legacy caller too (through both C1s, the trusted path)" \
		"seq=2 in-order=1" "$(seq_report $UX)"

	# A legacy client's calls to the legacy service go C1 to C1:
	# trusted, and still counted and ordered (the daemon validated them
	# from the client's unix: connection).
	i=2
	while [ $i -lt 40 ]; do
		timeout 20 $legacy dbus-send --session --print-reply \
			--dest=com.example.Trust / com.example.Echo.Seq uint32:$i >/dev/null || break
		i=$((i + 1))
	done
	expect_eq "$1: 38 Seq calls from legacy clients, one after the other, C1 to C1: all arrive, in order" \
		"seq=40 in-order=1" "$(seq_report $UX)"

	# After that trusted traffic (the bridge remembers what the C1s
	# sent), a native client's malformed message is still validated.
	out=$($native afbus-malformed "$svc" 40 bad 2>&1)
	expect_match "$1: a malformed Seq after all that: taken by the kernel" "^sent [0-9]+ bytes" "$out"
	expect_eq "... dropped again: the count is unchanged" \
		"seq=40 in-order=1" "$(seq_report $AF)"
	check "... and the legacy service is still connected" kill -0 $svc_pid
	kill $svc_pid
	wait $svc_pid 2>/dev/null
}

AF_PATH=/tmp/trust-bus
UX_PATH=/tmp/trust-unix
AF=afbus:path=$AF_PATH
UX=unix:path=$UX_PATH
mixed_bus_config /tmp/trust.conf $AF $UX
check "permissive: the daemon listens on afbus: and unix: at once" \
	start_config_bus /tmp/trust.conf $AF_PATH $UX_PATH
trust_cases permissive
kill $BUS_PID
wait $BUS_PID 2>/dev/null

# Debian's system.conf: method calls denied but to the service's name.
D=/tmp/trust-sys
rm -rf $D
mkdir -p $D
AF=afbus:file=$D/bus.afbus
UX=unix:path=$D/bus.sock
system_bus_config $D/bus.conf "$AF" "$UX" "$(system_holes com.example.Trust)"
check "system.conf: the daemon listens on afbus: and unix: at once" \
	start_config_bus $D/bus.conf $D/bus.afbus $D/bus.sock
AF=afbus:file=$D/bus.afbus
trust_cases system.conf

finish
