#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dbus-daemon --address with a configuration that lists an afbus:
# address, a bare afbus: (the session bus), and afbus:runtime=yes; the
# other keys (abstract=, dir=, tmpdir=) and wrong addresses; and
# dbus-cleanup-sockets beside live and dead buses.  --address replaces
# the configuration's <listen> addresses, the afbus: ones too, as
# upstream's does (only --address=systemd:, systemd's socket activation,
# which cannot make an AF_BUS bus, keeps them: the system guest's
# buses).  A daemon never takes a live bus's address: not its path, not
# its address file (afbus:file=, afbus:runtime=yes), and does not
# remove them when it exits.  On a kernel without AF_BUS (the LD_PRELOAD
# shim of dbus-nokernel.sh) the afbus: address is skipped with one
# warning and the others are served.
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

# daemon_conf [ENV...]: dbus-daemon with $CONF and no --address, as
# daemon.
daemon_conf() {
	rm -f $D/out $D/addr
	env "$@" dbus-daemon --config-file="$CONF" --nofork \
		--print-address=3 >$D/out 2>&1 3>$D/addr &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	wait_for_line $D/addr guid
}

# 1. --address=unix:...: that socket alone, as upstream: not the
# configuration's unix socket, nor its AF_BUS bus.
daemon "unix:path=$D/cmd.sock"
check "--address=unix: the daemon listens on that socket" test -S $D/cmd.sock
check "... not on the configuration's AF_BUS bus (no file written)" test ! -e $D/conf.afbus
check "... nor on the configuration's unix socket" test ! -e $D/conf.sock
expect_match "... and prints that address alone" \
	"^unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" "$(cat $D/addr)"
expect_match "a client reaches it through the unix socket" '^[0-9a-f]{32}$' \
	"$(bus_id "unix:path=$D/cmd.sock")"
expect_eq "... no warning in the daemon's output" "" "$(cat $D/out)"
stop

# A bus runs at the configuration's addresses (a session's bus); a
# second daemon with the same configuration and --address=unix: (a test
# bus started inside that session) leaves its AF_BUS address alone,
# while it runs and when it exits.
daemon_conf
main_pid=$BUS_PID
main_file=$(cat $D/conf.afbus 2>&1)
id_main=$(bus_id "$AF")
expect_match "a bus at the configuration's addresses" '^[0-9a-f]{32}$' "$id_main"
daemon "unix:path=$D/cmd.sock"
check "... a second daemon, --address=unix:, runs" kill -0 $BUS_PID
expect_eq "... the first bus's AF_BUS file is unchanged" "$main_file" \
	"$(cat $D/conf.afbus 2>&1)"
kill $BUS_PID
wait $BUS_PID 2>/dev/null
expect_eq "... and still there, unchanged, once the second daemon exited" \
	"$main_file" "$(cat $D/conf.afbus 2>&1)"
expect_eq "... clients reach the first bus through it" "$id_main" "$(bus_id "$AF")"
# A second daemon whose configuration lists that very file, or the
# bus's path, takes neither: AddressInUse, skipped with a warning, its
# other address served; the first bus keeps both.
CONF2=$D/second.conf
for second in "$AF" "afbus:path=$main_file"; do
	mixed_bus_config "$CONF2" "$second" "unix:path=$D/cmd.sock"
	CONF1=$CONF CONF=$CONF2
	daemon_conf
	CONF=$CONF1
	expect_match "a second daemon on $second: skipped (AddressInUse), says why" \
		"Not listening on $second: .*live AF_BUS bus" "$(cat $D/out)"
	expect_match "... it serves its other address alone" \
		"^unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" "$(cat $D/addr)"
	kill $BUS_PID
	wait $BUS_PID 2>/dev/null
	rm -f $D/cmd.sock
	expect_eq "... the first bus's file is unchanged once it exited" \
		"$main_file" "$(cat $D/conf.afbus 2>&1)"
	check "... its socket is there" test -S "$main_file"
	expect_eq "... and clients still reach the first bus" "$id_main" "$(bus_id "$AF")"
done
kill $main_pid
wait $main_pid 2>/dev/null
check "... which removes its file and its bus when it exits" \
	test ! -e $D/conf.afbus -a ! -e "$main_file"

# 2. --address=afbus:...: that bus alone (one AF_BUS address per bus).
daemon "afbus:path=$D/cmd.bus"
check "--address=afbus: the daemon runs" kill -0 $BUS_PID
expect_match "... on that AF_BUS bus alone" "^afbus:path=$D/cmd.bus,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
check "... not on the configuration's AF_BUS bus" test ! -e $D/conf.afbus
expect_match "... which clients reach" '^[0-9a-f]{32}$' "$(bus_id "afbus:path=$D/cmd.bus")"
stop

# 3. No AF_BUS in the kernel: the configuration's unix socket alone,
# one warning.
daemon_conf AFBUS_NOKERNEL=afbus LD_PRELOAD=/usr/bin/afbus-nokernel.so
check "no AF_BUS: the daemon runs and listens on the unix socket" \
	sh -c "kill -0 $BUS_PID && [ -S $D/conf.sock ]"
expect_match "... prints that address alone" "^unix:path=$D/conf.sock,guid=[0-9a-f]+\$" \
	"$(cat $D/addr)"
expect_eq "... logs one warning about AF_BUS" 1 "$(grep -Eic 'af_bus|afbus' $D/out)"
expect_match "... which names the address it skipped" "Not listening on $AF: " "$(cat $D/out)"
expect_match "... and serves clients" '^[0-9a-f]{32}$' "$(bus_id "unix:path=$D/conf.sock")"
stop

# 4. A bare afbus: in the configuration (the session bus'
# session.d/afbus.conf, after session.conf's unix:tmpdir=), with the
# unix address first as session.conf lists it.
BARE=$D/bare.conf
mixed_bus_config "$BARE" "afbus:" "unix:tmpdir=$D"
RUN=$D/run
mkdir -p $RUN
CONF=$BARE

# The user bus of a session listens on afbus:runtime=yes (under
# systemd: --address=systemd:, whose bare afbus: becomes runtime=yes;
# the system guest's tests).  A daemon started in that session with
# --address=unix: listens on neither its afbus: nor runtime=yes, and
# leaves $XDG_RUNTIME_DIR/bus.afbus to the user bus.
USER_CONF=$D/user.conf
mixed_bus_config "$USER_CONF" "afbus:runtime=yes" "unix:path=$D/user.sock"
XDG_RUNTIME_DIR=$RUN dbus-daemon --config-file="$USER_CONF" --nofork >$D/user.out 2>&1 &
user_pid=$!
_pids="$_pids $user_pid"
wait_for_line $RUN/bus.afbus dbus-afbus
user_file=$(cat $RUN/bus.afbus 2>&1)
id_user=$(XDG_RUNTIME_DIR=$RUN bus_id "afbus:runtime=yes")
expect_match "a user bus at afbus:runtime=yes" '^[0-9a-f]{32}$' "$id_user"
daemon "unix:path=$D/cmd.sock" XDG_RUNTIME_DIR=$RUN
expect_match "bare afbus: under --address=unix: the daemon listens on that socket alone" \
	"^unix:path=$D/cmd.sock,guid=[0-9a-f]+\$" "$(cat $D/addr)"
expect_eq "... no warning in the daemon's output" "" "$(cat $D/out)"
expect_eq "... the user bus's bus.afbus is unchanged" "$user_file" \
	"$(cat $RUN/bus.afbus 2>&1)"
stop
expect_eq "... and still there once that daemon exited" "$user_file" \
	"$(cat $RUN/bus.afbus 2>&1)"
expect_eq "... the user bus still reachable at afbus:runtime=yes" "$id_user" \
	"$(XDG_RUNTIME_DIR=$RUN bus_id "afbus:runtime=yes")"
kill $user_pid
wait $user_pid 2>/dev/null
check "... which removes bus.afbus when it exits" test ! -e $RUN/bus.afbus

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
	'cannot specify two of "path", "abstract", "file", "runtime", "dir" and "tmpdir" in an afbus: address' \
	"$(XDG_RUNTIME_DIR=$RUN bad_addr afbus:path=/x,runtime=yes)"
expect_match "afbus:abstract=...,path=...: a bad address" \
	'cannot specify two of "path", "abstract", ' "$(bad_addr afbus:abstract=x,path=/x)"
expect_match "a client's bare afbus: names what is missing" \
	'path or abstract or file or runtime' "$(bad_addr afbus:)"
expect_match "a client's afbus:dir=: only in an address to listen on" \
	'cannot use the "dir" key in an afbus: address to connect to, only in an address to listen on' \
	"$(bad_addr afbus:dir=/tmp)"
expect_match "... and afbus:tmpdir= too" \
	'cannot use the "tmpdir" key in an afbus: address to connect to' \
	"$(bad_addr afbus:tmpdir=/tmp)"
long=$(printf '%0200d' 0)
expect_match "an abstract name of 200 bytes does not fit" \
	"AF_BUS abstract name \"$long\" must have 1 to 107 bytes" \
	"$(bad_addr afbus:abstract=$long)"
expect_match "an abstract name nobody bound: refused" \
	'Failed to connect to AF_BUS bus "@afbus-test-nobody": Connection refused' \
	"$(bad_addr afbus:abstract=afbus-test-nobody)"

# 6. afbus:abstract=NAME: a bus with no file, which legacy clients
# reach through the daemon's bridge as for a bus at a path.
CONF=$D/abstract.conf
ABS=afbus-test-$$
mixed_bus_config "$CONF" "afbus:abstract=$ABS" "unix:path=$D/abs.sock"
rm -f $D/out $D/addr
dbus-daemon --config-file="$CONF" --nofork --print-address=3 >$D/out 2>&1 3>$D/addr &
BUS_PID=$!
_pids="$_pids $BUS_PID"
wait_for_line $D/addr guid
expect_match "afbus:abstract=: the daemon prints the abstract name first" \
	"^afbus:abstract=$ABS,guid=[0-9a-f]+;unix:path=$D/abs.sock,guid=[0-9a-f]+\$" "$(cat $D/addr)"
id_af=$(bus_id "afbus:abstract=$ABS")
expect_match "... a client reaches it by that name" '^[0-9a-f]{32}$' "$id_af"
expect_eq "... and a legacy client, bridged, the same bus" "$id_af" \
	"$(bus_id "unix:path=$D/abs.sock")"
expect_eq "... no file of that name, no warning" "-" \
	"$(ls $D | grep -c "$ABS" | sed 's/^0$/-/')$(cat $D/out)"
stop
daemon "afbus:abstract=$ABS"
expect_match "... and the name is free again once the daemon exits" \
	"^afbus:abstract=$ABS,guid=[0-9a-f]+\$" "$(cat $D/addr)"
stop

# 7. afbus:dir=DIR and afbus:tmpdir=DIR: a fresh bus in DIR.
CONF=$D/bus.conf
for key in dir tmpdir; do
	rm -rf $D/$key
	mkdir -p $D/$key
	daemon "afbus:$key=$D/$key"
	expect_match "afbus:$key=: a fresh bus in that directory" \
		"^afbus:path=$D/$key/dbus-afbus-[A-Za-z0-9]{10},guid=[0-9a-f]+\$" "$(cat $D/addr)"
	expect_match "... which a client reaches with the printed address" \
		'^[0-9a-f]{32}$' "$(bus_id "$(cat $D/addr)")"
	stop
	expect_eq "... and which goes when the daemon exits" "" "$(ls $D/$key)"
done

# 8. dbus-cleanup-sockets deletes the dbus-* sockets nobody listens on,
# a dead AF_BUS bus among them, and leaves a live bus alone although it
# refuses AF_UNIX connections.
C=$D/clean
rm -rf $C
mkdir -p $C
for dead in "afbus:path=$C/dbus-afbus-dead" "unix:path=$C/dbus-unix-dead"; do
	daemon "$dead"
	kill -9 $BUS_PID
	wait $BUS_PID 2>/dev/null
done
daemon "afbus:dir=$C"
live=$(sed -n 's/^afbus:path=\([^,]*\),.*/\1/p' $D/addr)
# (upstream's dbus-cleanup-sockets takes its directory only after "--")
out=$(dbus-cleanup-sockets -- $C 2>&1)
expect_match "dbus-cleanup-sockets: two dead sockets, one live" \
	"^Cleaned up 2 sockets in $C; 1 sockets are still in use; 0 in unknown state\$" "$out"
expect_eq "... the live bus's file is left" "$live" "$(ls -d $C/dbus-*)"
expect_match "... and clients still reach the bus" '^[0-9a-f]{32}$' \
	"$(bus_id "afbus:path=$live")"
stop
expect_match "afbus:runtime=yes without XDG_RUNTIME_DIR: not supported" \
	'afbus:runtime=yes needs "XDG_RUNTIME_DIR", which is not set' \
	"$(unset XDG_RUNTIME_DIR; bad_addr afbus:runtime=yes)"

finish
