#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Real D-Bus clients that nobody here wrote, unmodified, on one bus whose
# daemon (the fork) listens on AF_BUS and on a unix socket at once:
#   gdbus (GDBus: unix only), busctl (sd-bus: unix only), dbus-python on
#   the fork's libdbus (afbus: natively, and unix: as a legacy client),
# in conversations with the fork's own tools on AF_BUS (dbus-send,
# afbus-echo-service, afbus-echo-client).  Calls by unique and well-known
# name, replies, errors, signals to the subscribers whose rules match
# (and in order), and names changing hands between AF_BUS and unix owners.
# Runs in the Debian root file system (tests/guest/rootfs).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

D=/tmp/real-clients
rm -rf "$D"
mkdir -p "$D"
AF=afbus:file=$D/bus.afbus
UX=unix:path=$D/bus.sock
PY=/usr/libexec/afbus/afbus-py

mixed_bus_config "$D/bus.conf" $AF $UX
if start_config_bus "$D/bus.conf" "$D/bus.afbus" "$D/bus.sock"; then
	ok "the daemon listens on AF_BUS and on a unix socket"
else
	not_ok "the daemon listens on AF_BUS and on a unix socket"
	sed 's/^/#   /' "$D/bus.conf.out"
fi
# The fork's tools and afbus-echo-* use the session bus: on AF_BUS.
DBUS_SESSION_BUS_ADDRESS=$AF
export DBUS_SESSION_BUS_ADDRESS

# gdbus_call ADDRESS DEST PATH METHOD ARGS...: gdbus call, stderr too.
gdbus_call() {
	a=$1 d=$2 p=$3 m=$4
	shift 4
	timeout 30 gdbus call --address "$a" --dest "$d" --object-path "$p" \
		--method "$m" "$@" 2>&1
}

# ready_name FILE: the unique name a service printed with "ready".
ready_name() {
	wait_for_line "$1" '^(ready|queued) '
	sed -n 's/^\(ready\|queued\) //p' "$1" | head -n 1
}

out=$($PY transport "$AF" 2>&1)
expect_match "the daemon listens on AF_BUS: dbus-python connects with an AF_BUS socket" \
	'^AF_BUS :' "$out"
out=$($PY transport "$UX" 2>&1)
expect_match "... and on the unix socket at once: dbus-python there has an AF_UNIX socket" \
	'^AF_UNIX :' "$out"

# --- a service on AF_BUS (the fork's libdbus), real clients calling it
bg sh -c "afbus-echo-service com.example.Echo >$D/echo.out 2>&1"
echo_u=$(ready_name "$D/echo.out")
check "an AF_BUS service owns com.example.Echo" test -n "$echo_u"

out=$(gdbus_call "$UX" com.example.Echo / com.example.Echo.Echo hello)
expect_eq "gdbus (unix) calls the AF_BUS service by well-known name" "('hello',)" "$out"
out=$(gdbus_call "$UX" "$echo_u" / com.example.Echo.Echo unique)
expect_eq "gdbus calls it by unique name" "('unique',)" "$out"
out=$(gdbus_call "$UX" com.example.Echo / com.example.Echo.Whoami)
expect_eq "... and the well-known name leads to that unique name" "('$echo_u',)" "$out"
out=$(gdbus_call "$UX" com.example.Echo / com.example.Echo.Fail)
expect_match "gdbus gets the service's error by name" \
	'GDBus\.Error:com\.example\.Echo\.Error\.Failed' "$out"
out=$(timeout 30 busctl --address="$UX" call com.example.Echo / com.example.Echo Echo s busctl 2>&1)
expect_eq "busctl (sd-bus, unix) calls the AF_BUS service" 's "busctl"' "$out"
out=$(timeout 30 busctl --address="$UX" call "$echo_u" / com.example.Echo Whoami 2>&1)
expect_eq "busctl calls it by unique name" "s \"$echo_u\"" "$out"
out=$($PY call "$UX" com.example.Echo / com.example.Echo.Echo pyunix 2>&1)
expect_eq "dbus-python as a unix client calls the AF_BUS service" pyunix "$out"
out=$($PY call "$AF" com.example.Echo / com.example.Echo.Echo pyafbus 2>&1)
expect_eq "dbus-python on AF_BUS calls it" pyafbus "$out"
out=$($PY call "$AF" com.example.Echo / com.example.Echo.Fail 2>&1)
expect_eq "dbus-python on AF_BUS gets its error by name" \
	"error com.example.Echo.Error.Failed" "$out"

# --- dbus-python services, one per transport, called by everyone
bg sh -c "$PY service $UX com.example.PyU >$D/pyu.out 2>&1"
bg sh -c "$PY service $AF com.example.PyA >$D/pya.out 2>&1"
pyu=$(ready_name "$D/pyu.out")
pya=$(ready_name "$D/pya.out")
check "dbus-python services own their names (unix and AF_BUS)" \
	test -n "$pyu" -a -n "$pya"

out=$(timeout 30 dbus-send --print-reply=literal --dest=com.example.PyU \
	/com/example/Py com.example.Py.Echo string:to-unix 2>&1)
expect_eq "dbus-send (AF_BUS) calls the unix dbus-python service" "   to-unix" "$out"
out=$(timeout 30 dbus-send --print-reply=literal --dest=com.example.PyA \
	/com/example/Py com.example.Py.Echo string:to-afbus 2>&1)
expect_eq "dbus-send (AF_BUS) calls the AF_BUS dbus-python service" "   to-afbus" "$out"
out=$(gdbus_call "$UX" com.example.PyA /com/example/Py com.example.Py.Whoami)
expect_eq "gdbus calls the AF_BUS dbus-python service; it answers as its owner" \
	"('$pya',)" "$out"
out=$(gdbus_call "$UX" "$pyu" /com/example/Py com.example.Py.Echo by-unique)
expect_eq "gdbus calls the unix dbus-python service by unique name" "('by-unique',)" "$out"
out=$(timeout 30 dbus-send --print-reply --dest=com.example.PyU \
	/com/example/Py com.example.Py.Fail 2>&1)
expect_match "dbus-send gets the unix service's error by name" \
	'^Error com\.example\.Py\.Error\.Boom: boom' "$out"
out=$(gdbus_call "$UX" com.example.PyA /com/example/Py com.example.Py.Fail)
expect_match "gdbus gets the AF_BUS service's error by name" \
	'GDBus\.Error:com\.example\.Py\.Error\.Boom: boom' "$out"
out=$(gdbus_call "$UX" com.example.PyA /com/example/Py com.example.Py.Nope)
expect_match "an unknown method: UnknownMethod, from the AF_BUS service" \
	'GDBus\.Error:org\.freedesktop\.DBus\.Error\.UnknownMethod' "$out"
out=$(gdbus_call "$UX" com.example.Nobody / com.example.Echo.Echo x)
expect_match "gdbus to a name nobody owns: ServiceUnknown" \
	'GDBus\.Error:org\.freedesktop\.DBus\.Error\.ServiceUnknown' "$out"
out=$(timeout 30 dbus-send --print-reply --dest=com.example.Nobody / com.example.Echo.Echo string:x 2>&1)
expect_match "dbus-send (AF_BUS) to it: ServiceUnknown" \
	'^Error org\.freedesktop\.DBus\.Error\.ServiceUnknown' "$out"
out=$(timeout 30 gdbus introspect --address "$UX" --dest com.example.PyA \
	--object-path /com/example/Py 2>&1)
expect_match "gdbus introspects the AF_BUS dbus-python service" \
	'Echo\(in  s s,' "$out"
out=$(timeout 30 busctl --address="$UX" list --no-pager --no-legend 2>&1 | awk '{print $1}' | sort | xargs)
expect_match "busctl lists the names of both transports' clients" \
	"com\\.example\\.Echo com\\.example\\.PyA com\\.example\\.PyU" "$out"

# --- signals: each subscriber gets what its rules match, in order
rule="type='signal',interface='com.example.Py',member='Ping'"
bg sh -c "$PY listen $AF \"$rule\" 9 >$D/sub-af.out 2>&1"
bg sh -c "$PY listen $UX \"$rule\" 9 >$D/sub-ux.out 2>&1"
bg sh -c "$PY listen $AF \"type='signal',interface='com.example.Other'\" 1 >$D/sub-other.out 2>&1"
bg sh -c "timeout 60 gdbus monitor --address $UX --dest com.example.PyA >$D/gmon-a.out 2>&1"
bg sh -c "timeout 60 gdbus monitor --address $UX --dest com.example.PyU >$D/gmon-u.out 2>&1"
for f in sub-af sub-ux sub-other; do
	wait_for_line "$D/$f.out" '^ready '
done
wait_for_line "$D/gmon-a.out" 'Monitoring signals'
wait_for_line "$D/gmon-u.out" 'Monitoring signals'
sleep 1

# Three from the AF_BUS service, three from the unix one (each asked by
# a call, so they are sent in that order), then one each from gdbus emit
# and busctl emit (unix) and dbus-send (AF_BUS), which exit after sending.
out=$(gdbus_call "$UX" com.example.PyA /com/example/Py com.example.Py.Emit a 3)
expect_eq "the AF_BUS service emits three signals when gdbus asks" "()" "$out"
out=$(timeout 30 dbus-send --print-reply=literal --dest=com.example.PyU \
	/com/example/Py com.example.Py.Emit string:u uint32:3 2>&1)
expect_eq "the unix service emits three when dbus-send asks" "" "$out"
# (gdbus emit --address makes a peer-to-peer connection, without Hello,
# whose messages any bus daemon drops, Debian's too: --session it is.)
DBUS_SESSION_BUS_ADDRESS=$UX timeout 30 gdbus emit --session --object-path /g \
	--signal com.example.Py.Ping "'g'" "uint32 1" >/dev/null 2>&1
check "gdbus emit sends a signal" test $? = 0
timeout 30 busctl --address="$UX" emit /b com.example.Py Ping su b 1 >/dev/null 2>&1
check "busctl emit sends a signal" test $? = 0
timeout 30 dbus-send --type=signal /d com.example.Py.Ping string:d uint32:1
check "dbus-send (AF_BUS) sends a signal" test $? = 0

for f in sub-af sub-ux; do
	i=0
	while [ "$(grep -c '^Ping ' "$D/$f.out")" -lt 9 ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
done
sleep 1
# services PATTERN FILE: the services' signals FILE got, "|"-separated
services() {
	grep -E "^Ping ($pya|$pyu) " "$2" | grep -E "$1" | tr '\n' '|'
}
want_a="Ping $pya a 1|Ping $pya a 2|Ping $pya a 3|"
want_u="Ping $pyu u 1|Ping $pyu u 2|Ping $pyu u 3|"
expect_eq "dbus-python on AF_BUS gets both services' signals, in order" \
	"$want_a$want_u" "$(services . "$D/sub-af.out")"
expect_eq "dbus-python on unix gets the unix service's, in order" \
	"$want_u" "$(services " u " "$D/sub-ux.out")"
expect_eq "... and the AF_BUS service's, before them" \
	"$want_a$want_u" "$(services . "$D/sub-ux.out")"
expect_eq "dbus-python on AF_BUS gets dbus-send's signal (AF_BUS)" 1 \
	"$(grep -c '^Ping [^ ]* d 1$' "$D/sub-af.out")"
expect_eq "dbus-python on unix gets it" 1 \
	"$(grep -c '^Ping [^ ]* d 1$' "$D/sub-ux.out")"
for f in sub-af sub-ux; do
	case $f in sub-af) who="on AF_BUS" ;; *) who="on unix" ;; esac
	expect_eq "dbus-python $who gets gdbus emit's signal" 1 \
		"$(grep -c '^Ping [^ ]* g 1$' "$D/$f.out")"
	expect_eq "dbus-python $who gets busctl emit's signal" 1 \
		"$(grep -c '^Ping [^ ]* b 1$' "$D/$f.out")"
	expect_eq "dbus-python $who gets no other signal, and none twice" "" \
		"$(grep '^Ping ' "$D/$f.out" | grep -Ev ' (a [123]|u [123]|[gbd] 1)$'
		   grep '^Ping ' "$D/$f.out" | sort | uniq -d)"
done
expect_eq "a subscriber whose rule matches none of them gets none" "" \
	"$(grep -v '^ready ' "$D/sub-other.out")"
expect_eq "gdbus monitor (unix) of the unix service sees its three signals, in order" \
	"('u', uint32 1)|('u', uint32 2)|('u', uint32 3)|" \
	"$(sed -n 's/.*com\.example\.Py\.Ping //p' "$D/gmon-u.out" | tr '\n' '|')"
expect_eq "gdbus monitor (unix) of the AF_BUS service sees its three signals, in order" \
	"('a', uint32 1)|('a', uint32 2)|('a', uint32 3)|" \
	"$(sed -n 's/.*com\.example\.Py\.Ping //p' "$D/gmon-a.out" | tr '\n' '|')"

# --- a name changing hands between an AF_BUS owner and a unix owner while
# an AF_BUS client keeps calling it (its cached address must follow)
bg sh -c "afbus-echo-service com.example.Hand 1 >$D/hand-a.out 2>&1"
hand_a=$(ready_name "$D/hand-a.out")
afbus-echo-client com.example.Hand 300 20 >"$D/hand-client.out" 2>&1 &
client=$!
sleep 0.7
bg sh -c "$PY service $UX com.example.Hand 2 >$D/hand-b.out 2>&1"
hand_b=$(ready_name "$D/hand-b.out")
wait $client
out=$(cat "$D/hand-client.out")
expect_match "an AF_BUS client calling across the handover gets every reply" \
	'^calls=300 ok=300 errors=0 ' "$out"
expect_match "... from the AF_BUS owner, then from the unix one" \
	"owners=.*$hand_a.*$hand_b|owners=.*$hand_b.*$hand_a" "$out"
check "the AF_BUS owner was told it lost the name" grep -q '^lost com.example.Hand' "$D/hand-a.out"
out=$(timeout 30 busctl --address="$UX" call org.freedesktop.DBus /org/freedesktop/DBus \
	org.freedesktop.DBus GetNameOwner s com.example.Hand 2>&1)
expect_eq "busctl: the unix dbus-python service owns it now" "s \"$hand_b\"" "$out"
out=$(gdbus_call "$UX" "$hand_b" /com/example/Py com.example.Py.Quit)
wait_gone=0
while [ $wait_gone -lt 100 ]; do
	out=$(gdbus_call "$UX" org.freedesktop.DBus / org.freedesktop.DBus.GetNameOwner com.example.Hand)
	case $out in *"$hand_a"*) break ;; esac
	sleep 0.1
	wait_gone=$((wait_gone + 1))
done
expect_eq "when it quits, the name goes back to the queued AF_BUS owner" "('$hand_a',)" "$out"
out=$(timeout 30 dbus-send --print-reply=literal --dest=com.example.Hand / \
	com.example.Echo.Whoami 2>&1)
expect_eq "... which AF_BUS callers reach by name again" "   $hand_a" "$out"
out=$(gdbus_call "$UX" com.example.Hand / com.example.Echo.Whoami)
expect_eq "... and so do unix callers" "('$hand_a',)" "$out"

# --- two callers that stop reading, answered by dbus-python's service
# (GLib's main loop, where the transport's retry is a DBusTimeout on the
# connection, not a poll of its own as in afbus-echo-service, whose case
# is in tests/dbus/dbus-slow-caller.sh), on a bus of its own whose
# clients' receive buffers hold 256 KiB (max_outgoing_bytes), so that
# the callers' queues fill.  A's 20 replies of 64 KiB wait in the
# service's queue before B's; A alone reads again and gets all of them
# while B does not read, then B gets its own.
check "a second daemon, whose clients' receive buffers hold 256 KiB, starts" \
	start_mixed_bus /tmp/real-clients-slow max_outgoing_bytes=262144
bg sh -c "$PY service $AF com.example.PySlow >$D/pyslow.out 2>&1"
pyslow=$(ready_name "$D/pyslow.out")
DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller "$pyslow" 20 65536 >$D/slow-a.out 2>&1 &
slow_a=$!
wait_for_line $D/slow-a.out '^sent [0-9]+$'
DBUS_SESSION_BUS_ADDRESS=$AF afbus-slow-caller "$pyslow" 20 65536 >$D/slow-b.out 2>&1 &
slow_b=$!
wait_for_line $D/slow-b.out '^sent [0-9]+$'
# (B's calls answered and its queue full before A reads)
out=$(DBUS_SESSION_BUS_ADDRESS=$AF timeout 60 afbus-echo-client "$pyslow" 3 2>&1)
expect_match "dbus-python's service answers others while two callers do not read" \
	'^calls=3 ok=3 errors=0 ' "$out"
kill -USR1 $slow_a
wait $slow_a
expect_match "... the first to read again gets its 20 replies, in order, while the other does not read" \
	'^replies=20 ok=20 in-order=1 errors=0$' "$(cat $D/slow-a.out)"
check "... the other indeed has not read" \
	sh -c "kill -0 $slow_b && ! grep -q '^replies=' $D/slow-b.out"
kill -USR1 $slow_b
wait $slow_b
expect_match "... then it gets its 20" \
	'^replies=20 ok=20 in-order=1 errors=0$' "$(cat $D/slow-b.out)"

# --- the bus's reply timeout on GLib's main loop, where the transport
# wakes for it through a DBusTimeout on the connection (the blocking
# calls' case is in tests/dbus/dbus-noreply.sh): dbus-python calls a
# dbus-python service's Slow, which holds the call unanswered, with its
# own timeout of 60 s, on a bus with reply_timeout 2000.
check "a third daemon, with reply_timeout 2000, starts" \
	start_mixed_bus /tmp/real-clients-rt reply_timeout=2000
bg sh -c "$PY service $AF com.example.PyHold >$D/pyhold.out 2>&1"
pyhold=$(ready_name "$D/pyhold.out")
bg sh -c "$PY slowcall $AF $pyhold held 0 $D/rt.stop >$D/rt-call.out 2>&1"
wait_for_line $D/rt-call.out '^sent$'
t0=$(date +%s)
wait_for_line $D/rt-call.out '^(reply|error) '
t1=$(date +%s)
expect_eq "a call dbus-python's service never answers gets NoReply at the bus's reply timeout" \
	"error org.freedesktop.DBus.Error.NoReply" "$(grep -E '^(reply|error) ' $D/rt-call.out)"
check "... after about 2 s, not its own 60 s (took $((t1 - t0)) s)" \
	test $((t1 - t0)) -ge 1 -a $((t1 - t0)) -lt 15
touch $D/rt.stop
wait_for_line $D/rt-call.out '^strays '
expect_eq "... and the application sees no second answer" "strays 0" \
	"$(grep '^strays ' $D/rt-call.out)"

finish
