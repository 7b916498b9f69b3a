# SPDX-License-Identifier: GPL-2.0
# Helpers for the D-Bus tests in the guest (busybox sh), sourced by
# /tests/dbus/*.sh.  Output is TAP, ended by a kselftest-style
# "# Totals:" line that the guest's run-tests counts.

_pass=0 _fail=0 _skip=0 _n=0
_pids=

ok() {
	_n=$((_n + 1)); _pass=$((_pass + 1))
	echo "ok $_n $*"
}

not_ok() {
	_n=$((_n + 1)); _fail=$((_fail + 1))
	echo "not ok $_n $*"
}

# check DESCRIPTION COMMAND...: one test, passed when COMMAND succeeds.
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		echo "#   expected: '$2'"
		echo "#   got:      '$3'"
	fi
}

# expect_match DESCRIPTION REGEX TEXT (grep -E)
expect_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then
		ok "$1"
	else
		not_ok "$1"
		echo "#   expected to match: $2"
		printf '%s\n' "$3" | sed 's/^/#   got: /'
	fi
}

# bg COMMAND...: run in the background, killed at the end.
bg() {
	"$@" &
	_pids="$_pids $!"
}

# start_bus [ADDRESS [CONFIG-FILE]]: start dbus-daemon --session (or with
# CONFIG-FILE) on ADDRESS (default afbus:; "-": the <listen> addresses
# of CONFIG-FILE) and set DBUS_SESSION_BUS_ADDRESS (all of its addresses,
# separated by ";") and BUS_PID.
start_bus() {
	addr_file=/tmp/bus-address.$$
	rm -f "$addr_file"
	config=--session
	[ -n "${2:-}" ] && config=--config-file=$2
	listen=${1:-afbus:}
	set -- "$config" --nofork --print-address=3
	[ "$listen" = - ] || set -- "$@" --address="$listen"
	dbus-daemon "$@" 3>"$addr_file" &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	i=0
	while [ ! -s "$addr_file" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	DBUS_SESSION_BUS_ADDRESS=$(head -n 1 "$addr_file")
	export DBUS_SESSION_BUS_ADDRESS
}

# wait_for_name NAME: until NAME has an owner on the bus (10 s at most).
wait_for_name() {
	i=0
	while [ $i -lt 100 ]; do
		dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
			org.freedesktop.DBus.NameHasOwner string:"$1" 2>/dev/null |
			grep -q 'boolean true' && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_for_line FILE REGEX: until a line of FILE matches REGEX (grep -E;
# 20 s at most).
wait_for_line() {
	i=0
	while ! grep -Eq -- "$2" "$1" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

finish() {
	for p in $_pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	echo "# Totals: pass:$_pass fail:$_fail xfail:0 xpass:0 skip:$_skip error:0"
	[ $_fail = 0 ]
	exit $?
}
