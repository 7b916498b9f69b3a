#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One client's messages to a well-known name arrive in the order it sent
# them, as from dbus-daemon (issue 17, item 4), across the name's
# restart: the client's library has the name's address from the
# daemon's Forwarded, the service quits, and the client sends 2000
# numbered calls to the name.  The first find the address without an
# owner: the kernel refuses them (BUS_NO_DEFAULT_ROUTE) and the library
# sends them, and everything after them, through the daemon, which
# activates the service again; the library goes back to the address only
# once the daemon said it passed on all of them.  Before, those first
# calls took the kernel's default route to the daemon unseen by the
# library, which kept sending to the address, and once the new instance
# had it, later calls went straight to it, ahead of the ones the daemon
# still held.
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

mkdir -p /usr/share/dbus-1/services
cat >/usr/share/dbus-1/services/com.example.Order.service <<EOS
[D-BUS Service]
Name=com.example.Order
Exec=/usr/bin/afbus-echo-service com.example.Order
EOS

start_bus afbus:

for round in 1 2 3; do
	out=$(timeout 120 afbus-order-client com.example.Order 2000 2>&1)
	expect_match "round $round: the client had the name's address" \
		'^cached 1[0-9a-f]{12}$' "$out"
	expect_match "... its 2000 calls across the restart all arrived, in order" \
		'^seq=2000 in-order=1$' "$out"
	timeout 20 dbus-send --session --print-reply --dest=com.example.Order / \
		com.example.Echo.Quit >/dev/null 2>&1
done

finish
