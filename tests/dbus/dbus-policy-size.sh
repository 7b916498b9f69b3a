#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Large bus policies.  The kernel holds at most 1024 rules in one
# policy, and one netlink request at most 65535 bytes of them (the
# length of the attribute that carries them is 16 bits), which rules
# with long names reach from about 600 rules on.  The daemon counts the
# rules of every context of a configuration before it takes it
# (bus_afbus_policy_fits(), policy/bus-afbus-policy.c):
# - a policy that fits is pushed whole: 1000 rules, the last of which
#   the kernel applies;
# - at startup, a policy that does not fit (too many bytes, too many
#   rules) makes the daemon skip its AF_BUS address with one warning
#   that says why: no Hello fails, the fork's clients given
#   "afbus:...;unix:..." fall back to unix:, and the daemon applies the
#   policy to them;
# - ReloadConfig refuses such a configuration (LimitsExceeded) and
#   keeps the one it has, for old and new AF_BUS clients.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

D=/tmp/policy-size
rm -rf $D
mkdir -p $D

# path LONG I: the path the I-th rule denies calls to: /big/I, or a long
# path (of 60 bytes and more) if LONG is 1.
path() {
	if [ "$1" = 1 ]; then
		echo "/com/example/ALongObjectPathForTheTestOfLargePolicies/$2"
	else
		echo "/big/$2"
	fi
}

# write_conf FILE AF UX N LONG: mixed_bus_config's configuration listening on AF
# and UX whose default context denies calls of com.example.Echo.Echo to
# the paths "path LONG 0" to "path LONG N-1" (the rules of the default
# context: 2 allow, N deny; a short rule takes 44 bytes in the kernel's
# request, a long one 128).
write_conf() {
	i=0
	while [ $i -lt "$4" ]; do
		if [ "$5" = 1 ]; then
			echo "<deny send_path=\"$(path 1 $i)\" send_interface=\"com.example.Echo\" send_member=\"Echo\"/>"
		else
			echo "<deny send_path=\"/big/$i\"/>"
		fi
		i=$((i + 1))
	done | mixed_bus_config "$1.tmp" "$2" "$3" -
	mv "$1.tmp" "$1"
}

# daemon CONF: start dbus-daemon with CONF, its output in CONF.out and
# the address it prints in CONF.addr; BUS_PID.
daemon() {
	dbus-daemon --config-file="$1" --nofork --print-address=3 \
		>"$1.out" 2>&1 3>"$1.addr" &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	i=0
	while [ ! -s "$1.addr" ] && kill -0 $BUS_PID 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

stop_daemon() {
	kill $BUS_PID 2>/dev/null
	wait $BUS_PID 2>/dev/null
}

# service TAG ADDRESS: an echo service com.example.Echo on ADDRESS; its
# output (ready UNIQUE-NAME) in $D/svc-TAG.out.
service() {
	DBUS_SESSION_BUS_ADDRESS=$2 afbus-echo-service com.example.Echo \
		>$D/svc-$1.out 2>&1 &
	_pids="$_pids $!"
	wait_ready $D/svc-$1.out
}

# call ADDRESS PATH [DEST]: dbus-send's output for a call to the echo
# service (DEST: its unique name, which an AF_BUS client calls directly
# through the kernel; by default its well-known name, which goes through
# the daemon first).
call() {
	timeout 20 dbus-send --bus="$1" --print-reply --reply-timeout=5000 \
		--dest="${3:-com.example.Echo}" "$2" com.example.Echo.Echo string:hi 2>&1
}

kernel_denied='org\.freedesktop\.DBus\.Error\.AccessDenied: .*over AF_BUS: Operation not permitted'
daemon_denied='org\.freedesktop\.DBus\.Error\.AccessDenied: Rejected send message'

# 1. 1000 short rules (about 56 KiB): pushed whole.
CONF=$D/fits.conf
AF=afbus:path=$D/fits.afbus
UX=unix:path=$D/fits.sock
write_conf $CONF $AF $UX 1000 0
daemon $CONF
expect_match "1000 rules that fit: the daemon listens on AF_BUS" \
	"^afbus:path=$D/fits.afbus" "$(cat $CONF.addr)"
service fits "$AF"
svc=$(sed -n 's/^ready //p' $D/svc-fits.out)
expect_match "... an AF_BUS service's Hello succeeds" '^:0\.[0-9a-f]+$' "$svc"
pol=$(nfdbus-ctl peer-policy "${AF#afbus:path=}" "$(printf '0x%x' "0x${svc#:0.}")" 2>&1)
expect_match "... it has a kernel policy" '^[1-9][0-9]*$' "$pol"
expect_eq "... of the 1000 rules, the allow rule and the daemon's own" \
	"rules 1003" "$(nfdbus-ctl policy-info "${AF#afbus:path=}" "$pol" | head -n 1)"
d0=$(nfdbus-ctl stats | sed -n 's/^denied //p')
expect_match "... the kernel denies a call the 1000th rule denies" \
	"$kernel_denied" "$(call "$AF" /big/999 "$svc")"
expect_eq "... refused by the kernel (denied counter)" $((d0 + 1)) \
	"$(nfdbus-ctl stats | sed -n 's/^denied //p')"
expect_match "... and the first rule's" "$kernel_denied" "$(call "$AF" /big/0 "$svc")"
expect_match "... and lets a call no rule denies through" 'string "hi"' \
	"$(call "$AF" /big/1000 "$svc")"

# 2. ReloadConfig with rules the kernel cannot hold: refused, the
# configuration kept.
write_conf $CONF $AF $UX 1000 1
out=$(timeout 20 dbus-send --bus="$AF" --print-reply --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.ReloadConfig 2>&1)
expect_match "ReloadConfig with 1000 rules of 64+ KiB fails with LimitsExceeded" \
	'org\.freedesktop\.DBus\.Error\.LimitsExceeded: Not reloading the configuration: the bus policy gives an AF_BUS client up to 1003 rules of [0-9]+ bytes, and the kernel holds at most 1024 rules of 65535 bytes' \
	"$out"
expect_eq "... the service keeps its kernel policy" "$pol" \
	"$(nfdbus-ctl peer-policy "${AF#afbus:path=}" "$(printf '0x%x' "0x${svc#:0.}")" 2>&1)"
expect_match "... the old configuration still applies (no member rule)" \
	'string "hi"' "$(call "$AF" /big/1000 "$svc")"
expect_match "... and denies what it denied" "$kernel_denied" \
	"$(call "$AF" /big/999 "$svc")"
expect_match "... a new AF_BUS client's Hello succeeds" \
	'string "org.freedesktop.DBus"' \
	"$(timeout 20 dbus-send --bus="$AF" --print-reply --dest=org.freedesktop.DBus \
		/ org.freedesktop.DBus.ListNames 2>&1)"
check "... the daemon is still up" kill -0 $BUS_PID
stop_daemon

# 3. At startup: too many bytes (1000 rules with long names), then too
# many rules (1100 short ones).  The daemon serves unix: alone.
for what in bytes rules; do
	CONF=$D/$what.conf
	AF=afbus:path=$D/$what.afbus
	UX=unix:path=$D/$what.sock
	list="$AF;$UX"
	case $what in
	bytes)	long=1 N=1000 ;;
	rules)	long=0 N=1100 ;;
	esac
	write_conf $CONF $AF $UX $N $long
	n=$((N + 3))
	daemon $CONF
	check "$what: the daemon runs" kill -0 $BUS_PID
	expect_match "$what: ... one warning: it does not listen on AF_BUS, the policy is too big" \
		"Not listening on afbus:path=$D/$what.afbus[^ ]*: the bus policy gives an AF_BUS client up to $n rules of [0-9]+ bytes, and the kernel holds at most 1024 rules of 65535 bytes in one policy \(nfdbus\); clients use the bus's other addresses" \
		"$(cat $CONF.out)"
	expect_match "$what: ... the address it prints is the unix one alone" \
		"^unix:path=$D/$what.sock,guid=[0-9a-f]+\$" "$(cat $CONF.addr)"
	check "$what: ... no AF_BUS bus file left" test ! -e $D/$what.afbus
	service $what "$list"
	expect_match "$what: a service given \"afbus:...;unix:...\" gets its name over unix" \
		'^ready :1\.[0-9]+$' "$(cat $D/svc-$what.out)"
	expect_match "$what: ... a client given the list calls it" 'string "hi"' \
		"$(call "$list" "$(path $long $N)")"
	expect_match "$what: ... and the daemon applies the last rule" \
		"$daemon_denied" "$(call "$list" "$(path $long $((N - 1)))")"
	stop_daemon
done

finish
