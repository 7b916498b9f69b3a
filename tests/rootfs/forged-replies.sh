#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A real client library never sees a forged reply.  On the system bus
# (the fork's `dbus-daemon --system` as messagebus, Debian's system.conf
# and its default policy, listening on AF_BUS and on the unix socket), a
# dbus-python client (the fork's libdbus, AF_BUS) and a GDBus client
# (gdbus, the unix socket: a legacy client, named after its AF_BUS relay
# socket) call a slow dbus-python service, as an unprivileged user.
# Meanwhile a hostile client (afbus-reply forge, as nobody) sends each
# caller method returns and errors with the REPLY_SERIAL of its call and
# the serials around it (serials are sequential: easy to guess), straight
# through the kernel: while the service takes 3 s to answer, before it
# answers (the call held until then) and after it answered.  The kernel
# tracks replies (nfdbus, NFDBUS_BUS_REPLIES, set by the daemon): every
# forged send fails with EPERM and is counted (nfdbus-ctl stats,
# "unrequested"), and each client gets the service's answer, its value,
# and nothing else.  Last, a control: with reply tracking switched off
# for a moment, the same forgery does reach dbus-python (so these checks
# would see one), and once it is back on, it does not.
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

FILE=/run/dbus/system_bus.afbus
SOCK=/run/dbus/system_bus_socket
PY=/usr/libexec/afbus/afbus-py
D=/tmp/forged-replies
rm -rf "$D"
mkdir -p "$D"
chmod 0777 "$D"
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS

# The service's holes in the default policy, as its system.d file would
# punch them.
cat >/etc/dbus-1/system.d/com.example.Slow.conf <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root">
    <allow own="com.example.Slow"/>
  </policy>
  <policy context="default">
    <allow send_destination="com.example.Slow"/>
  </policy>
</busconfig>
EOF

rm -f "$FILE" "$SOCK" /run/dbus/pid
mkdir -p /run/dbus
dbus-daemon --system --nofork >"$D/daemon.out" 2>&1 &
_pids="$_pids $!"
i=0
while { [ ! -s "$FILE" ] || [ ! -S "$SOCK" ]; } && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ -s "$FILE" ] && [ -S "$SOCK" ]; then
	ok "dbus-daemon --system listens on AF_BUS and on $SOCK"
else
	not_ok "dbus-daemon --system listens on AF_BUS and on $SOCK"
	sed 's/^/#   /' "$D/daemon.out"
fi
bus=$(cat "$FILE")

bg sh -c "$PY service system com.example.Slow >$D/svc.out 2>&1"
wait_for_line "$D/svc.out" '^(ready|exists) '
svc=$(sed -n 's/^ready //p' "$D/svc.out")
check "a dbus-python service owns com.example.Slow on the system bus" test -n "$svc"
flags=$(nfdbus-ctl bus "$bus" 2>&1)
expect_match "the daemon has the kernel track replies on the system bus" \
	'(^| )replies( |$)' "$flags"

# The callers run as the unprivileged user afbus, the forger as nobody.
AS_USER="setpriv --reuid=afbus --regid=afbus --init-groups env HOME=/home/afbus"
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/"

unrequested() {
	nfdbus-ctl stats | sed -n 's/^unrequested //p'
}

# forge CALLER SERIAL [WATCH]: as nobody, a method return and an error
# to CALLER for SERIAL, then for each serial around it, SERIAL + 1,
# SERIAL - 1, ... up to SERIAL - 2 and SERIAL + 3 (from 1), through the
# kernel; appends each result ("forge: Operation not
# permitted") to $D/forge.out, counts them in $batch and $forged (all
# batches), and in $early those sent while the file WATCH had no reply
# line yet.
forged=0
: >"$D/forge.out"
forge() {
	batch=0 early=0
	if [ -z "$2" ]; then
		echo "forge: no call to forge a reply to" >>"$D/forge.out"
		return
	fi
	for _s in $2 $(($2 + 1)) $(($2 - 1)) $(($2 + 2)) $(($2 - 2)) $(($2 + 3)); do
		for _t in "" error; do
			[ "$_s" -gt 0 ] || continue
			# shellcheck disable=SC2086
			DBUS_SESSION_BUS_ADDRESS=afbus:file=$FILE \
				$AS_NOBODY afbus-reply forge "$1" $_s $_t \
				>>"$D/forge.out" 2>&1
			batch=$((batch + 1))
			[ -n "${3:-}" ] && ! grep -Eq '^(reply|error) ' "$3" &&
				early=$((early + 1))
		done
	done
	forged=$((forged + batch))
}

# expect_refused DESCRIPTION: every forgery of the last batch failed
# with EPERM; empties $D/forge.out.
expect_refused() {
	expect_eq "$1" "$batch forge: Operation not permitted" \
		"$(sort "$D/forge.out" | uniq -c | awk '{ $1 = $1; print }')"
	: >"$D/forge.out"
}

# call_line ARG: the service's "call SENDER SERIAL ARG" line for ARG, once
# it printed it (20 s at most).
call_line() {
	wait_for_line "$D/svc.out" "^call [^ ]+ [0-9]+ $1\$"
	grep -E "^call [^ ]+ [0-9]+ $1\$" "$D/svc.out" | head -n 1
}

# called ARG: caller and serial of the service's call line for ARG.
called() {
	_l=$(call_line "$1")
	caller=$(echo "$_l" | cut -d' ' -f2)
	serial=$(echo "$_l" | cut -d' ' -f3)
}

answer() {
	timeout 30 dbus-send --system --print-reply=literal --dest=com.example.Slow \
		/com/example/Py com.example.Py.Answer 2>&1 | awk '{ print $2 }'
}

expect_match "dbus-python, as the user, is on AF_BUS" '^AF_BUS :' \
	"$($AS_USER $PY transport system 2>&1)"

base=$(unrequested)
forged=0

# --- dbus-python, on AF_BUS: the service answers after 3 s, while the
# forger guesses (how many of its sends beat the answer depends on the
# machine: the next case holds the call until the forger is done).
bg sh -c "$AS_USER $PY slowcall system com.example.Slow meanwhile 3000 $D/stop1 >$D/py1.out 2>&1"
called meanwhile
expect_eq "dbus-python calls the slow service over AF_BUS (its name, as the service sees it)" \
	"caller $caller" "$(grep '^caller ' "$D/py1.out")"
forge "$caller" "$serial" "$D/py1.out"
expect_refused "meanwhile: every forged return and error (serial $serial and those around it) fails with EPERM"
wait_for_line "$D/py1.out" '^(reply|error) '
touch "$D/stop1"
wait_for_line "$D/py1.out" '^strays '
expect_eq "... and dbus-python gets the service's answer" "reply answer:meanwhile" \
	"$(grep -E '^(reply|error) ' "$D/py1.out")"
expect_eq "... and no other reply" "strays 0" "$(grep -E '^stray' "$D/py1.out")"
echo "# $early of the $batch forgeries went out before dbus-python had its answer"

# --- before the service answers (the call held until then), and after.
bg sh -c "$AS_USER $PY slowcall system com.example.Slow held 0 $D/stop2 >$D/py2.out 2>&1"
called held
forge "$caller" "$serial"
expect_refused "before the answer: every forged return and error fails with EPERM"
expect_eq "... and dbus-python, still waiting, has seen no reply" "caller $caller sent" \
	"$(tr '\n' ' ' <"$D/py2.out" | sed 's/ $//')"
expect_eq "the service answers the held call" 1 "$(answer)"
wait_for_line "$D/py2.out" '^(reply|error) '
expect_eq "... and dbus-python gets its answer" "reply answer:held" \
	"$(grep -E '^(reply|error) ' "$D/py2.out")"
forge "$caller" "$serial"
expect_refused "after the answer: every forged return and error fails with EPERM"
touch "$D/stop2"
wait_for_line "$D/py2.out" '^strays '
expect_eq "... and dbus-python sees none of them" "strays 0" "$(grep -E '^stray' "$D/py2.out")"

# --- GDBus, a legacy client on the unix socket: the forger sends to its
# AF_BUS name (the daemon's relay socket for it) while the call is held.
$AS_USER timeout 60 gdbus call --system --dest com.example.Slow --object-path /com/example/Py \
	--method com.example.Py.Slow gdbus 0 >"$D/gdbus.out" 2>&1 &
gdbus_pid=$!
called gdbus
expect_match "gdbus calls the slow service over the unix socket (an AF_BUS name)" \
	'^:0\.[0-9a-f]+$' "$caller"
forge "$caller" "$serial"
expect_refused "gdbus, before the answer: every forged return and error fails with EPERM"
expect_eq "the service answers the held call" 1 "$(answer)"
wait_exit $gdbus_pid
expect_eq "... and gdbus gets its answer, and nothing else" "0 ('answer:gdbus',)" \
	"$status $(cat "$D/gdbus.out")"

expect_eq "nfdbus counts every refused forgery (unrequested)" $((base + forged)) \
	"$(unrequested)"

# --- the control: without reply tracking the kernel lets the forged
# return through, and dbus-python takes it for the answer.
bg sh -c "$AS_USER $PY slowcall system com.example.Slow control 0 $D/stop3 >$D/py3.out 2>&1"
called control
off=$(printf '%s\n' "$flags" | tr ' ' '\n' | grep -Ev '^(replies|max-replies=.*|reply-timeout=.*)$' | tr '\n' ' ')
# shellcheck disable=SC2086
nfdbus-ctl bus "$bus" ${off:-none} >/dev/null 2>&1
out=$(DBUS_SESSION_BUS_ADDRESS=afbus:file=$FILE $AS_NOBODY afbus-reply forge "$caller" "$serial" 2>&1)
# shellcheck disable=SC2086
nfdbus-ctl bus "$bus" $flags >/dev/null 2>&1
expect_eq "control: without reply tracking the forgery is sent" "forge: sent" "$out"
wait_for_line "$D/py3.out" '^(reply|error) '
expect_eq "... and dbus-python takes it for the answer (so the checks above would see one)" \
	"reply forged" "$(grep -E '^(reply|error) ' "$D/py3.out")"
expect_eq "reply tracking is back on" "$flags" "$(nfdbus-ctl bus "$bus" 2>&1)"
touch "$D/stop3"
rm -f /etc/dbus-1/system.d/com.example.Slow.conf

finish
