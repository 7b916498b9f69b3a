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

# skip DESCRIPTION REASON: one test, skipped (counted as skipped, never
# as passed).
skip() {
	_n=$((_n + 1)); _skip=$((_skip + 1))
	echo "ok $_n $1 # SKIP $2"
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

# elapsed_ms TEXT: the N of the "elapsed-ms N" line of TEXT, the output
# of afbus-direct-call or afbus-daemon-calls hang (empty if none).
elapsed_ms() {
	printf '%s\n' "$1" | sed -n 's/^elapsed-ms //p'
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

# wait_for_line FILE REGEX [SECONDS]: until a line of FILE matches REGEX
# (grep -E; SECONDS at most, default 20: a guard against a hang, for the
# check that follows to fail, never a wait meant to pass).
wait_for_line() {
	i=0
	while ! grep -Eq -- "$2" "$1" 2>/dev/null && [ $i -lt $((${3:-20} * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# wait_ready FILE...: until each test tool printed its "ready" (or
# "queued") line (20 s at most each).  A FILE written before must be
# emptied before its new tool starts (the tool's own redirection may
# come after this wait began); run-tests removes /tmp/*.out between
# scripts.
wait_ready() {
	for f in "$@"; do
		wait_for_line "$f" '^(ready|queued) '
	done
}

# wait_exit PID: wait for PID to exit (30 s at most); its exit status in
# $status ("running" if it did not exit).
wait_exit() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		status=running
	else
		wait "$1"
		status=$?
	fi
}

# wait_value VALUE COMMAND...: until COMMAND prints VALUE (10 s at most).
wait_value() {
	_v=$1
	shift
	i=0
	while [ "$("$@")" != "$_v" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
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
# receiving, eavesdropping, owning names), then the POLICY-LINEs (a
# POLICY-LINE "-": the lines of standard input, for many).  The
# AF_BUS address comes last, as in the fork's system.d and session.d
# files: the daemon advertises the last <listen> first.
mixed_bus_config() {
	_f=$1 _af=$2 _ux=$3
	shift 3
	{
		cat <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$_ux</listen>
  <listen>$_af</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
EOF
		for _l in "$@"; do
			if [ "$_l" = - ]; then
				sed 's/^/    /'
			else
				echo "    $_l"
			fi
		done
		printf '  </policy>\n</busconfig>\n'
	} >"$_f"
}

# config_limit FILE NAME VALUE: add <limit name="NAME">VALUE</limit> to
# the bus configuration FILE (as mixed_bus_config writes it).
config_limit() {
	sed '$d' "$1" >"$1.tmp"
	printf '  <limit name="%s">%s</limit>\n</busconfig>\n' "$2" "$3" >>"$1.tmp"
	mv "$1.tmp" "$1"
}

# activatable NAME [EXEC] [DIR]: a service file in DIR (by default the
# session bus's /usr/share/dbus-1/services) that activates NAME with
# EXEC (by default an afbus-echo-service owning NAME).
activatable() {
	_dir=${3:-/usr/share/dbus-1/services}
	mkdir -p "$_dir"
	printf '[D-BUS Service]\nName=%s\nExec=%s\n' "$1" \
		"${2:-/usr/bin/afbus-echo-service $1}" >"$_dir/$1.service"
}

# killed_by_name FILE: an echo service owns com.example.HangByName, a
# client (afbus-daemon-calls hang, 20 s timeout) calls it until its
# library has the name's address and then calls Hang straight to that
# address, and the service is killed mid-call; FILE gets the client's
# output.
killed_by_name() {
	afbus-echo-service com.example.HangByName >"$1.svc" 2>&1 &
	_svc=$!
	wait_for_name com.example.HangByName || not_ok "by name: the service gets its name"
	afbus-daemon-calls hang com.example.HangByName 20000 >"$1" 2>&1 &
	_caller=$!
	sleep 3
	kill -9 $_svc
	wait $_svc 2>/dev/null
	wait $_caller
}

# start_mixed_bus DIR [NAME=VALUE | POLICY-LINE...]: DIR made anew, and
# a daemon on mixed_bus_config's bus at AF=afbus:file=DIR/bus.afbus and
# UX=unix:path=DIR/bus.sock (both set, and D=DIR), with the POLICY-LINEs
# (arguments that start with "<") and each <limit> NAME set to VALUE;
# fails if it does not start (start_config_bus).
start_mixed_bus() {
	D=$1
	shift
	rm -rf "$D"
	mkdir -p "$D"
	AF=afbus:file=$D/bus.afbus
	UX=unix:path=$D/bus.sock
	_policy= _limits=
	for _l in "$@"; do
		case $_l in
		"<"*) _policy="$_policy
$_l" ;;
		*) _limits="$_limits $_l" ;;
		esac
	done
	# (one policy line per line of $_policy; no globbing of "*")
	set -f
	_ifs=$IFS
	IFS='
'
	# shellcheck disable=SC2086  # split on newlines only
	mixed_bus_config "$D/bus.conf" "$AF" "$UX" $_policy
	IFS=$_ifs
	set +f
	for _l in $_limits; do
		config_limit "$D/bus.conf" "${_l%%=*}" "${_l#*=}"
	done
	start_config_bus "$D/bus.conf" "$D/bus.afbus" "$D/bus.sock"
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

# start_echo_services AF-ADDRESS UNIX-ADDRESS: start the echo services
# echo_traffic calls, com.example.NEcho on AF_BUS and com.example.LEcho
# as a legacy client, and set nsvc and lsvc to their unique names.
start_echo_services() {
	DBUS_SESSION_BUS_ADDRESS=$1 afbus-echo-service com.example.NEcho \
		>/tmp/echo-nsvc.out 2>&1 &
	_pids="$_pids $!"
	DBUS_SESSION_BUS_ADDRESS=$2 afbus-echo-service com.example.LEcho \
		>/tmp/echo-lsvc.out 2>&1 &
	_pids="$_pids $!"
	wait_ready /tmp/echo-nsvc.out /tmp/echo-lsvc.out
	nsvc=$(sed -n 's/^ready //p' /tmp/echo-nsvc.out | head -n 1)
	lsvc=$(sed -n 's/^ready //p' /tmp/echo-lsvc.out | head -n 1)
	# (what the services said, should a later check fail for lack of
	# their names)
	for _f in /tmp/echo-nsvc.out /tmp/echo-lsvc.out; do
		grep -q '^ready :0\.[0-9a-f]*$' $_f ||
			sed "s|^|# $_f: |" $_f
	done
}

# echo_traffic AF-ADDRESS UNIX-ADDRESS NSVC LSVC: calls on a mixed bus
# whose AF_BUS echo service com.example.NEcho has the unique name NSVC
# and whose legacy one LSVC: 20 direct calls to NSVC, 10 by the
# well-known name (the first through the daemon), a direct call passing
# a pipe (ReadFd), a legacy -> AF_BUS call ("l2n") and an AF_BUS ->
# legacy one ("n2l").  Three checks.
echo_traffic() {
	out=$(DBUS_SESSION_BUS_ADDRESS=$1 timeout 60 afbus-echo-client "$3" 20 2>&1)
	expect_eq "20 direct calls to an AF_BUS service's unique name" \
		"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"
	# (Under load a reply can beat each Forwarded: then all ten go
	# through the daemon; see dbus-names.sh.)
	out=$(DBUS_SESSION_BUS_ADDRESS=$1 timeout 60 afbus-echo-client com.example.NEcho 10 2>&1)
	expect_match "10 calls to its well-known name, the first through the daemon" \
		'^calls=10 ok=10 errors=0 forwarded=([1-9]|10) ' "$out"
	out=$(DBUS_SESSION_BUS_ADDRESS=$1 timeout 20 afbus-echo-client --fd "$3" 2>&1)
	expect_match "a direct call passing a pipe" 'read "through AF_BUS"' "$out"
	DBUS_SESSION_BUS_ADDRESS=$2 timeout 20 dbus-send --session --print-reply \
		--dest=com.example.NEcho / com.example.Echo.Echo string:l2n >/dev/null
	DBUS_SESSION_BUS_ADDRESS=$1 timeout 20 dbus-send --session --print-reply \
		--dest="$4" / com.example.Echo.Echo string:n2l >/dev/null
}

# bus_client_sockets PID: the inode of each socket of process PID that
# /proc/net/bus lists as an AF_BUS client, one per line.
bus_client_sockets() {
	for _ino in $(ls -l /proc/$1/fd 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p'); do
		grep -Eq "^[0-9a-f]+ +$_ino +[0-9]+ +client " /proc/net/bus 2>/dev/null &&
			echo "$_ino"
	done
}

# cpu_ticks PID: utime + stime of process PID, in clock ticks (1/100 s).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# as_nobody FILE COMMAND: run the shell COMMAND as uid 65534 (a hostile
# unprivileged client), in the background, its output in FILE (made
# anew, writable by it); $! is the process of su.
as_nobody() {
	: >"$1"
	chmod 0666 "$1"
	su -s /bin/sh nobody -c "$2 >$1 2>&1" &
}

# expect_answered_meanwhile DESCRIPTION NAME [LISTED]: while something
# stalls, a native client ($DBUS_SESSION_BUS_ADDRESS) and a legacy one
# ($legacy) each get 10 calls answered by the service NAME, and the
# daemon answers (ListNames shows LISTED, by default NAME).  Three
# checks, the first named DESCRIPTION.
expect_answered_meanwhile() {
	expect_match "$1" \
		'^calls=10 ok=10 errors=0 ' "$(timeout 60 afbus-echo-client "$2" 10 2>&1)"
	expect_match "... and a legacy client's" \
		'^calls=10 ok=10 errors=0 ' "$(timeout 60 $legacy afbus-echo-client "$2" 10 2>&1)"
	expect_match "... and the daemon" "string \"${3:-$2}\"" \
		"$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
			org.freedesktop.DBus.ListNames 2>&1)"
}

# expect_kept_and_refused PREFIX FILE COUNT: afbus-flood-client's output
# FILE, for COUNT calls to a service that stalled while the daemon held
# its queue to a limit: some calls were answered, the others refused
# with LimitsExceeded, none lost.  Three checks, their names after
# PREFIX; the client's result line is printed as a comment.
expect_kept_and_refused() {
	_out=$(cat "$2")
	printf '%s\n' "$_out" | grep '^calls=' | sed "s/^/# $1: /"
	_ok=$(printf '%s\n' "$_out" | sed -n "s/^calls=$3 ok=\([0-9]*\) .*/\1/p")
	_err=$(printf '%s\n' "$_out" | sed -n 's/.* errors=\([0-9]*\) .*/\1/p')
	check "$1: the daemon kept some of the calls for the stalled service (${_ok:-none})" \
		test "${_ok:-0}" -ge 1
	check "... and refused the others (${_err:-none}) rather than hold more" \
		test "${_err:-0}" -ge 1 -a $((${_ok:-0} + ${_err:-0})) -eq "$3"
	expect_match "... with LimitsExceeded" \
		' error=org\.freedesktop\.DBus\.Error\.LimitsExceeded ' "$_out"
}

# expect_saw_echo_traffic TAG FILE NSVC: dbus-monitor's output FILE has
# every call and reply of echo_traffic once, each call before its reply,
# and the pipe with its call.  Seven checks, named after TAG.
expect_saw_echo_traffic() {
	expect_eq "$1: the 20 direct calls, each once" 20 \
		"$(count_lines "$2" "^method call .* -> destination=$3 .*member=Echo\$")"
	expect_eq "$1: the service's 32 replies (20 + 10 + ReadFd + 1 to a legacy caller), each once" 32 \
		"$(count_lines "$2" "^method return .* sender=$3 -> ")"
	# "message 0-19" by unique name, "message 0-9" by well-known name:
	# each a call and a reply.
	out=$(monitor_strings "$2" "member=Echo\$|^method return .* sender=$3 " |
		grep '^message ' | sort | uniq -c | awk '{ print $1 }' | sort | uniq -c |
		awk '{ printf "%dx%d ", $2, $1 }')
	expect_eq "$1: message 0-9 in 4 messages each, 10-19 in 2" "2x10 4x10 " "$out"
	# The first time each string shows up is in a call, and the next in
	# a reply.
	out=$(awk '/^(method call|method return|error|signal) / { type = $1 "-" $2 }
		/^   string "message [0-9]*"$/ { n[$0]++
			if (n[$0] <= 2) print type }' "$2" | paste - - | sort | uniq -c |
		awk '{ print $1, $2, $3 }')
	expect_eq "$1: each call comes before its reply" "20 method-call method-return" "$out"
	expect_eq "$1: the legacy -> AF_BUS call and its reply, once each" "l2n l2n" \
		"$(monitor_strings "$2" '.' | grep -x l2n | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "$1: the AF_BUS -> legacy call and its reply, once each" "n2l n2l" \
		"$(monitor_strings "$2" '.' | grep -x n2l | tr '\n' ' ' | sed 's/ $//')"
	# dbus-monitor prints the type of a file descriptor it received.
	expect_eq "$1: the call passing a pipe once, with the pipe" "1 1" \
		"$(count_lines "$2" "^method call .* -> destination=$3 .*member=ReadFd\$") $(count_lines "$2" 'type: fifo$')"
}

# system_bus_config FILE AF-ADDRESS [UNIX-ADDRESS] [LINE...]: write FILE,
# a bus configuration with the default policy of Debian's system.conf
# (its <policy> elements, as /usr/share/dbus-1/system.conf has them:
# method calls denied but to the bus driver's own interfaces, replies
# only when requested, no name owned), listening on AF-ADDRESS (and on
# UNIX-ADDRESS unless it is empty), then the LINEs: the holes a
# service's system.d file punches (system_holes), <limit>s, ...
system_bus_config() {
	_f=$1 _af=$2 _ux=$3
	shift 3
	{
		printf '%s\n' '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"' \
			' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">' \
			'<busconfig>' '  <type>system</type>'
		[ -n "$_ux" ] && echo "  <listen>$_ux</listen>"
		echo "  <listen>$_af</listen>"
		echo "  <auth>EXTERNAL</auth>"
		awk '/<policy[ >]/, /<\/policy>/' /usr/share/dbus-1/system.conf
		for _l in "$@"; do
			echo "  $_l"
		done
		echo '</busconfig>'
	} >"$_f"
}

# system_holes NAME...: the <policy> a service's system.d file has for
# each well-known NAME: anybody may own it (the tests run as root and as
# nobody) and call it.
system_holes() {
	echo '<policy context="default">'
	for _hn in "$@"; do
		echo "  <allow own=\"$_hn\"/>"
		echo "  <allow send_destination=\"$_hn\"/>"
	done
	echo '</policy>'
}

# proto_start TAG FD [WRAPPER...]: an afbus-protocol client (run through
# WRAPPER, e.g. "su -s /bin/sh nobody -c"), fed by this shell's file
# descriptor FD through a fifo, its output in /tmp/proto-TAG.out.
proto_start() {
	_tag=$1 _fd=$2
	shift 2
	rm -f /tmp/proto-$_tag.in
	mkfifo /tmp/proto-$_tag.in
	chmod 0666 /tmp/proto-$_tag.in
	: >/tmp/proto-$_tag.out
	chmod 0666 /tmp/proto-$_tag.out
	if [ $# -gt 0 ]; then
		"$@" "afbus-protocol client </tmp/proto-$_tag.in >/tmp/proto-$_tag.out 2>&1" &
	else
		afbus-protocol client </tmp/proto-$_tag.in >/tmp/proto-$_tag.out 2>&1 &
	fi
	_pids="$_pids $!"
	eval "exec $_fd>/tmp/proto-$_tag.in"
	eval "_proto_n_$_tag=0"
}

# proto TAG FD COMMAND [WAIT-S]: send COMMAND to the client TAG and wait
# (WAIT-S seconds at most, default 60) until it did it; its output lines
# (without the "= N" line) in $out.
proto() {
	eval "_pn=\$((_proto_n_$1 + 1)); _proto_n_$1=\$_pn"
	echo "$3" >&$2
	i=0
	while ! grep -qx "= $_pn" /tmp/proto-$1.out 2>/dev/null &&
		[ $i -lt $((${4:-60} * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	out=$(awk -v n="$_pn" '$0 == "= " n - 1 { on = 1; next }
		$0 == "= " n { exit } on || n == 1' /tmp/proto-$1.out)
}

finish() {
	for p in $_pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	echo "# Totals: pass:$_pass fail:$_fail xfail:0 xpass:0 skip:$_skip error:0"
	[ $_fail = 0 ]
	exit $?
}
