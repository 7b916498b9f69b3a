#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# AppArmor's dbus rules on the system bus: one allow/deny matrix (the
# profiles of apparmor-matrix.profiles: a confined caller, a confined
# service, a confined client that receives nothing) made on each path a
# message can take:
#   afbus   AF_BUS clients (the AF_BUS kernel): the messages between
#           them go straight through the kernel, which checks them
#           against the sender's and the recipient's profiles
#           (kernel-patches/lsm/0006, bus= from the daemon's <type>,
#           NFDBUS_A_BUS_TYPE); what they send the bus (Hello,
#           RequestName, AddMatch) the daemon checks
#   legacy  unix clients on the AF_BUS kernel: dbus-daemon checks
#           everything (bus/apparmor.c), as on any machine whose kernel
#           mediates D-Bus; what goes between two of them over the
#           bridge's AF_BUS sockets, which have the daemon's label, the
#           daemon checks against the unix clients' own labels
#   native-to-legacy, legacy-to-native: AF_BUS callers and listeners of
#           unix services, and the reverse (the AF_BUS kernel)
#   stock   Debian's 6.1 kernel: its AppArmor has no D-Bus mediation (no
#           features/dbus, no dbus code in security/apparmor), so
#           dbus-daemon does not mediate either: every case is allowed,
#           "not mediated" (doc/install.md)
# A kernel without features/dbus (the AF_BUS kernel before lsm/0006 too)
# expects the "not mediated" answers on every path.  On a mediating
# kernel afbus and legacy must give the same, expected, answers, and
# each refusal leaves an AppArmor DENIED line in the journal (the
# kernel's audit record, or dbus-daemon's).
#
# The profiles are compiled for AppArmor ABI 3.0 without network
# mediation: Debian 12's apparmor_parser (3.0.8) cannot name address
# family 46 (bus), so a profile compiled with network mediation refuses
# socket(AF_BUS) whatever its rules say (af_bus.rst).
if [ "$1" = --as ]; then
	# "$0 --as PROFILE COMMAND...": as(), for timeout to run
	shift
	p=$1
	shift
	[ "$p" = - ] && exec "$@"
	exec aa-exec -p "$p" -- "$@"
fi
. /usr/libexec/afbus/dbus-test-lib.sh

DIR=/usr/libexec/afbus/system
UNIX=unix:path=/run/dbus/system_bus_socket
DENIED=org.freedesktop.DBus.Error.AccessDenied
work=/tmp/aamx
rm -rf "$work"
mkdir -p "$work"

if ! aa-status --enabled 2>/dev/null; then
	skip "AppArmor D-Bus matrix" "AppArmor is not enabled"
	finish
fi
if [ -e /sys/kernel/security/apparmor/features/dbus/mask ]; then
	mediated=1
else
	mediated=0
fi

# ABI 3.0 (/etc/apparmor.d/abi/3.0) without its network sections, and
# no parser.conf (Debian's pins policy-features to its own set)
awk 'depth == 0 && /^(network|network_v8) \{/ { skip = 1 }
     { l = $0; o = gsub(/\{/, "{", l); c = gsub(/\}/, "}", l) }
     !skip { print }
     { depth += o - c; if (skip && depth == 0) skip = 0 }' \
	/etc/apparmor.d/abi/3.0 >"$work/features"
: >"$work/parser.conf"
check "the test profiles load (apparmor_parser -r, ABI 3.0 without network)" \
	apparmor_parser --config-file="$work/parser.conf" -M "$work/features" \
	-r "$DIR/apparmor-matrix.profiles"
profiles=$(cat /sys/kernel/security/apparmor/profiles)
for p in afbus_mx_caller afbus_mx_service afbus_mx_deaf; do
	expect_match "profile $p is loaded, enforcing" "^$p \\(enforce\\)$" "$profiles"
done

# as PROFILE COMMAND... &: COMMAND in the background (only: as execs),
# confined by PROFILE (- for none), $! its pid (--as execs it too); a
# profile needs no rule to run it (aa-exec changes on exec), but one for
# every program COMMAND runs, hence the timeouts outside
as() {
	exec "$0" --as "$@"
}

# as_service PROFILE COMMAND... &: as(), on the services' address
as_service() {
	DBUS_SYSTEM_BUS_ADDRESS=$service_address
	export DBUS_SYSTEM_BUS_ADDRESS
	exec "$0" --as "$@"
}

# call PROFILE DEST MEMBER [ARG]: a method call of com.example.Echo on
# /com/example; prints "reply TEXT" or "error NAME"
call() {
	if out=$(timeout 20 "$0" --as "$1" dbus-send --system --print-reply=literal \
			--dest="$2" /com/example "com.example.Echo.$3" ${4:+"$4"} 2>&1); then
		echo "reply $(printf '%s\n' "$out" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' | tr -d '\n')"
	else
		echo "error $(printf '%s\n' "$out" | sed -n 's/^Error \([^:]*\):.*/\1/p' | head -n 1)"
	fi
}

# denials SINCE PROFILE MEMBER: AppArmor DENIED records in the journal
# since SINCE naming the profile (the kernel says profile=, dbus-daemon
# label=) and the member.  Without auditd the journal has each audit
# record twice, from journald's audit socket and from the kernel log
# (printk): counted once, by the record's text from apparmor="DENIED"
# on (with its pid, which differs between two refusals)
denials() {
	journalctl -q -b --since "@$1" --no-pager -o cat 2>/dev/null |
		grep 'apparmor="DENIED"' | grep -E "(profile|label)=\"$2\"" |
		grep "member=\"$3\"" | sed 's/.*apparmor="DENIED"/apparmor="DENIED"/' |
		sort -u | wc -l
}

# matrix PATH ADDRESS [SERVICE_ADDRESS]: the cases, every client on
# ADDRESS only (no fallback to another address), the services on
# SERVICE_ADDRESS (default: ADDRESS)
matrix() {
	path=$1
	service_address=${3:-$2}
	DBUS_SYSTEM_BUS_ADDRESS=$2
	DBUS_SESSION_BUS_ADDRESS=$2
	export DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS
	if [ $mediated = 1 ]; then
		deny=$DENIED
	else
		deny=
	fi

	# an unconfined service, and the same confined
	as_service - afbus-echo-service com.example.AAMatrix.Plain >"$work/$path-plain.out" 2>&1 &
	_pids="$_pids $!"
	as_service afbus_mx_service afbus-echo-service com.example.AAMatrix >"$work/$path-svc.out" 2>&1 &
	_pids="$_pids $!"
	wait_ready "$work/$path-plain.out" "$work/$path-svc.out"
	plain=$(sed -n 's/^ready //p' "$work/$path-plain.out")
	svc=$(sed -n 's/^ready //p' "$work/$path-svc.out")
	expect_match "$path: an unconfined service owns com.example.AAMatrix.Plain" '^:' "$plain"
	expect_match "$path: the confined service may own com.example.AAMatrix (dbus bind)" '^:' "$svc"
	out=$(DBUS_SYSTEM_BUS_ADDRESS=$service_address timeout 5 "$0" --as afbus_mx_service \
		afbus-echo-service com.example.AAMatrix.Other 2>&1)
	if [ $mediated = 1 ]; then
		expect_match "$path: ... but not com.example.AAMatrix.Other" \
			'RequestName: .*AppArmor' "$out"
	else
		expect_match "$path: ... and com.example.AAMatrix.Other (not mediated)" \
			'^ready ' "$out"
	fi

	since=$(date +%s)
	sleep 1
	# method calls, by unique name: straight through the kernel on AF_BUS
	expect_eq "$path: confined caller -> unconfined service: allowed member (Echo)" \
		"reply hi" "$(call afbus_mx_caller "$plain" Echo string:hi)"
	if [ $mediated = 1 ]; then
		expect_eq "$path: confined caller -> unconfined service: other member (Whoami) denied by the caller's profile" \
			"error $deny" "$(call afbus_mx_caller "$plain" Whoami)"
	else
		expect_eq "$path: confined caller -> unconfined service: Whoami (not mediated)" \
			"reply $plain" "$(call afbus_mx_caller "$plain" Whoami)"
	fi
	expect_eq "$path: unconfined caller -> confined service: allowed member (Echo)" \
		"reply hi" "$(call - "$svc" Echo string:hi)"
	if [ $mediated = 1 ]; then
		expect_eq "$path: unconfined caller -> confined service: other member (Whoami) denied by the service's profile" \
			"error $deny" "$(call - "$svc" Whoami)"
	else
		expect_eq "$path: unconfined caller -> confined service: Whoami (not mediated)" \
			"reply $svc" "$(call - "$svc" Whoami)"
	fi
	expect_eq "$path: a client that receives nothing gets the reply it asked for" \
		"reply hi" "$(call afbus_mx_deaf "$plain" Echo string:hi)"
	if [ $mediated = 1 ]; then
		sleep 1
		expect_eq "$path: the caller's refusal is in the journal (AppArmor DENIED, member Whoami)" \
			1 "$(denials "$since" afbus_mx_caller Whoami)"
		expect_eq "$path: the service's refusal is in the journal" \
			1 "$(denials "$since" afbus_mx_service Whoami)"
	fi

	# signals: each receiver's profile
	as afbus_mx_caller afbus-signal listen "type='signal',interface='com.example.Echo'" \
		>"$work/$path-l1.out" 2>&1 &
	_pids="$_pids $!"
	as afbus_mx_deaf afbus-signal listen "type='signal',interface='com.example.Echo'" \
		>"$work/$path-l2.out" 2>&1 &
	_pids="$_pids $!"
	wait_ready "$work/$path-l1.out" "$work/$path-l2.out"
	expect_eq "$path: the service emits a signal for everybody" "reply signalled" \
		"$(call - "$plain" Signal string:"$path-sig")"
	wait_for_line "$work/$path-l1.out" "^com\\.example\\.Echo\\.Answer $path-sig "
	sleep 1
	expect_eq "$path: a confined receiver whose profile takes it gets the signal" 1 \
		"$(grep -c "^com\\.example\\.Echo\\.Answer $path-sig " "$work/$path-l1.out")"
	if [ $mediated = 1 ]; then
		expect_eq "$path: ... one whose profile does not, does not" 0 \
			"$(grep -c "^com\\.example\\.Echo\\.Answer $path-sig " "$work/$path-l2.out")"
	else
		expect_eq "$path: ... and so does the one that receives nothing (not mediated)" 1 \
			"$(grep -c "^com\\.example\\.Echo\\.Answer $path-sig " "$work/$path-l2.out")"
	fi

	# GetConnectionCredentials: the confined service's AppArmor label
	out=$(timeout 20 dbus-send --system --print-reply --dest=org.freedesktop.DBus \
		/org/freedesktop/DBus org.freedesktop.DBus.GetConnectionCredentials \
		string:"$svc" 2>&1)
	if [ $mediated = 1 ]; then
		expect_match "$path: GetConnectionCredentials has the service's LinuxSecurityLabel" \
			'afbus_mx_service' "$out"
	else
		expect_match "$path: GetConnectionCredentials answers" 'ProcessID' "$out"
		expect_eq "$path: ... without a LinuxSecurityLabel (the kernel gives none: not mediated)" \
			0 "$(printf '%s\n' "$out" | grep -c LinuxSecurityLabel)"
	fi
	for p in $_pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	_pids=
}

echo "# D-Bus mediation by the kernel's AppArmor: $([ $mediated = 1 ] && echo yes || echo 'no (not mediated)')"
if [ "$AFBUS_KERNEL" = afbus ]; then
	af_path=$(cat /run/dbus/system_bus.afbus 2>/dev/null)
	expect_match "the system bus has an AF_BUS address" '^/' "$af_path"
	matrix afbus "afbus:path=$af_path"
	# across the bridge: what an AF_BUS client sends a unix client
	# reaches it through the daemon's socket, whose label the kernel
	# sees, and the daemon checks the unix client's own; what a unix
	# client sends an AF_BUS client the daemon checks as any message
	matrix native-to-legacy "afbus:path=$af_path" "$UNIX"
	matrix legacy-to-native "$UNIX" "afbus:path=$af_path"
fi
matrix legacy "$UNIX"

apparmor_parser -R "$DIR/apparmor-matrix.profiles" >/dev/null 2>&1
finish
