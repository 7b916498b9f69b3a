#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dbus-daemon --address with a configuration that lists an afbus:
# address, a bare afbus: (the session bus), and afbus:runtime=yes.  Upstream's --address replaces the configuration's <listen>
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

# 4. A bare afbus: in the configuration (the session bus'
# session.d/afbus.conf, after session.conf's unix:tmpdir=), with the
# unix address first as session.conf lists it.
BARE=$D/bare.conf
mixed_bus_config "$BARE" "unix:tmpdir=$D" "afbus:"
RUN=$D/run
mkdir -p $RUN
CONF=$BARE

# Under --address (systemd's user bus) it is afbus:runtime=yes: the bus
# is named in $XDG_RUNTIME_DIR/bus.afbus, where clients find it.
daemon "unix:path=$D/cmd.sock" XDG_RUNTIME_DIR=$RUN
check "bare afbus: under --address: the daemon writes \$XDG_RUNTIME_DIR/bus.afbus" \
	test -s $RUN/bus.afbus
expect_match "... naming a fresh bus in \$XDG_RUNTIME_DIR" "^$RUN/dbus-afbus-[A-Za-z0-9]+\$" \
	"$(cat $RUN/bus.afbus 2>&1)"
expect_match "... whose address it prints first" \
	"^afbus:path=$RUN/dbus-afbus-[^,]+,guid=[0-9a-f]+;unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
id_ux=$(bus_id "unix:path=$D/cmd.sock")
id_rt=$(XDG_RUNTIME_DIR=$RUN bus_id "afbus:runtime=yes;unix:path=$D/nonexistent")
expect_match "a client reaches it through the unix socket" '^[0-9a-f]{32}$' "$id_ux"
expect_eq "... and the same bus through afbus:runtime=yes" "$id_ux" "$id_rt"
expect_eq "... no warning in the daemon's output" "" "$(cat $D/out)"
stop
check "... which removes bus.afbus when it exits" test ! -e $RUN/bus.afbus

# Without $XDG_RUNTIME_DIR it has no runtime directory: one warning.
daemon "unix:path=$D/cmd.sock" -u XDG_RUNTIME_DIR
expect_match "no XDG_RUNTIME_DIR: the daemon serves the --address socket alone" \
	"^unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" "$(cat $D/addr)"
expect_eq "... logs one warning about AF_BUS" 1 "$(grep -Eic 'af_bus|afbus' $D/out)"
expect_match "... which says why" \
	'Not listening on afbus:runtime=yes: afbus:runtime=yes needs "XDG_RUNTIME_DIR", which is not set' \
	"$(cat $D/out)"
stop

# Without --address (dbus-run-session, dbus-launch): a fresh bus whose
# address only the daemon's output tells, printed first; no file.
rm -f $D/out $D/addr
XDG_RUNTIME_DIR=$RUN dbus-daemon --config-file="$BARE" --nofork --print-address=3 \
	>$D/out 2>&1 3>$D/addr &
BUS_PID=$!
_pids="$_pids $BUS_PID"
wait_for_line $D/addr guid
expect_match "bare afbus: without --address: a fresh bus in \$XDG_RUNTIME_DIR, printed first" \
	"^afbus:path=$RUN/dbus-afbus-[^,]+,guid=[0-9a-f]+;unix:path=$D/dbus-[^,]+,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
check "... and no bus.afbus" test ! -e $RUN/bus.afbus
expect_match "... which a client reaches with the printed address" '^[0-9a-f]{32}$' \
	"$(bus_id "$(cat $D/addr)")"
stop

# 5. Wrong afbus: client addresses: a clear error, nothing sent.
bad_addr() {
	timeout 20 dbus-send --bus="$1" --print-reply --dest=org.freedesktop.DBus \
		/ org.freedesktop.DBus.GetId 2>&1
}
expect_match "afbus:runtime=no: a bad address" \
	'the only value allowed for "runtime" in an afbus: address is "yes"' \
	"$(XDG_RUNTIME_DIR=$RUN bad_addr afbus:runtime=no)"
expect_match "afbus:path=...,runtime=yes: a bad address" \
	'cannot specify two of "path", "file" and "runtime" in an afbus: address' \
	"$(XDG_RUNTIME_DIR=$RUN bad_addr afbus:path=/x,runtime=yes)"
expect_match "a client's bare afbus: names what is missing" \
	'path or file or runtime' "$(bad_addr afbus:)"
expect_match "afbus:runtime=yes without XDG_RUNTIME_DIR: not supported" \
	'afbus:runtime=yes needs "XDG_RUNTIME_DIR", which is not set' \
	"$(unset XDG_RUNTIME_DIR; bad_addr afbus:runtime=yes)"

finish
