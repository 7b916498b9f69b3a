#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# sd-bus match rules filter signals in the kernel: an sd-bus program's
# sd_bus_add_match() goes to the daemon (AddMatch), which gives the rule
# to nfdbus, so that the kernel delivers to its AF_BUS socket only the
# multicasts the rule matches.  Three sd-bus subscribers on the system
# bus (sdbus-peer listen) with rules on an interface, on an interface
# and arg0, and on a path, are stopped (SIGSTOP: nothing is read), then
# sd-bus emitters send 35 signals, of which each rule matches 15, 5 and
# 35: each stopped subscriber's socket then queues (RecvQ in
# /proc/net/bus, counted by the kernel) exactly the signals its rule
# matches, and lost none (Drops); once resumed, each subscriber's
# library reads those only, in order, and dispatches them to its match.
# On Debian's kernel the subscribers are unix clients, the daemon
# filters, and they get the same signals (the kernel's count skipped).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS
W=/tmp/sdbus-match
rm -rf $W
mkdir -p $W
P=/com/example/SdMatch
I=com.example.SdMatch

# qlen PID: "RECVQ DROPS" of PID's AF_BUS client socket (/proc/net/bus)
qlen() {
	_ino=$(bus_client_sockets "$1" | head -n 1)
	awk -v i="$_ino" '$2 == i && $4 == "client" { print $8, $10 }' /proc/net/bus
}

# lines KIND FILE: a listener's "KIND INTERFACE.MEMBER ARG0" lines for our
# interfaces, as "MEMBER ARG0" joined by spaces
lines() {
	grep "^$1 $I\\." "$2" | sed "s/^$1 $I\\.//" | tr '\n' ' ' | sed 's/ $//'
}

sdbus-peer listen "type='signal',interface='$I.A'" >$W/iface.out 2>&1 &
iface=$!
sdbus-peer listen "type='signal',interface='$I.A',arg0='keep'" >$W/arg0.out 2>&1 &
arg0=$!
sdbus-peer listen "type='signal',path='$P'" >$W/path.out 2>&1 &
path=$!
_pids="$iface $arg0 $path"
wait_ready $W/iface.out $W/arg0.out $W/path.out
fams=$(awk '/^ready/ { print $3 }' $W/iface.out $W/arg0.out $W/path.out | tr '\n' ' ')
# (the Hello's NameAcquired, if any, read before the stop)
sleep 1
kill -STOP $iface $arg0 $path
if [ "$AFBUS_KERNEL" = afbus ]; then
	expect_eq "three sd-bus subscribers on the system bus, each an AF_BUS client" \
		"AF_BUS AF_BUS AF_BUS " "$fams"
	before="$(qlen $iface) / $(qlen $arg0) / $(qlen $path)"
	expect_eq "... stopped, nothing queued to their sockets yet, nothing lost" \
		"0 0 / 0 0 / 0 0" "$before"
else
	expect_eq "Debian's kernel: three sd-bus subscribers, unix clients" \
		"AF_UNIX AF_UNIX AF_UNIX " "$fams"
fi

# 20 B signals, 10 A ones with arg0 "drop", 5 A ones with arg0 "keep",
# each batch from an sd-bus emitter of its own
out=$(timeout 60 sdbus-peer emit $P $I.B Ping other 20 2>&1
	timeout 60 sdbus-peer emit $P $I.A Ping drop 10 2>&1
	timeout 60 sdbus-peer emit $P $I.A Ping keep 5 2>&1)
expect_match "sd-bus emitters send 20 + 10 + 5 signals" \
	"^emitted 20 [A-Z_]+ emitted 10 [A-Z_]+ emitted 5 [A-Z_]+\$" "$(echo $out)"
sleep 1
if [ "$AFBUS_KERNEL" = afbus ]; then
	expect_eq "the kernel queued to the stopped subscribers' sockets only what their rules match, lost nothing (RecvQ Drops: interface, +arg0, path)" \
		"15 0 / 5 0 / 35 0" "$(qlen $iface) / $(qlen $arg0) / $(qlen $path)"
else
	skip "the kernel queued to the stopped subscribers' sockets only what their rules match" \
		"no AF_BUS on Debian's kernel"
fi
kill -CONT $iface $arg0 $path
i=0
while [ "$(grep -c "^match $I" $W/path.out)" -lt 35 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.5

drop="Ping drop Ping drop Ping drop Ping drop Ping drop Ping drop Ping drop Ping drop Ping drop Ping drop"
keep="Ping keep Ping keep Ping keep Ping keep Ping keep"
other="Ping other Ping other Ping other Ping other Ping other Ping other Ping other Ping other Ping other Ping other"
expect_eq "the interface subscriber's match gets the 15 A signals, in order" \
	"A.$(echo "$drop $keep" | sed 's/ Ping/ A.Ping/g')" "$(lines match $W/iface.out)"
expect_eq "... and its library read nothing else of ours from the socket" \
	"$(lines match $W/iface.out)" "$(lines recv $W/iface.out)"
expect_eq "the interface and arg0 subscriber's match gets the 5 with arg0 keep" \
	"A.$(echo "$keep" | sed 's/ Ping/ A.Ping/g')" "$(lines match $W/arg0.out)"
expect_eq "... and its library read nothing else of ours" \
	"$(lines match $W/arg0.out)" "$(lines recv $W/arg0.out)"
expect_eq "the path subscriber's match gets all 35, in order" \
	"B.$(echo "$other $other" | sed 's/ Ping/ B.Ping/g') A.$(echo "$drop $keep" | sed 's/ Ping/ A.Ping/g')" \
	"$(lines match $W/path.out)"
expect_eq "... as its library read them" "$(lines match $W/path.out)" "$(lines recv $W/path.out)"
finish
