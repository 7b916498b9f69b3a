#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A legacy (unix:) client keeps the configuration's
# max_match_rules_per_connection, as on dbus-daemon, not the kernel's 512
# rules per client: past 512, the kernel gives its C1 every multicast
# (one rule, type='signal', in place of one of its rules) and the daemon
# matches them against all its rules in its own matchmaker
# (bus-afbus-match.c, match_in_daemon()).  It gets exactly the signals
# its rules match: those of its 600th rule, which only the daemon has,
# of its first, whose kernel copy made room, and of one the kernel still
# has; not the others.  The configured limit still applies; a native
# client keeps the kernel's 512 (dbus-signals.sh).
. /usr/libexec/afbus/dbus-test-lib.sh
cd /tmp

start_mixed_bus /tmp/legacy-rules max_match_rules_per_connection=600 ||
	not_ok "the daemon starts"
AF_PATH=$(cat $D/bus.afbus)
export DBUS_SESSION_BUS_ADDRESS=$AF
legacy="env DBUS_SESSION_BUS_ADDRESS=$UX"

out=$(timeout 120 $legacy afbus-signal many-rules 601 2>/dev/null)
expect_eq "a legacy client adds 600 rules, and the 601st exceeds the configuration's limit" \
	"added=600 error=org.freedesktop.DBus.Error.LimitsExceeded" "$out"
out=$(timeout 120 afbus-signal many-rules 513 2>/dev/null)
expect_eq "a native client's 513th rule still exceeds the kernel's 512" \
	"added=512 error=org.freedesktop.DBus.Error.LimitsExceeded" "$out"

# A legacy listener with 600 rules, one per arg0 k0 ... k599.
rules=
i=0
while [ $i -lt 600 ]; do
	rules="$rules type='signal',interface='com.example.R',arg0='k$i'"
	i=$((i + 1))
done
# shellcheck disable=SC2086  # one argument per rule (no spaces in them)
$legacy afbus-signal listen $rules >$D/listen.out 2>&1 &
_pids="$_pids $!"
wait_ready $D/listen.out
who=$(sed -n 's/^ready //p' $D/listen.out)
expect_match "the listener gets its 600 rules" '^:0\.[0-9a-f]+$' "$who"
addr=$(printf '0x%x' "0x${who#:0.}")
kernel=$(nfdbus-ctl list "$AF_PATH" "$addr" 2>&1)
expect_eq "... the kernel holds 512 rules of its C1" 512 \
	"$(printf '%s\n' "$kernel" | grep -c .)"
expect_eq "... one of which matches every signal" 1 \
	"$(printf '%s\n' "$kernel" | grep -c "	type='signal'\$")"

for a in k599 nomatch k0 other k5 k600; do
	dbus-send --session --type=signal /com/example com.example.R.Ping string:$a
done
dbus-send --session --type=signal /com/example com.example.R.Ping string:k42
wait_for_line $D/listen.out 'com\.example\.R\.Ping k42 '
expect_eq "... it gets the signals of its 600th, first, 6th and 43rd rules, in order, and no other" \
	"k599 k0 k5 k42" \
	"$(sed -n 's/^com\.example\.R\.Ping \([^ ]*\) .*/\1/p' $D/listen.out | tr '\n' ' ' | sed 's/ $//')"

finish
