#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dbus-daemon --address with a configuration that lists an afbus:
# address.  Upstream's --address replaces the configuration's <listen>
# addresses; the fork keeps the afbus: ones (systemd starts the buses
# with --address=systemd:, and cannot make an AF_BUS bus), unless
# --address is an afbus: address itself.  The configuration's other
# addresses are replaced as upstream does.  On a kernel without AF_BUS
# (the LD_PRELOAD shim of dbus-nokernel.sh) the afbus: address is
# skipped with one warning and the --address one is served.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

D=/tmp/address
rm -rf $D
mkdir -p $D
CONF=$D/bus.conf
AF=afbus:file=$D/conf.afbus
mixed_bus_config "$CONF" "$AF" "unix:path=$D/conf.sock"

# daemon ADDRESS [ENV...]: dbus-daemon with $CONF and --address=ADDRESS
# (run through env with ENV), its output in $D/out, the address it
# prints in $D/addr; BUS_PID.
daemon() {
	_a=$1
	shift
	rm -f $D/out $D/addr
	env "$@" dbus-daemon --config-file="$CONF" --address="$_a" --nofork \
		--print-address=3 >$D/out 2>&1 3>$D/addr &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	i=0
	while [ ! -s $D/addr ] && kill -0 $BUS_PID 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# bus_id ADDRESS: the bus's GetId through ADDRESS (a Hello first).
bus_id() {
	timeout 20 dbus-send --bus="$1" --print-reply=literal \
		--dest=org.freedesktop.DBus / org.freedesktop.DBus.GetId 2>&1 | tr -d ' '
}

stop() {
	kill $BUS_PID 2>/dev/null
	wait $BUS_PID 2>/dev/null
	rm -f $D/conf.afbus $D/conf.sock $D/cmd.sock
}

# 1. --address=unix:...: that socket and the configuration's AF_BUS bus,
# not the configuration's unix socket.
daemon "unix:path=$D/cmd.sock"
check "--address=unix: the daemon listens on that socket" test -S $D/cmd.sock
check "... and on the configuration's AF_BUS bus (its file written)" test -s $D/conf.afbus
check "... but not on the configuration's unix socket" test ! -e $D/conf.sock
# (dbus-daemon gives its addresses last listened first: the AF_BUS one,
# which the fork's clients then try first)
expect_match "... and prints both addresses, the AF_BUS one first" \
	"^afbus:path=$D/dbus-afbus-[^,]+,guid=[0-9a-f]+;unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
id_ux=$(bus_id "unix:path=$D/cmd.sock")
id_af=$(bus_id "$AF")
expect_match "a client reaches it through the unix socket" '^[0-9a-f]{32}$' "$id_ux"
expect_eq "... and the same bus through the AF_BUS file" "$id_ux" "$id_af"
expect_eq "... no warning in the daemon's output" "" "$(cat $D/out)"
stop

# 2. --address=afbus:...: that bus alone (one AF_BUS address per bus).
daemon "afbus:path=$D/cmd.bus"
check "--address=afbus: the daemon runs" kill -0 $BUS_PID
expect_match "... on that AF_BUS bus alone" "^afbus:path=$D/cmd.bus,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
check "... not on the configuration's AF_BUS bus" test ! -e $D/conf.afbus
expect_match "... which clients reach" '^[0-9a-f]{32}$' "$(bus_id "afbus:path=$D/cmd.bus")"
stop

# 3. No AF_BUS in the kernel: the --address socket alone, one warning.
daemon "unix:path=$D/cmd.sock" AFBUS_NOKERNEL=afbus LD_PRELOAD=/usr/bin/afbus-nokernel.so
check "no AF_BUS: the daemon runs and listens on the --address socket" \
	sh -c "kill -0 $BUS_PID && [ -S $D/cmd.sock ]"
expect_match "... prints that address alone" "^unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
expect_eq "... logs one warning about AF_BUS" 1 "$(grep -Eic 'af_bus|afbus' $D/out)"
expect_match "... which names the address it skipped" "Not listening on $AF: " "$(cat $D/out)"
expect_match "... and serves clients" '^[0-9a-f]{32}$' "$(bus_id "unix:path=$D/cmd.sock")"
stop

finish
