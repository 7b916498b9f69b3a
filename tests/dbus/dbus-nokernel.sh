#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A daemon whose configuration lists an afbus: address, on a kernel
# without AF_BUS or without nfdbus: it logs one warning, does not listen
# on AF_BUS, and serves its unix clients as dbus-daemon does (no Hello
# fails); the fork's clients, given "afbus:...;unix:...", fall back to
# the unix address.  The test kernel has both built in, so the daemon
# (and, where said, a client) runs with the LD_PRELOAD shim
# afbus-nokernel.so (tests/dbus/lib/afbus-nokernel.c): AFBUS_NOKERNEL=afbus
# makes socket(AF_BUS) fail with EAFNOSUPPORT, AFBUS_NOKERNEL=nfdbus makes
# the kernel answer ENOENT when libnfdbus looks up the nfdbus family,
# AFBUS_NOKERNEL=replies makes it refuse reply tracking (EINVAL).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

SHIM=/usr/bin/afbus-nokernel.so
D=/tmp/nokernel
rm -rf $D
mkdir -p $D

# nokernel_daemon WHAT CONFIG: start dbus-daemon with the shim
# (AFBUS_NOKERNEL=WHAT), its output in CONFIG.out and the address it
# prints in CONFIG.addr; BUS_PID.
nokernel_daemon() {
	AFBUS_NOKERNEL=$1 LD_PRELOAD=$SHIM dbus-daemon --config-file="$2" \
		--nofork --print-address=3 >"$2.out" 2>&1 3>"$2.addr" &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	i=0
	while [ ! -s "$2.addr" ] && kill -0 $BUS_PID 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# unix_bus_works TAG WHAT AF UX: the checks on a daemon that runs
# without AF_BUS (WHAT missing), configured with AF and UX.
unix_bus_works() {
	tag=$1 what=$2 af=$3 ux=$4
	file=${af#afbus:file=}
	list="$af;$ux"

	check "$tag: the daemon runs and listens on its unix address" \
		sh -c "kill -0 $BUS_PID && [ -S ${ux#unix:path=} ]"
	expect_eq "$tag: one warning about AF_BUS in its log" 1 \
		"$(grep -Eic 'af_bus|afbus|nfdbus' "$CONF.out")"
	# (it names the address as configured, or, when it listened
	# already, as its server gives it: afbus:path=...)
	expect_match "$tag: ... which says it does not listen on AF_BUS, and why" \
		"Not listening on afbus:[^ ]*: .*$5.*clients use the bus's other addresses" \
		"$(cat "$CONF.out")"
	expect_match "$tag: the address it prints is the unix one alone" \
		"^unix:path=${ux#unix:path=},guid=[0-9a-f]+\$" "$(cat "$CONF.addr")"
	check "$tag: no AF_BUS bus file left" test ! -e "$file"

	# A unix client's Hello, and names as dbus-daemon gives them.
	out=$(timeout 20 dbus-send --bus="$ux" --print-reply \
		--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames 2>&1)
	expect_match "$tag: a unix client's Hello and call succeed" \
		'string "org.freedesktop.DBus"' "$out"
	expect_match "$tag: ... and it is named as by dbus-daemon (:1.N)" \
		'string ":1\.[0-9]+"' "$out"

	# The fork's clients with an address list: the AF_BUS address cannot
	# connect (no bus there; or no AF_BUS at all, with the shim), the
	# unix one does.
	DBUS_SESSION_BUS_ADDRESS=$list afbus-echo-service com.example.NkEcho$what \
		>$D/svc-$what.out 2>&1 &
	_pids="$_pids $!"
	wait_ready $D/svc-$what.out
	expect_match "$tag: an echo service given \"afbus:...;unix:...\" gets its name over unix" \
		'^ready :1\.[0-9]+$' "$(cat $D/svc-$what.out)"
	out=$(DBUS_SESSION_BUS_ADDRESS=$list timeout 60 afbus-echo-client \
		com.example.NkEcho$what 10 2>&1)
	expect_eq "$tag: 10 calls from a client given the same list" \
		"calls=10 ok=10 errors=0 forwarded=0 owners=" "$out"
	out=$(AFBUS_NOKERNEL=afbus LD_PRELOAD=$SHIM DBUS_SESSION_BUS_ADDRESS=$list \
		timeout 60 afbus-echo-client com.example.NkEcho$what 10 2>&1)
	expect_eq "$tag: ... and from one whose socket(AF_BUS) fails too" \
		"calls=10 ok=10 errors=0 forwarded=0 owners=" "$out"
	out=$(timeout 20 dbus-send --bus="$list" --print-reply \
		--dest=com.example.NkEcho$what / com.example.Echo.Echo string:hi 2>&1)
	expect_match "$tag: dbus-send given the list calls the service" \
		'string "hi"' "$out"
}

# A kernel without AF_BUS, one without nfdbus, and one whose nfdbus does
# not track replies (the daemon runs no AF_BUS bus where clients could
# send each other replies nobody asked for): the same config.
for what in afbus nfdbus replies; do
	CONF=$D/mixed-$what.conf
	AF=afbus:file=$D/bus-$what.afbus
	UX=unix:path=$D/bus-$what.sock
	mixed_bus_config "$CONF" "$AF" "$UX"
	nokernel_daemon $what "$CONF"
	case $what in
	afbus) why='Failed to create an AF_BUS socket.*no AF_BUS' ;;
	nfdbus) why='cannot filter signals, check senders, enforce the bus policy nor track replies.*nfdbus: .*No such file' ;;
	replies) why='cannot filter signals, check senders, enforce the bus policy nor track replies.*reply tracking.*Invalid argument' ;;
	esac
	unix_bus_works "no $what" $what "$AF" "$UX" "$why"
	kill $BUS_PID 2>/dev/null
	wait $BUS_PID 2>/dev/null
done

# A configuration with the AF_BUS address alone cannot serve anybody
# there: the daemon does not start, and says why.
for what in afbus nfdbus replies; do
	CONF=$D/only-$what.conf
	cat >"$CONF" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>afbus:file=$D/only-$what.afbus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*"/><allow own="*"/></policy>
</busconfig>
EOF
	nokernel_daemon $what "$CONF"
	wait_exit $BUS_PID
	check "no $what, afbus: only: the daemon exits with an error (status $status)" \
		test "$status" != running -a "$status" != 0
	expect_match "... saying it has no address to listen on" \
		'No address to listen on' "$(cat "$CONF.out")"
	check "... and leaves no bus file" test ! -e $D/only-$what.afbus
done

# The same configuration on the real kernel: AF_BUS it is.
CONF=$D/mixed-real.conf
mixed_bus_config "$CONF" afbus:file=$D/bus-real.afbus unix:path=$D/bus-real.sock
dbus-daemon --config-file="$CONF" --nofork --print-address=3 \
	>"$CONF.out" 2>&1 3>"$CONF.addr" &
BUS_PID=$!
_pids="$_pids $BUS_PID"
wait_for_line "$CONF.addr" guid
DBUS_SESSION_BUS_ADDRESS="afbus:file=$D/bus-real.afbus;unix:path=$D/bus-real.sock" \
	afbus-echo-service com.example.NkEchoReal >$D/svc-real.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/svc-real.out
expect_match "with AF_BUS and nfdbus, the same list connects over AF_BUS (:0.N)" \
	'^ready :0\.[0-9a-f]+$' "$(cat $D/svc-real.out)"
expect_eq "... and the daemon says nothing about AF_BUS" 0 \
	"$(grep -Eic 'af_bus|afbus|nfdbus' "$CONF.out")"

finish
