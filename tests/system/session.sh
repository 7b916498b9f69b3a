#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The session bus on AF_BUS, as uid afbus: a bus of dbus-run-session,
# and the user bus of dbus-user-session (systemd --user, socket
# activated).  Each offers its AF_BUS address first: a service of the
# fork's libdbus on it is an AF_BUS client (in /proc/net/bus), and
# busctl (sd-bus, with the afbus: transport of systemd/) reaches it
# too.  On Debian's kernel both serve the unix socket alone and
# log one warning each.
. /usr/libexec/afbus/dbus-test-lib.sh

uid=$(id -u afbus)
run=/run/user/$uid

# as_afbus CMD...: CMD as uid afbus, in its runtime directory's session
as_afbus() {
	setpriv --reuid=afbus --regid=afbus --init-groups env -i HOME=/home/afbus \
		PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR=$run "$@"
}

# What runs on each bus (as uid afbus): the echo service of the D-Bus
# tests; whether its socket is an AF_BUS client of /proc/net/bus; a
# client of the fork's libdbus and busctl calling it.
cat >/tmp/session-client.sh <<'EOF'
#!/bin/sh
. /usr/libexec/afbus/dbus-test-lib.sh
echo "address=$DBUS_SESSION_BUS_ADDRESS"
out=/tmp/session-echo.$$
afbus-echo-service com.example.Echo >$out 2>&1 &
svc=$!
wait_for_line $out '^ready '
bus_client_sockets $svc | sed 's/^/bus-client=/'
timeout 60 afbus-echo-client com.example.Echo 5 -1 2>&1
echo "busctl=$(timeout 30 busctl --user call com.example.Echo / com.example.Echo Echo s hi 2>&1)"
{ kill $svc; wait $svc; } 2>/dev/null
rm -f $out
EOF
chmod 0755 /tmp/session-client.sh

# systemd --user for uid afbus (and its runtime directory), kept
# without a login
loginctl enable-linger afbus
i=0
while [ "$(systemctl is-active user@$uid.service)" != active ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect_eq "systemd --user runs for uid afbus" active "$(systemctl is-active user@$uid.service)"

# --- dbus-run-session
mkdir -p /tmp/drs && chown afbus:afbus /tmp/drs
out=$(cd /tmp/drs && as_afbus timeout 120 dbus-run-session -- /tmp/session-client.sh 2>/tmp/drs.err)
err=$(cat /tmp/drs.err)
case $AFBUS_KERNEL in
afbus)
	expect_match "dbus-run-session offers an AF_BUS bus first" \
		'^address=afbus:path=/[^,]*/dbus-afbus-[^,]+,guid=[0-9a-f]+;unix:' "$out"
	expect_match "... the fork's service on it is an AF_BUS client" '^bus-client=[0-9]+$' "$out"
	expect_eq "... and the daemon prints no warning" "" "$err"
	;;
stock)
	expect_match "Debian's kernel: dbus-run-session offers the unix socket alone" \
		'^address=unix:[^;]*$' "$out"
	expect_eq "... the fork's service on it is no AF_BUS client" "" \
		"$(echo "$out" | grep '^bus-client=')"
	expect_eq "... and the daemon logs one warning about AF_BUS" 1 \
		"$(echo "$err" | grep -Eic 'afbus|af_bus')"
	expect_match "... that it does not listen on afbus:" 'Not listening on afbus:: ' "$err"
	;;
esac
expect_match "... a client of the fork's libdbus calls the service" \
	'^calls=5 ok=5 errors=0 ' "$(echo "$out" | grep '^calls=')"
expect_eq "... and busctl (sd-bus) calls it too" 'busctl=s "hi"' \
	"$(echo "$out" | grep '^busctl=')"

# --- the user bus
# (show-environment quotes it shell-style: $'...')
expect_match "its services get the user bus's AF_BUS address first" \
	"^DBUS_SESSION_BUS_ADDRESS=(\\\$')?afbus:runtime=yes;unix:path=$run/bus'?\$" \
	"$(as_afbus systemctl --user show-environment | grep '^DBUS_SESSION_BUS_ADDRESS=')"
# the user bus starts with its first client (busctl, on the socket)
as_afbus timeout 30 busctl --user status >/dev/null 2>&1
case $AFBUS_KERNEL in
afbus)
	i=0
	while [ ! -s $run/bus.afbus ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	expect_match "the user bus writes $run/bus.afbus, naming a bus beside it" \
		"^$run/dbus-afbus-[A-Za-z0-9]+\$" "$(cat $run/bus.afbus 2>&1)"
	;;
stock)
	check "Debian's kernel: the user bus writes no bus.afbus" test ! -e $run/bus.afbus
	;;
esac
out=$(as_afbus timeout 120 systemd-run --user --quiet --wait --pipe \
	/tmp/session-client.sh 2>&1)
expect_eq "a user service gets that address" \
	"address=afbus:runtime=yes;unix:path=$run/bus" "$(echo "$out" | grep '^address=')"
case $AFBUS_KERNEL in
afbus)
	expect_match "... the fork's service on the user bus is an AF_BUS client" \
		'^bus-client=[0-9]+$' "$(echo "$out" | grep '^bus-client=')"
	;;
stock)
	expect_eq "... the fork's service on the user bus is no AF_BUS client" "" \
		"$(echo "$out" | grep '^bus-client=')"
	;;
esac
expect_match "... a client of the fork's libdbus calls the service" \
	'^calls=5 ok=5 errors=0 ' "$(echo "$out" | grep '^calls=')"
expect_eq "... and busctl (sd-bus) calls it too" 'busctl=s "hi"' \
	"$(echo "$out" | grep '^busctl=')"
warnings=$(journalctl -b --no-pager -o cat _UID=$uid _COMM=dbus-daemon -p warning 2>&1)
case $AFBUS_KERNEL in
afbus)
	expect_eq "the user bus logs no warning" "" "$warnings"
	;;
stock)
	expect_eq "Debian's kernel: the user bus logs one warning" 1 \
		"$(echo "$warnings" | grep -c .)"
	expect_match "... that it does not listen on afbus:runtime=yes" \
		'Not listening on afbus:runtime=yes: ' "$warnings"
	;;
esac
loginctl disable-linger afbus
finish
