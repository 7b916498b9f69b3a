#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# systemd and its services on the kernel bus: with sd-bus' afbus:
# transport (systemd/), PID 1, systemd-logind and the bus-activated
# hostnamed, timedated and localed each hold an AF_BUS socket joined to
# the system bus, whose address is their unique name's, and the tools
# (hostnamectl, timedatectl, loginctl, localectl, busctl, systemctl as a
# user) are AF_BUS clients too, systemd --user is one on its user bus,
# and a login session (pam_systemd) offers the user bus's AF_BUS address
# first.  A small admin workload (those tools, busctl list,
# a logind restart, a polkit check) is watched by a monitor: every
# message of an sd-bus program goes over AF_BUS, and the share of the
# system bus's connections and messages that are native is reported
# ("afbus-workload: ..."; bridged is only what is neither sd-bus nor the
# fork's libdbus).  The tools work as on Debian's dbus: systemctl, the
# polkit-guarded calls keep their answers.  On Debian's kernel everything
# is a unix client, and works.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS
W=/tmp/sdbus-native
rm -rf $W
mkdir -p $W
AS_USER="setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus"

# snapshot: "UNIQUE-NAME PID COMMAND native|bridged" for every AF_BUS
# client socket on a bus (appended to $W/names): bridged when dbus-daemon
# holds it (a legacy client's relay: the bus says whose), native when its
# own client does.
snapshot() {
	# (clients, not eavesdroppers: the daemon's tap for the monitor)
	awk 'NR > 1 && $4 == "client" && $7 == 0 { split($11, a, ","); print $2, a[1] }' \
		/proc/net/bus 2>/dev/null | sort >$W/ino-addr
	# "INODE PID" of every socket of every process
	find /proc/[0-9]*/fd -maxdepth 1 -lname 'socket:*' -printf '%l %h\n' 2>/dev/null |
		sed -n 's|^socket:\[\([0-9]*\)\] /proc/\([0-9]*\)/fd$|\1 \2|p' | sort >$W/ino-pid
	join $W/ino-addr $W/ino-pid | while read -r _ino addr pid; do
		printf ':0.%x %s %s\n' "0x$addr" "$pid" "$(tr ' ' _ <"/proc/$pid/comm" 2>/dev/null)"
	done >$W/snap
	while read -r u pid comm; do
		grep -q "^$u " $W/names && continue
		if [ "$comm" = dbus-daemon ]; then
			tool busctl busctl --system call org.freedesktop.DBus /org/freedesktop/DBus \
				org.freedesktop.DBus GetConnectionUnixProcessID s "$u"
			pid=$(echo "$out" | sed -n 's/^u //p')
			comm=$(tr ' ' _ <"/proc/$pid/comm" 2>/dev/null)
			echo "$u ${pid:--} ${comm:-?} bridged"
		else
			echo "$u $pid $comm native"
		fi
	done <$W/snap >>$W/names
}

# native UNIT NAME: the service's main process (PID 1 for init), which owns
# NAME on the bus (started by the call if it is bus-activated), holds an
# AF_BUS socket joined to the system bus, at the address of its unique
# name (three checks); on Debian's kernel, none.
native() {
	tool busctl busctl --system call "$2" / org.freedesktop.DBus.Peer Ping
	if [ $1 = init ]; then
		_pid=1
	else
		_pid=$(systemctl show -P MainPID $1.service)
	fi
	_s=$(bus_client_sockets "$_pid" | tr '\n' ' ')
	snapshot
	if [ "$AFBUS_KERNEL" = stock ]; then
		expect_eq "Debian's kernel: $1 (pid $_pid) has no AF_BUS socket" "" "$_s"
		return
	fi
	expect_match "$1 (pid ${_pid:-none}) holds an AF_BUS socket" '^[0-9]+ $' "$_s"
	expect_match "... joined to the system bus" \
		"^[0-9a-f]+ +${_s% } +[0-9]+ +client +[^ ]+ +1 " "$(cat /proc/net/bus)"
	tool busctl busctl --system status "$2"
	_u=$(echo "$out" | sed -n 's/^UniqueName=//p')
	expect_eq "... its unique name ${_u:-?} ($2) is its AF_BUS socket's address" \
		"$_u $_pid native" "$(awk -v u="$_u" -v p="$_pid" '$1 == u && $2 == p { print $1, $2, $4 }' $W/names | head -n 1)"
}

# tool NAME ARGS...: an sd-bus tool, with sd-bus' debug log, which says
# how it connected and the unique name the bus gave it (appended to
# $W/names as "UNIQUE-NAME - NAME native|bridged"; "private" when it
# talked to PID 1's private socket, not to the bus); its output in $out.
tool() {
	_t=$1
	shift
	out=$(SYSTEMD_LOG_LEVEL=debug timeout 60 "$@" 2>$W/tool.err)
	_rc=$?
	_u=$(sed -n 's/^Got message type=method_return sender=org\.freedesktop\.DBus destination=\(:[^ ]*\) .* reply_cookie=1 .*/\1/p' \
		$W/tool.err | head -n 1)
	if [ -z "$_u" ]; then
		_c=private
	elif grep -q 'by connecting to AF_BUS ' $W/tool.err; then
		_c=native
	else
		_c=bridged
	fi
	[ -n "$_u" ] && echo "$_u - $_t $_c" >>$W/names
	echo "$_t $_c ${_u:-?} rc=$_rc" >>$W/tools
	return $_rc
}

: >$W/names
: >$W/tools
snapshot

# The monitor (the fork's libdbus) sees every message on the bus.
dbus-monitor --system >$W/monitor.out 2>&1 &
mon=$!
_pids=$mon
sleep 2

# --- the workload
tool hostnamectl hostnamectl status
expect_match "hostnamectl works (hostnamed activated)" 'Static hostname: afbus-system' "$out"
native systemd-hostnamed org.freedesktop.hostname1
tool timedatectl timedatectl status
expect_match "timedatectl works (timedated activated)" 'Time zone: ' "$out"
native systemd-timedated org.freedesktop.timedate1
tool loginctl loginctl list-sessions --no-legend
check "loginctl works" test $_rc = 0
native systemd-logind org.freedesktop.login1
tool localectl localectl status
expect_match "localectl works (localed activated)" 'System Locale: ' "$out"
native systemd-localed org.freedesktop.locale1
tool busctl busctl --system list --no-pager --no-legend
expect_match "busctl list shows logind" '^org\.freedesktop\.login1 +[0-9]+ ' "$out"
tool systemctl systemctl is-system-running
expect_match "systemctl talks to PID 1" '^(running|degraded)$' "$out"
tool systemctl systemctl --no-pager status systemd-logind.service
expect_match "systemctl status of logind" 'Active: active \(running\)' "$out"
# (root's systemctl talks to PID 1 on its private socket, a user's on the bus)
tool systemctl $AS_USER systemctl --no-pager is-active systemd-logind.service
expect_eq "systemctl as a user asks PID 1 over the bus" active "$out"
snapshot
tool systemctl systemctl restart systemd-logind.service
check "systemctl restart systemd-logind (a job: JobRemoved through the bus)" test $_rc = 0
i=0
while ! tool busctl busctl --system status org.freedesktop.login1 && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
tool loginctl loginctl list-sessions --no-legend
check "loginctl works with the restarted logind" test $_rc = 0
native systemd-logind org.freedesktop.login1
# a polkit check: hostnamed asks polkitd, which refuses an unprivileged user
tool hostnamectl $AS_USER hostnamectl set-location "user's room"
expect_match "a user's hostnamectl set-location is refused by polkit" \
	'(Interactive authentication required|Access denied)' "$(cat $W/tool.err)"
tool hostnamectl hostnamectl set-location "root's room"
check "root's hostnamectl set-location is allowed" test $_rc = 0
tool hostnamectl hostnamectl status
expect_match "... and the location changed" "Location: root's room" "$out"

native init org.freedesktop.systemd1
sleep 2
snapshot
kill $mon
wait $mon 2>/dev/null

# systemd --user of uid afbus (kept without a login, as session.sh does):
# on its user bus, which a client starts, it connects to the bus's AF_BUS
# address (sd-bus' default user bus address) once the bus runs
uid=$(id -u afbus)
loginctl enable-linger afbus
i=0 rows=
while [ $i -lt 300 ]; do
	upid=$(systemctl show -P MainPID user@$uid.service)
	if [ "$(systemctl is-active user@$uid.service)" = active ] && [ "${upid:-0}" != 0 ]; then
		[ -n "$started" ] || setpriv --reuid=afbus --regid=afbus --init-groups env -i \
			HOME=/home/afbus XDG_RUNTIME_DIR=/run/user/$uid timeout 60 busctl --user list >/dev/null 2>&1
		started=1
		rows=$(for ino in $(bus_client_sockets "$upid"); do
			awk -v i="$ino" '$2 == i && $4 == "client" && $6 == 1 { print $NF }' /proc/net/bus
		done)
		[ "$(echo "$rows" | grep -c .)" -ge 2 ] && break
		[ "$AFBUS_KERNEL" = stock ] && [ $i -ge 30 ] && break
	fi
	sleep 0.1
	i=$((i + 1))
done
if [ "$AFBUS_KERNEL" = afbus ]; then
	expect_match "systemd --user (pid ${upid:-none}) is an AF_BUS client joined to the system bus" \
		'^/run/dbus/dbus-afbus-' "$rows"
	expect_match "... and to its user bus" "^/run/user/$uid/dbus-afbus-" "$rows"
else
	expect_eq "Debian's kernel: systemd --user (pid ${upid:-none}) has no AF_BUS socket" "" "$rows"
fi
loginctl disable-linger afbus

# pam_systemd, in a login session (su -l; after the monitor, which could
# not tell who su is)
out=$(timeout 60 su -l afbus -c 'echo "$DBUS_SESSION_BUS_ADDRESS"' 2>&1)
expect_eq "a login session (pam_systemd) offers the user bus's AF_BUS address first" \
	"afbus:runtime=yes;unix:path=/run/user/$(id -u afbus)/bus" "$out"

# --- who sent what
sort -u $W/names -o $W/names
awk '
	FNR == NR { cls[$1] = $4; prog[$1] = $3; next }
	/^(method call|method return|error|signal) / {
		s = ""
		for (i = 1; i <= NF; i++)
			if ($i ~ /^sender=/) { s = substr($i, 8); break }
		if (s == "org.freedesktop.DBus") { daemon++; next }
		c = (s in cls) ? cls[s] : "unknown"
		p = (s in prog) ? prog[s] : "?"
		total++; n[c]++
		if (p ~ /^(systemd|systemd-logind|systemd-hostnam|systemd-timedat|systemd-localed|hostnamectl|timedatectl|loginctl|localectl|busctl|systemctl)$/) {
			sd++; sdc[c]++
		}
		per[p " " c]++
	}
	END {
		printf "messages=%d native=%d bridged=%d unknown=%d daemon=%d sdbus=%d sdbus_native=%d\n",
			total, n["native"], n["bridged"], n["unknown"], daemon, sd, sdc["native"]
		for (k in per) print "# by " k ": " per[k]
	}' $W/names $W/monitor.out >$W/messages
msgs=$(head -n 1 $W/messages)
conns=$(awk '{ c[$4]++; t++ } END { printf "connections=%d native=%d bridged=%d", t, c["native"], c["bridged"] }' $W/names)
echo "afbus-workload: kernel=$AFBUS_KERNEL $conns $msgs"
sed -n '2,$p' $W/messages | sort
awk '$4 == "bridged" { print "# bridged connection: " $0 }' $W/names
sed 's/^/# tool: /' $W/tools
total=$(echo "$msgs" | sed -n 's/^messages=\([0-9]*\) .*/\1/p')
sd=$(echo "$msgs" | sed -n 's/.* sdbus=\([0-9]*\) .*/\1/p')
sdn=$(echo "$msgs" | sed -n 's/.* sdbus_native=\([0-9]*\)$/\1/p')
check "the monitor saw the workload (${total:-0} messages, ${sd:-0} from sd-bus programs)" \
	test "${sd:-0}" -ge 50
case $AFBUS_KERNEL in
afbus)
	expect_eq "every sd-bus tool of the workload on the bus connected over AF_BUS" "" \
		"$(grep -v -e ' native ' -e ' private ' $W/tools)"
	expect_eq "every message of an sd-bus program went over AF_BUS (${sdn:-0} of ${sd:-0})" \
		"${sd:-0}" "${sdn:-0}"
	expect_eq "no connection of an sd-bus program on the bus is bridged" "" \
		"$(awk '$4 == "bridged" && $3 ~ /^(systemd|systemd-logind|systemd-hostnam|systemd-timedat|systemd-localed|hostnamectl|timedatectl|loginctl|localectl|busctl|systemctl)$/' $W/names)"
	;;
stock)
	expect_eq "Debian's kernel: every sd-bus tool on the bus used the unix socket" "" \
		"$(grep -v -e ' bridged ' -e ' private ' $W/tools)"
	;;
esac
finish
