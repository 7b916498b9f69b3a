# SPDX-License-Identifier: GPL-2.0
# Known gaps of the fork, for the tests in tests/rootfs/ (sourced after
# dbus-test-lib.sh).  A check of behaviour that D-Bus clients rely on
# but the fork does not have yet passes when the behaviour is there, and
# otherwise is reported as a skip that names the gap (TAP "# SKIP"),
# never as a pass.  When a gap is closed, its checks pass: then make them
# plain checks.
#
# Gaps: none open.  Closed ones, whose checks are plain checks now:
#   G1  signals that AF_BUS clients send did not reach unix clients
#       (closed by bridging unix clients through AF_BUS pairs)
#   G3  a system bus daemon running as messagebus got EPERM from nfdbus
#       (closed: nfdbus authorises by the credentials its netlink socket
#       was opened with, and the daemon opens it before dropping root)

# known_gap_eq DESCRIPTION GAP EXPECTED ACTUAL
known_gap_eq() {
	if [ "$3" = "$4" ]; then
		ok "$1"
	else
		_n=$((_n + 1))
		_skip=$((_skip + 1))
		echo "ok $_n $1 # SKIP known gap $2"
		echo "#   expected: '$3'"
		echo "#   got:      '$4'"
	fi
}

# known_gap_match DESCRIPTION GAP REGEX TEXT (grep -E)
known_gap_match() {
	if printf '%s\n' "$4" | grep -Eq -- "$3"; then
		ok "$1"
	else
		_n=$((_n + 1))
		_skip=$((_skip + 1))
		echo "ok $_n $1 # SKIP known gap $2"
		echo "#   expected to match: $3"
		printf '%s\n' "$4" | sed 's/^/#   got: /'
	fi
}
