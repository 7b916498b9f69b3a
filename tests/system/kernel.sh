#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The kernel the system runs, the AF_BUS package (AFBUS_KERNEL=afbus)
# or Debian's own (stock): AppArmor is its major LSM, enabled, with
# Debian's profiles (the apparmor package's) loaded by apparmor.service
# and enforcing, as on any Debian 12 machine.  The AF_BUS kernel is
# Debian's configuration (build-aux/kernel-build.sh --system): modular,
# booted as Debian boots, its root file system's driver a module of the
# initramfs, AF_BUS built in and nfdbus a module loaded on demand.
. /usr/libexec/afbus/dbus-test-lib.sh

release=$(uname -r)
config=/boot/config-$release
case $AFBUS_KERNEL in
afbus)	expect_match "the kernel is the AF_BUS package's ($release)" '-afbus$' "$release" ;;
stock)	expect_match "the kernel is Debian's ($release)" '-amd64$' "$release" ;;
esac

# --- AppArmor
expect_match "AppArmor is an active LSM (/sys/kernel/security/lsm)" \
	'(^|,)apparmor(,|$)' "$(cat /sys/kernel/security/lsm)"
expect_eq "AppArmor is enabled (/sys/module/apparmor/parameters/enabled)" Y \
	"$(cat /sys/module/apparmor/parameters/enabled)"
check "aa-status --enabled" aa-status --enabled
check "apparmor.service, which loads the profiles, is active" \
	systemctl -q is-active apparmor.service
profiles=$(cat /sys/kernel/security/apparmor/profiles)
for p in lsb_release nvidia_modprobe; do
	expect_match "Debian's profile $p is loaded, enforcing" \
		"^$p \\(enforce\\)$" "$profiles"
done
status=$(aa-status 2>&1)
expect_match "aa-status: AppArmor module is loaded" '^apparmor module is loaded\.$' "$status"
expect_match "aa-status: profiles in enforce mode" '^[1-9][0-9]* profiles are in enforce mode\.$' "$status"

# --- how the kernel is built and booted
expect_match "Debian's choice of major LSM: CONFIG_DEFAULT_SECURITY_APPARMOR=y ($config)" \
	'^CONFIG_DEFAULT_SECURITY_APPARMOR=y$' "$(cat "$config")"
check "modules of $release are installed (modules.dep)" \
	test -s "/lib/modules/$release/modules.dep"
expect_match "the root file system's driver virtio_blk is a module, loaded" \
	'^virtio_blk ' "$(cat /proc/modules)"
expect_match "... from the initramfs (initramfs-tools)" \
	'/virtio_blk\.ko' "$(lsinitramfs "/boot/initrd.img-$release" 2>&1)"
case $AFBUS_KERNEL in
afbus)
	expect_match "AF_BUS built in, nfdbus a module (CONFIG_AF_BUS=y, CONFIG_NFDBUS=m)" \
		'^CONFIG_AF_BUS=y CONFIG_NFDBUS=m$' \
		"$(grep -E '^CONFIG_(AF_BUS|NFDBUS)=' "$config" | tr '\n' ' ' | sed 's/ $//')"
	expect_match "... nfdbus loaded on demand (by the system bus' master)" \
		'^nfdbus ' "$(cat /proc/modules)"
	expect_eq "no test module in the package (CONFIG_AF_BUS_NF_TEST)" "" \
		"$(grep '^CONFIG_AF_BUS_NF_TEST=' "$config" || true)"
	;;
esac
finish
