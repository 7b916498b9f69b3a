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

# wait_ready FILE...: until each test tool printed its "ready" (or
# "queued") line (20 s at most each).
wait_ready() {
	for f in "$@"; do
		wait_for_line "$f" '^(ready|queued) '
	done
}

# Sockets /proc/net/bus lists, without its header line.
bus_sockets() {
	echo $(($(wc -l </proc/net/bus) - 1))
}

# Client sockets on a bus that eavesdrop (the daemon's tap), and the
# receive queue limit of each.
kernel_eavesdroppers() {
	awk '$4 == "client" && $7 == 1' /proc/net/bus | wc -l
}
kernel_eavesdropper_qlen() {
	awk '$4 == "client" && $7 == 1 { print $9 }' /proc/net/bus
}

# mixed_bus_config FILE AF-ADDRESS UNIX-ADDRESS [POLICY-LINE...]: write
# FILE, a session bus configuration that listens on both addresses (AF_BUS
# clients and legacy ones beside them) and allows everything (sending,
# receiving, eavesdropping, owning names), then the POLICY-LINEs.
mixed_bus_config() {
	_f=$1 _af=$2 _ux=$3
	shift 3
	{
		cat <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$_af</listen>
  <listen>$_ux</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
EOF
		for _l in "$@"; do
			echo "    $_l"
		done
		printf '  </policy>\n</busconfig>\n'
	} >"$_f"
}

# start_config_bus CONFIG-FILE PATH...: start dbus-daemon with
# CONFIG-FILE (its output in CONFIG-FILE.out), set BUS_PID, and wait
# until each PATH it listens on is there (a socket, or a non-empty
# address file; 10 s at most).  Fails if one is not.
start_config_bus() {
	_conf=$1
	shift
	dbus-daemon --config-file="$_conf" --nofork >"$_conf.out" 2>&1 &
	BUS_PID=$!
	_pids="$_pids $BUS_PID"
	for _p in "$@"; do
		i=0
		while [ ! -S "$_p" ] && [ ! -s "$_p" ] && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ -S "$_p" ] || [ -s "$_p" ] || return 1
	done
}

# Reading dbus-monitor's output:
# monitor_strings FILE REGEX: the string argument after each message
# header line of FILE that matches REGEX, one per line.
monitor_strings() {
	awk -v re="$2" '
		want && /^   string "/ { s = $0; sub(/^   string "/, "", s)
				sub(/"$/, "", s); print s; want = 0; next }
		/^(method call|method return|error|signal) / { want = ($0 ~ re) }
	' "$1"
}

# count_lines FILE REGEX: lines of FILE matching REGEX (grep -E).
count_lines() {
	grep -Ec -- "$2" "$1"
}

# first_line FILE REGEX: number of the first line of FILE matching REGEX.
first_line() {
	grep -En -- "$2" "$1" | head -n 1 | cut -d: -f1
}

# wait_seen ADDRESS FILE...: until each dbus-monitor writing to FILE saw
# the signal com.example.Ready.Go, sent on the bus at ADDRESS every 0.2 s
# (20 s at most each; dbus-monitor prints no ready line of its own).
wait_seen() {
	_a=$1
	shift
	for _f in "$@"; do
		i=0
		while ! grep -q 'interface=com.example.Ready; member=Go' "$_f" 2>/dev/null &&
			[ $i -lt 100 ]; do
			DBUS_SESSION_BUS_ADDRESS=$_a dbus-send --session --type=signal \
				/ready com.example.Ready.Go
			sleep 0.2
			i=$((i + 1))
		done
	done
}

finish() {
	for p in $_pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	echo "# Totals: pass:$_pass fail:$_fail xfail:0 xpass:0 skip:$_skip error:0"
	[ $_fail = 0 ]
	exit $?
}
