// SPDX-License-Identifier: GPL-2.0
/*
 * Sends com.example.Echo.Seq (u N, s TEXT), no reply expected, straight
 * to another AF_BUS client through the kernel, as an AF_BUS client's
 * libdbus would, with our own unique name as SENDER.  With "bad", TEXT's
 * first byte is 0xff: the message is malformed (a string that is not
 * UTF-8), which only a D-Bus validator sees: the kernel does not read
 * the body of a message to one client, and the header is honest.
 *
 * Usage: afbus-malformed DEST-UNIQUE-NAME N [bad]
 * Prints "sent LEN bytes to DEST" once the kernel took the datagram.
 */
#define _GNU_SOURCE
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

#define MARKER "malformed-marker"

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	const char *text = MARKER;
	struct sockaddr_bus sa;
	DBusConnection *c;
	DBusMessage *m;
	dbus_uint32_t n;
	unsigned long long addr;
	char *buf, *p;
	int fd, len;

	if (argc < 3 || strncmp(argv[1], ":0.", 3) != 0) {
		fprintf(stderr, "usage: afbus-malformed :0.HEX N [bad]\n");
		return 2;
	}
	addr = strtoull(argv[1] + 3, NULL, 16);
	n = strtoul(argv[2], NULL, 0);

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c || !dbus_connection_get_socket(c, &fd)) {
		fprintf(stderr, "afbus-malformed: %s\n", c ? "no socket" : error.message);
		return 1;
	}

	m = dbus_message_new_method_call(argv[1], "/", "com.example.Echo", "Seq");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_UINT32, &n,
					    DBUS_TYPE_STRING, &text,
					    DBUS_TYPE_INVALID))
		return 1;
	dbus_message_set_no_reply(m, TRUE);
	dbus_message_set_sender(m, dbus_bus_get_unique_name(c));
	dbus_message_set_serial(m, 4300 + n);
	if (!dbus_message_marshal(m, &buf, &len))
		return 1;

	if (argc > 3 && strcmp(argv[3], "bad") == 0) {
		p = memmem(buf, len, MARKER, strlen(MARKER));
		if (!p) {
			fprintf(stderr, "afbus-malformed: marker not found\n");
			return 1;
		}
		*p = (char)0xff;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sbus_family = AF_BUS;
	sa.sbus_addr.s_addr = addr;
	if (sendto(fd, buf, len, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   offsetof(struct sockaddr_bus, sbus_path)) != len) {
		perror("afbus-malformed: sendto");
		return 1;
	}
	printf("sent %d bytes to %s\n", len, argv[1]);
	dbus_free(buf);
	dbus_message_unref(m);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}
