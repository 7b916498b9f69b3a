#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# GLib programs on the system bus and the session bus (glib/: libgio with
# the afbus: transport, installed in place of Debian's with dpkg-divert).
# On the AF_BUS kernel polkitd, started by bus activation, is a native
# AF_BUS client of the system bus (a joined socket in /proc/net/bus),
# and answers a gdbus call; gdbus --system is
# native too and reaches hostnamed (sd-bus, a legacy client); on a bus
# of dbus-run-session, GLib's own test server (gdbus-testserver) is a
# native client and answers gdbus, as it does as a service of the user
# bus (systemd --user).  accounts-daemon (accountsservice), started by
# bus activation, is a native client too and answers.  A GLib client
# that connects while its bus daemon is not running yet (a service
# started in parallel with dbus.service at boot: systemd holds the
# socket) falls back to the socket and, once the daemon answered there,
# moves to the AF_BUS bus (glib/ 0005).  On Debian's kernel each of them
# falls back to the unix socket and everything answers as well.  (It
# runs after services.sh, which wants polkitd and hostnamed not started.)
. /usr/libexec/afbus/dbus-test-lib.sh

GIO=/usr/lib/x86_64-linux-gnu/libgio-2.0.so.0.7400.6
check "libgio is the afbus: build, Debian's diverted" \
	test "$(dpkg-divert --truename $GIO)" = "$GIO.debian"

# polkitd, by bus activation
out=$(timeout 60 gdbus call --system --dest org.freedesktop.PolicyKit1 \
	--object-path /org/freedesktop/PolicyKit1/Authority \
	--method org.freedesktop.DBus.Properties.Get \
	org.freedesktop.PolicyKit1.Authority BackendName 2>&1)
expect_match "gdbus --system calls polkitd (bus activation)" "^\(<'js'>,\)$" "$out"
polkitd=$(pidof polkitd)
check "polkitd runs" test -n "$polkitd"
clients=$(bus_client_sockets "$polkitd" 2>/dev/null)
out=$(timeout 30 gdbus call --system --dest org.freedesktop.hostname1 \
	--object-path /org/freedesktop/hostname1 --method org.freedesktop.DBus.Properties.Get \
	org.freedesktop.hostname1 Hostname 2>&1)
expect_eq "gdbus --system gets hostnamed's Hostname" "(<'afbus-system'>,)" "$out"

case $AFBUS_KERNEL in
stock)
	expect_eq "Debian's kernel: polkitd has no AF_BUS socket" "" "$clients"
	;;
*)
	expect_match "polkitd's bus connection is an AF_BUS socket" '^[0-9]+$' "$clients"
	expect_match "... joined to the system bus" \
		"^[0-9a-f]+ +$clients +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"
	;;
esac

# accounts-daemon (accountsservice, a GLib service), by bus activation;
# its unit's sandbox (RestrictAddressFamilies=AF_UNIX, PrivateNetwork=)
# gets the drop-in of build-aux/systemd-install.sh
out=$(systemctl show -P RestrictAddressFamilies accounts-daemon.service)
expect_match "accounts-daemon's drop-in: AF_BUS allowed beside AF_UNIX" \
	'^[^~]*AF_BUS' "$out"
expect_match "... and nothing else" '^(AF_UNIX AF_BUS|AF_BUS AF_UNIX)$' "$out"
check "... and no private network namespace (the bus is the host's)" \
	test "$(systemctl show -P PrivateNetwork accounts-daemon.service)" = no
out=$(timeout 60 gdbus call --system --dest org.freedesktop.Accounts \
	--object-path /org/freedesktop/Accounts --method org.freedesktop.DBus.Properties.Get \
	org.freedesktop.Accounts DaemonVersion 2>&1)
expect_match "gdbus --system calls accounts-daemon (bus activation)" "^\(<'[0-9][0-9.]*'>,\)$" "$out"
accounts=$(pidof accounts-daemon)
check "accounts-daemon runs" test -n "$accounts"
out=$(timeout 30 gdbus call --system --dest org.freedesktop.Accounts \
	--object-path /org/freedesktop/Accounts \
	--method org.freedesktop.Accounts.FindUserByName afbus 2>&1)
expect_eq "... and finds the user afbus" \
	"(objectpath '/org/freedesktop/Accounts/User$(id -u afbus)',)" "$out"
clients=$(bus_client_sockets "$accounts" 2>/dev/null)
case $AFBUS_KERNEL in
stock)
	expect_eq "Debian's kernel: accounts-daemon has no AF_BUS socket" "" "$clients"
	;;
*)
	expect_match "accounts-daemon's bus connection is an AF_BUS socket" '^[0-9]+$' "$clients"
	expect_match "... joined to the system bus" \
		"^[0-9a-f]+ +$clients +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"
	;;
esac

# A GLib client that connects before its bus daemon runs: the bus's
# socket is held by systemd-socket-activate, as dbus.socket holds the
# system bus's, and the daemon starts on the first connection; the
# AF_BUS bus and its file exist only from then on.
L=/tmp/gdbus-late
rm -rf $L
mkdir -p $L
mixed_bus_config $L/bus.conf afbus:file=$L/bus.afbus unix:path=$L/bus.sock
systemd-socket-activate -l $L/bus.sock dbus-daemon --config-file=$L/bus.conf \
	--nofork --nopidfile --address=systemd: >$L/daemon.out 2>&1 &
daemon=$!
i=0
while [ ! -S $L/bus.sock ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
check "no bus daemon runs before the first client (no $L/bus.afbus)" \
	test -S $L/bus.sock -a ! -e $L/bus.afbus
late_addr="afbus:file=$L/bus.afbus;unix:path=$L/bus.sock"
DBUS_SESSION_BUS_ADDRESS=$late_addr gdbus-testserver >$L/server.out 2>&1 &
svc=$!
i=0
while [ $i -lt 200 ]; do
	DBUS_SESSION_BUS_ADDRESS=$late_addr gdbus call --session --dest org.freedesktop.DBus \
		--object-path / --method org.freedesktop.DBus.NameHasOwner com.example.TestService \
		2>/dev/null | grep -q true && break
	sleep 0.1
	i=$((i + 1))
done
out=$(DBUS_SESSION_BUS_ADDRESS=$late_addr timeout 20 gdbus call --session \
	--dest com.example.TestService --object-path /com/example/TestObject \
	--method com.example.Frob.HelloWorld late 2>&1)
expect_eq "the client that started the daemon serves its name" \
	"(\"You greeted me with 'late'. Thanks!\",)" "$out"
owner=$(DBUS_SESSION_BUS_ADDRESS=$late_addr gdbus call --session --dest org.freedesktop.DBus \
	--object-path / --method org.freedesktop.DBus.GetNameOwner com.example.TestService 2>&1)
clients=$(bus_client_sockets $svc 2>/dev/null)
case $AFBUS_KERNEL in
stock)
	expect_eq "Debian's kernel: it stays on the socket" "" "$clients"
	expect_match "... named by the daemon" "^\(':1\.[0-9]+',\)$" "$owner"
	;;
*)
	check "the daemon made its AF_BUS bus once started" test -s $L/bus.afbus
	expect_match "the client moved to the AF_BUS bus after the socket answered" '^[0-9]+$' "$clients"
	expect_match "... named after its bus address" "^\(':0\.[0-9a-f]+',\)$" "$owner"
	;;
esac
{ kill $svc $daemon; wait $svc $daemon; } 2>/dev/null

# GLib's GDBus test server on a bus of dbus-run-session, as uid afbus
cat >/tmp/gdbus-session.sh <<'EOF'
#!/bin/sh
. /usr/libexec/afbus/dbus-test-lib.sh
echo "address=$DBUS_SESSION_BUS_ADDRESS"
gdbus-testserver >/tmp/gdbus-testserver.out 2>&1 &
svc=$!
i=0
while [ $i -lt 200 ]; do
	gdbus call --session --dest org.freedesktop.DBus --object-path / \
		--method org.freedesktop.DBus.NameHasOwner com.example.TestService 2>/dev/null |
		grep -q true && break
	sleep 0.1
	i=$((i + 1))
done
bus_client_sockets $svc | sed 's/^/bus-client=/'
echo "hello=$(timeout 20 gdbus call --session --dest com.example.TestService \
	--object-path /com/example/TestObject --method com.example.Frob.HelloWorld AF_BUS 2>&1)"
echo "owner=$(gdbus call --session --dest org.freedesktop.DBus --object-path / \
	--method org.freedesktop.DBus.GetNameOwner com.example.TestService 2>&1)"
{ kill $svc; wait $svc; } 2>/dev/null
EOF
chmod 0755 /tmp/gdbus-session.sh
out=$(timeout 120 setpriv --reuid=afbus --regid=afbus --init-groups env -i HOME=/home/afbus \
	PATH=/usr/local/bin:/usr/bin:/bin dbus-run-session -- /tmp/gdbus-session.sh 2>&1)
expect_match "gdbus-testserver on dbus-run-session answers gdbus" \
	"^hello=\(\"You greeted me with 'AF_BUS'. Thanks!\",\)$" "$out"
case $AFBUS_KERNEL in
stock)
	expect_match "Debian's kernel: the session bus offers the unix socket alone" \
		'^address=unix:' "$out"
	check "... and gdbus-testserver has no AF_BUS socket" test -z "$(printf '%s\n' "$out" | grep '^bus-client=')"
	;;
*)
	expect_match "the session bus offers afbus: first" '^address=afbus:path=' "$out"
	expect_match "gdbus-testserver is an AF_BUS client of it" '^bus-client=[0-9]+$' "$out"
	expect_match "... named after its bus address" "^owner=\(':0\.[0-9a-f]+',\)$" "$out"
	;;
esac
printf '%s\n' "$out" | sed 's/^/# /'

# ... and on the user bus (systemd --user, kept by linger; the bus
# started by a first client on its socket, as session.sh does)
uid=$(id -u afbus)
run=/run/user/$uid
as_afbus() {
	setpriv --reuid=afbus --regid=afbus --init-groups env -i HOME=/home/afbus \
		PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR=$run "$@"
}
loginctl enable-linger afbus
i=0
while [ "$(systemctl is-active user@$uid.service)" != active ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
as_afbus timeout 30 busctl --user status >/dev/null 2>&1
if [ $AFBUS_KERNEL = afbus ]; then
	i=0
	while [ ! -s $run/bus.afbus ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
fi
out=$(as_afbus timeout 120 systemd-run --user --quiet --wait --pipe /tmp/gdbus-session.sh 2>&1)
expect_match "gdbus-testserver as a user service answers gdbus" \
	"^hello=\(\"You greeted me with 'AF_BUS'. Thanks!\",\)$" "$out"
case $AFBUS_KERNEL in
stock)
	check "Debian's kernel: gdbus-testserver on the user bus has no AF_BUS socket" \
		test -z "$(printf '%s\n' "$out" | grep '^bus-client=')"
	;;
*)
	expect_match "gdbus-testserver is an AF_BUS client of the user bus" '^bus-client=[0-9]+$' "$out"
	;;
esac
printf '%s\n' "$out" | sed 's/^/# /'
loginctl disable-linger afbus

finish
