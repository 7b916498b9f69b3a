// SPDX-License-Identifier: GPL-2.0
/*
 * The AF_BUS UAPI has one layout for 32-bit and 64-bit programs
 * (af_bus.rst, "Addresses"): the build compiles this file with -m32 and
 * -m64 (-fsyntax-only), and any difference fails it.  Before s_addr was
 * an __aligned_u64, i386 put sbus_path at offset 12.
 */
#include <stddef.h>
#include <linux/bus.h>

_Static_assert(sizeof(struct bus_addr) == 8, "struct bus_addr is 8 bytes");
_Static_assert(offsetof(struct sockaddr_bus, sbus_addr) == 8,
	       "sbus_addr at offset 8");
_Static_assert(offsetof(struct sockaddr_bus, sbus_path) == 16,
	       "sbus_path at offset 16");
_Static_assert(sizeof(struct sockaddr_bus) == 128,
	       "struct sockaddr_bus is 128 bytes, as sockaddr_storage");
