#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The daemon's table of the AF_BUS addresses of well-known names keeps a
# name's address while an AF_BUS client owns the name, a kernel match
# rule names it (AddMatch sender='NAME') or the bus policy names it, and
# drops it when nothing does (bus-afbus.c, dbus/0009).  A hostile client
# that asks for ever new names (AddMatch and RemoveMatch, RequestName
# and ReleaseName) cannot make the daemon's memory grow; a name that
# comes back with nothing referring to it gets a new address (never one
# given out before), and one that a rule or the policy names keeps its
# address, so that the kernel's rules still match its new owner.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_mixed_bus /tmp/name-table '<allow user="*"/>' \
	'<deny send_destination="com.example.Pinned" send_interface="com.example.Never"/>' ||
	{ not_ok "the daemon starts"; finish; }
export DBUS_SESSION_BUS_ADDRESS=$AF

# serve NAME: an AF_BUS echo service owns NAME (until quit NAME).
serve() {
	bg sh -c "exec afbus-echo-service $1 >/tmp/nt-$1.out 2>&1"
	wait_for_name "$1"
}

# quit NAME: its service quits; until NAME has no owner.
quit() {
	timeout 20 dbus-send --session --print-reply --dest="$1" / com.example.Echo.Quit \
		>/dev/null 2>&1
	i=0
	while dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
		org.freedesktop.DBus.NameHasOwner string:"$1" 2>/dev/null |
		grep -q 'boolean true' && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# addr_of NAME: the address the daemon tells a new client for NAME (its
# Forwarded, after a first call through the daemon), in hexadecimal.
addr_of() {
	timeout 30 afbus-flood-client "$1" 1 0 5000 2>&1 | sed -n 's/^first-forwarded //p'
}

# two_owners NAME: an AF_BUS service owns NAME, quits, and another one
# owns it; prints the address the daemon gave each ("A1 A2").
two_owners() {
	for _n in 1 2; do
		serve "$1"
		printf '%s ' "$(addr_of "$1")"
		quit "$1"
	done
}

# 1. Nothing refers to the name once its owner left: a new address.
set -- $(two_owners com.example.Temp)
expect_match "an owned name has an address" '^1[0-9a-f]{12}$' "$1"
expect_match "... and once its owner left and another took it, a new one ($1, ${2:-})" \
	'^1[0-9a-f]{12}$' "$([ "${2:-}" != "$1" ] && echo "${2:-}")"

# 2. A subscriber's rule holds the address: the name keeps it, and the
# subscriber gets the signals of each owner in turn.
bg sh -c "exec afbus-signal listen \"type='signal',sender='com.example.Held'\" >/tmp/nt-listen.out 2>&1"
wait_ready /tmp/nt-listen.out
set -- $(two_owners com.example.Held)
expect_match "a name a match rule names keeps its address across owners ($*)" \
	'^1[0-9a-f]{12}$' "$([ "${2:-}" = "$1" ] && echo "$1")"
for n in 1 2; do
	timeout 20 afbus-signal emit --own com.example.Held com.example.Sig.Ping 1 held$n >/dev/null 2>&1
done
wait_for_line /tmp/nt-listen.out 'held2-0'
expect_eq "... and the rule matches the signals of each of its owners" \
	"com.example.Sig.Ping held1-0 com.example.Sig.Ping held2-0" \
	"$(grep 'Ping' /tmp/nt-listen.out | cut -d' ' -f1,2 | tr '\n' ' ' | sed 's/ $//')"

# 3. The policy names com.example.Pinned: its address stays.
set -- $(two_owners com.example.Pinned)
expect_match "a name the policy names keeps its address across owners ($*)" \
	'^1[0-9a-f]{12}$' "$([ "${2:-}" = "$1" ] && echo "$1")"

# 4. A hostile client (uid 65534) asks for 6000 new names of each kind;
# the daemon's memory does not grow with them.  (5000 rounds first: the
# daemon's heap nears its working size, which it reaches within the next
# 5000 rounds, up to 130 kB more.  Before, each name stayed in the table
# for good: the daemon grew by about 200 bytes a round, 1.2 MB here.)
# (VmData: the daemon's heap and other private mappings, in kB; its
# resident size also moves with the pages of its libraries it touches)
data() {
	awk '/^VmData:/ { print $2 }' /proc/$BUS_PID/status
}
# On the debug kernel (KASAN, lockdep) the 11000 rounds take over 3
# minutes: it makes 1000, for the daemon's and the kernel's sanitizers,
# and leaves the measure to the test kernel's run.
if grep -qw 'afbus.debug=1' /proc/cmdline; then
	out=$(timeout 300 afbus-signal --uid 65534 churn 0 1000 2>&1)
	expect_eq "a hostile client's 1000 rounds of new names" "churned=1000 errors=0" "$out"
	skip "... and 6000 more" "the debug kernel: the test kernel's run makes them"
	skip "... leave the daemon's memory as it was" "the debug kernel: the test kernel's run measures it"
else
	out=$(timeout 300 afbus-signal --uid 65534 churn 0 5000 2>&1)
	expect_eq "a hostile client's 5000 rounds of new names" "churned=5000 errors=0" "$out"
	r0=$(data)
	out=$(timeout 600 afbus-signal --uid 65534 churn 5000 6000 2>&1)
	expect_eq "... and 6000 more" "churned=6000 errors=0" "$out"
	r1=$(data)
	echo "# daemon VmData: $r0 kB after 5000 rounds, $r1 kB after 11000"
	check "... leave the daemon's memory as it was, within 512 kB ($r0 kB, then $r1 kB)" \
		test $((r1 - r0)) -lt 512
fi
serve com.example.Temp
expect_match "... and names still get addresses" '^1[0-9a-f]{12}$' "$(addr_of com.example.Temp)"
quit com.example.Temp

finish
