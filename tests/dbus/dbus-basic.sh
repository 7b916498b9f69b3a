#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dbus-daemon as AF_BUS bus master: addresses, Hello, the bus driver's
# methods, method calls by unique and well-known name, errors.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_bus afbus:
expect_match "daemon prints an afbus:path=...,guid=... address" \
	'^afbus:path=/tmp/dbus-afbus-[A-Za-z0-9]+,guid=[0-9a-f]{32}$' "$DBUS_SESSION_BUS_ADDRESS"
path=${DBUS_SESSION_BUS_ADDRESS#afbus:path=}
path=${path%%,*}
check "the bus path is a socket inode" test -S "$path"

out=$(timeout 20 dbus-send --bus="afbus:path=$path" --print-reply \
	--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames 2>&1)
expect_match "dbus-send ListNames over afbus:path= lists the bus" \
	'string "org.freedesktop.DBus"' "$out"
expect_match "ListNames lists the caller by its AF_BUS unique name" \
	'string ":0\.[1-9a-f][0-9a-f]*"' "$out"

out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetId 2>&1)
# As upstream: the bus ID is the daemon's, not the listening address' guid.
expect_match "GetId returns a bus ID" 'string "[0-9a-f]{32}"' "$out"

out=$(timeout 20 dbus-send --bus=afbus:path=/tmp/no-such-bus --print-reply \
	--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames 2>&1)
rc=$?
check "a bus that does not exist is an error, not a hang" \
	test $rc != 0 -a $rc != 124
expect_match "... which names the missing path" 'no-such-bus' "$out"

out=$(timeout 20 dbus-send --bus=afbus:nopath=1 --print-reply \
	--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames 2>&1)
expect_match "afbus: without path, abstract, file or runtime is a bad address" \
	'address of type afbus was missing argument path or abstract or file or runtime' "$out"

# The bus driver introspects its AF_BUS interface, the peer watches and
# the signals of AF_BUS clients' libraries (dbus/0007,
# dbus/0008), and keeps it out of its Interfaces property.
out=$(timeout 20 dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.Introspectable.Introspect 2>&1 | tr -d '\n ')
expect_match "Introspect shows org.freedesktop.DBus.AF_BUS: WatchPeer (s), UnwatchPeer (s), Forwarded (s, t, u, s, s), ForwardedLost (u), PeerGone (s) and ReplyTimeout (i)" \
	'<interfacename="org.freedesktop.DBus.AF_BUS"><methodname="WatchPeer"><argdirection="in"type="s"/></method><methodname="UnwatchPeer"><argdirection="in"type="s"/></method><signalname="Forwarded"><argtype="s"name="name"/><argtype="t"name="address"/><argtype="u"name="serial"/><argtype="s"name="callee"/><argtype="s"name="owner"/></signal><signalname="ForwardedLost"><argtype="u"name="count"/></signal><signalname="PeerGone"><argtype="s"name="name"/></signal><signalname="ReplyTimeout"><argtype="i"name="milliseconds"/></signal></interface>' \
	"$out"
out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus \
	/org/freedesktop/DBus org.freedesktop.DBus.Properties.Get \
	string:org.freedesktop.DBus string:Interfaces 2>&1)
expect_match "the Interfaces property lists the bus driver's interfaces" \
	'string "org.freedesktop.DBus.Monitoring"' "$out"
expect_eq "... but not the AF_BUS one" "" "$(printf '%s\n' "$out" | grep AF_BUS)"

# A service on libdbus, by well-known and by unique name.
bg sh -c 'afbus-echo-service com.example.Echo >/tmp/svc.out 2>&1'
check "the service gets its well-known name" wait_for_name com.example.Echo
# (the name can be owned before the service printed its "ready" line)
wait_ready /tmp/svc.out
svc=$(sed -n 's/^ready //p' /tmp/svc.out)
expect_match "the service has an AF_BUS unique name" '^:0\.[1-9a-f][0-9a-f]*$' "$svc"

out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.Echo / \
	com.example.Echo.Echo string:hello 2>&1)
expect_match "method call by well-known name gets its reply" 'string "hello"' "$out"

out=$(timeout 20 dbus-send --session --print-reply --dest="$svc" / \
	com.example.Echo.Echo string:direct 2>&1)
expect_match "method call by unique name gets its reply" 'string "direct"' "$out"

out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.Echo / \
	com.example.Echo.Fail 2>&1)
expect_match "an error reply reaches the caller" 'com\.example\.Echo\.Error\.Failed' "$out"

out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetNameOwner string:com.example.Echo 2>&1)
expect_match "GetNameOwner gives the service's unique name" "string \"$svc\"" "$out"

pid=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetConnectionUnixProcessID string:"$svc" 2>&1 |
	sed -n 's/.*uint32 //p')
check "GetConnectionUnixProcessID gives the service's pid" \
	grep -q afbus-echo-service "/proc/$pid/cmdline"
out=$(timeout 20 dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
	org.freedesktop.DBus.GetConnectionUnixUser string:"$svc" 2>&1)
expect_match "GetConnectionUnixUser gives uid 0" 'uint32 0$' "$out"

# 50 calls: the first goes through the daemon, which says where the name
# lives (Forwarded) once it has written the call to the service; the
# others go straight to the service.  A reply can beat that Forwarded,
# so the next call may go through the daemon too: one Forwarded each.
out=$(timeout 60 afbus-echo-client com.example.Echo 50 2>&1)
expect_match "50 calls by well-known name, a few Forwarded, then direct" \
	'^calls=50 ok=50 errors=0 forwarded=([1-9]|[1-4][0-9]) owners=$' "$out"

out=$(timeout 60 afbus-echo-client "$svc" 20 2>&1)
expect_eq "20 calls by unique name: no Forwarded" \
	"calls=20 ok=20 errors=0 forwarded=0 owners=" "$out"

# Forwarded is the library's own: without DBUS_AFBUS_SHOW_INTERNAL=1 the
# application sees none, yet the library learns the address from it.
# Once three calls are answered the daemon is stopped, and the other
# 27 (with their Whoami calls) still go straight to the service.
DBUS_AFBUS_SHOW_INTERNAL=0 afbus-echo-client --progress com.example.Echo 30 50 \
	>/tmp/hidden.out 2>&1 &
hidden_pid=$!
wait_for_line /tmp/hidden.out '^answered 3$'
kill -STOP $BUS_PID
wait_exit $hidden_pid
kill -CONT $BUS_PID
expect_match "Forwarded hidden from the application, yet 30 calls by name answered with the daemon stopped after the third" \
	'^calls=30 ok=30 errors=0 forwarded=0 owners=:' "$(grep -v '^answered\|^unique' /tmp/hidden.out)"

# A peer cannot forge the daemon's Forwarded: while a client calls
# com.example.Echo by name, another client sends it a Forwarded that
# puts the name at the address of another service (Decoy).  The kernel
# refuses it (every client's policy denies signals on the daemon's
# interface org.freedesktop.DBus.AF_BUS between clients), so neither the
# library nor the application gets it (forwarded=0, counted by its
# filter), and every call is still answered by Echo's owner.  (The
# library would act only on the daemon's own, from address 0.)
bg afbus-echo-service com.example.Decoy >/tmp/decoy.out 2>&1
wait_ready /tmp/decoy.out
decoy=$(timeout 30 afbus-flood-client com.example.Decoy 1 0 5000 2>&1 |
	sed -n 's/^first-forwarded //p')
DBUS_AFBUS_SHOW_INTERNAL=0 afbus-echo-client --progress com.example.Echo 60 100 \
	>/tmp/forge.out 2>&1 &
forge_pid=$!
wait_for_line /tmp/forge.out '^answered 3$'
victim_client=$(sed -n 's/^unique //p' /tmp/forge.out)
timeout 20 dbus-send --session --type=signal --dest="$victim_client" \
	/org/freedesktop/DBus org.freedesktop.DBus.AF_BUS.Forwarded \
	string:com.example.Echo uint64:$((0x${decoy:-0})) uint32:0 string: string: \
	>/tmp/forger.out 2>&1
wait_exit $forge_pid
expect_match "a Forwarded forged by another client (Decoy's address $decoy): refused by the kernel; Echo answered all 60 calls" \
	"^calls=60 ok=60 errors=0 forwarded=0 owners=$svc\$" "$(grep -v '^answered\|^unique' /tmp/forge.out)"

out=$(timeout 20 dbus-send --session --print-reply --dest=com.example.Nobody / \
	com.example.Echo.Echo string:x 2>&1)
expect_match "a name without owner gives ServiceUnknown/NameHasNoOwner" \
	'ServiceUnknown|NameHasNoOwner' "$out"

# A peer cannot pose as the daemon or as another client.  The daemon
# has the kernel (nfdbus, NFDBUS_BUS_CHECK_SENDER) refuse a message whose
# SENDER is not the sender's unique name; and the receiving libdbus
# drops one whose SENDER is not the name of its kernel-given source.
afbus-echo-service com.example.Victim >/tmp/victim.out 2>&1 &
victim_pid=$!
check "the victim service gets its name" wait_for_name com.example.Victim
wait_ready /tmp/victim.out
victim=$(sed -n 's/^ready //p' /tmp/victim.out)
expect_eq "the daemon has the kernel check senders (and apply the policy, and track replies with session.conf's limits) on its bus" \
	"check-sender policy replies max-replies=50000 reply-timeout=0" \
	"$(nfdbus-ctl bus "$path" 2>&1)"
forged0=$(nfdbus-ctl stats | sed -n 's/^forged //p')
out=$(afbus-forge "$victim" Quit org.freedesktop.DBus 2>&1)
expect_match "a Quit posing as the daemon is refused by the kernel (EPERM)" \
	'sendto: Operation not permitted' "$out"
out=$(afbus-forge "$victim" Quit "$svc" 2>&1)
expect_match "... and one posing as another client" \
	'sendto: Operation not permitted' "$out"
expect_eq "... both counted as forged" \
	$((forged0 + 2)) "$(nfdbus-ctl stats | sed -n 's/^forged //p')"
# Without the kernel's check, the victim's libdbus still drops them.
nfdbus-ctl bus "$path" none
out=$(afbus-forge "$victim" Quit org.freedesktop.DBus 2>&1)
expect_match "without the kernel's check a forged Quit goes out" '^sent [0-9]+ bytes' "$out"
afbus-forge "$victim" Quit "$svc" >/dev/null 2>&1
nfdbus-ctl bus "$path" check-sender policy
out=$(timeout 20 dbus-send --session --print-reply --dest="$victim" / \
	com.example.Echo.Whoami 2>&1)
expect_match "... and the victim's libdbus drops both: it lives" \
	"string \"$victim\"" "$out"
out=$(afbus-forge "$victim" Quit 2>&1)
i=0
while kill -0 $victim_pid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "the same message with the true SENDER is obeyed" sh -c "! kill -0 $victim_pid 2>/dev/null"

# Header fields that libdbus does not know: the daemon removes them from
# what it routes (it advertises HeaderFiltering), and the recipient's
# libdbus from what comes straight from a peer through the kernel.
# The field goes last, then first (the recipient's libdbus sees at once
# whether the known fields fill the header).
for where in "" first; do
	: >/tmp/hf.out # (the first round's "ready" line is not this one's)
	afbus-header-field recv >/tmp/hf.out 2>&1 &
	hf_pid=$!
	wait_ready /tmp/hf.out
	hf=$(sed -n 's/^ready //p' /tmp/hf.out)
	# shellcheck disable=SC2086  # $where: no word, or one
	expect_eq "a call with an unknown header field${where:+ $where}, straight to a peer, is answered" \
		answered "$(timeout 20 afbus-header-field send "$hf" $where 2>&1)"
	wait_exit $hf_pid
	expect_eq "... and the peer gets it without that field" \
		"unknown-field=absent" "$(grep '^unknown-field=' /tmp/hf.out)"
done

kill $BUS_PID
wait $BUS_PID 2>/dev/null
check "the daemon removes the bus path when it exits" test ! -e "$path"

# afbus:file=: the daemon writes the path into the file.
start_bus afbus:file=/tmp/test-bus.afbus
check "afbus:file= writes the path into the file" test -s /tmp/test-bus.afbus
out=$(timeout 20 dbus-send --bus=afbus:file=/tmp/test-bus.afbus --print-reply \
	--dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames 2>&1)
expect_match "dbus-send over afbus:file= works" 'string "org.freedesktop.DBus"' "$out"

finish
