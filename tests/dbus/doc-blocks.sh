#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The documentation's shell blocks marked <!-- runnable: guest -->
# (README.md and doc/*.md, in /usr/share/doc/afbus), each one test, run
# in this guest as a reader would type them (tests/doc/run-blocks; the
# host runs the blocks marked host before it boots the guest).
if ! cd /usr/share/doc/afbus 2>/dev/null; then
	echo "not ok 1 - the documentation is in /usr/share/doc/afbus"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi
exec /usr/libexec/afbus/run-blocks guest README.md doc/*.md
