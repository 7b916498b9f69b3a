#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian packages of build-aux/packages.txt that are missing.
# As root it runs apt-get; otherwise it prints the command and fails.
set -eu
. "$(dirname "$0")/common.sh"

wanted=$(sed -e 's/#.*//' "$AFBUS_TOP/build-aux/packages.txt" | xargs)

missing=
for pkg in $wanted; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
	[ "$status" = installed ] || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	msg "missing Debian packages:$missing"
	msg "install them as root with:"
	echo "  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
msg "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends $missing
