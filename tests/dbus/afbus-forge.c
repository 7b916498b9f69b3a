// SPDX-License-Identifier: GPL-2.0
/*
 * Sends a D-Bus method call straight to another AF_BUS client through
 * the kernel, bypassing libdbus' own sending, with a SENDER header of
 * our choice.  On a bus where the daemon has nfdbus check senders the
 * kernel refuses a false SENDER (sendto fails with EPERM); otherwise the
 * receiving libdbus must drop a message whose SENDER is not the unique
 * name of the address the kernel reports for it.
 *
 * Usage: afbus-forge DEST-UNIQUE-NAME METHOD [SENDER]
 * Calls com.example.Echo.METHOD on DEST (no reply expected), with
 * SENDER as the sender (default: our own unique name, the honest case).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/bus.h>
#include <dbus/dbus.h>

#ifndef AF_BUS
#define AF_BUS 46
#endif

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	struct sockaddr_bus sa;
	DBusConnection *c;
	DBusMessage *m;
	unsigned long long addr;
	char *buf;
	int fd, len;

	if (argc < 3 || strncmp(argv[1], ":0.", 3) != 0) {
		fprintf(stderr, "usage: afbus-forge :0.HEX METHOD [SENDER]\n");
		return 2;
	}
	addr = strtoull(argv[1] + 3, NULL, 16);

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c || !dbus_connection_get_socket(c, &fd)) {
		fprintf(stderr, "afbus-forge: %s\n", c ? "no socket" : error.message);
		return 1;
	}

	m = dbus_message_new_method_call(argv[1], "/", "com.example.Echo", argv[2]);
	dbus_message_set_no_reply(m, TRUE);
	dbus_message_set_sender(m, argc > 3 ? argv[3] : dbus_bus_get_unique_name(c));
	dbus_message_set_serial(m, 4242);
	if (!dbus_message_marshal(m, &buf, &len))
		return 1;

	memset(&sa, 0, sizeof(sa));
	sa.sbus_family = AF_BUS;
	sa.sbus_addr.s_addr = addr;
	if (sendto(fd, buf, len, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   offsetof(struct sockaddr_bus, sbus_path)) != len) {
		perror("afbus-forge: sendto");
		return 1;
	}
	printf("sent %d bytes to %s as %s\n", len, argv[1],
	       argc > 3 ? argv[3] : dbus_bus_get_unique_name(c));
	dbus_free(buf);
	dbus_message_unref(m);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}
