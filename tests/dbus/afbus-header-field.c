// SPDX-License-Identifier: GPL-2.0
/*
 * Unknown header fields between AF_BUS clients: the bus advertises
 * HeaderFiltering, so a recipient must never see a header field that
 * its libdbus does not know, whether the message came through the
 * daemon or straight from a peer through the kernel.
 *
 * afbus-header-field recv
 *	Prints "ready UNIQUE-NAME", waits (30 s at most) for one call of
 *	com.example.Header.Check, prints "unknown-field=present" or
 *	"unknown-field=absent" (whether the message as received still
 *	holds the sender's unknown field) and answers it.
 *
 * afbus-header-field send DEST [first]
 *	Calls com.example.Header.Check on DEST with an extra header field
 *	of code 121 (unknown to D-Bus), whose string value is a marker,
 *	after the known fields (the sender's libdbus appends SENDER after
 *	it), or with "first" before them; prints "answered" or the error.
 *
 * Exit status 0 on success.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dbus/dbus.h>

#define MARKER "afbus-unknown-header-field-marker"
#define UNKNOWN_FIELD 121

static DBusConnection *connect_bus(void)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);

	if (!c) {
		fprintf(stderr, "afbus-header-field: %s\n", error.message);
		exit(1);
	}
	return c;
}

static uint32_t get_u32(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put_u32(char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* A little-endian marshalled call to @dest with the unknown field
 * appended to its header fields (or, @first, put before them),
 * demarshalled again. */
static DBusMessage *weird_call(const char *dest, int first)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *weird;
	char *blob, *out;
	int len, out_len;
	uint32_t fields, body, start, end, mlen = sizeof(MARKER) - 1;
	uint32_t pos, new_fields, field_len;

	m = dbus_message_new_method_call(dest, "/", "com.example.Header",
					 "Check");
	if (!m)
		return NULL;
	/* a serial the connection will not use for a while: the sender's
	 * libdbus keeps the one a message has */
	dbus_message_set_serial(m, 0x7f000001);
	if (!dbus_message_marshal(m, &blob, &len))
		return NULL;
	dbus_message_unref(m);
	if (blob[0] != 'l')
		return NULL;	/* marshalled in our (x86) byte order */

	body = get_u32(blob + 4);
	fields = get_u32(blob + 12);
	/* code, signature "s", then the string (4-aligned already) */
	field_len = 4 + 4 + mlen + 1;
	if (first) {
		/* the known fields after it, at an 8-aligned offset as before */
		start = 16;
		new_fields = ((field_len + 7) & ~7u) + fields;
	} else {
		start = (16 + fields + 7) & ~7u;	/* 8-aligned */
		new_fields = start + field_len - 16;
	}
	end = (16 + new_fields + 7) & ~7u;	/* the body */
	out_len = end + body;
	out = calloc(1, out_len);
	if (!out)
		return NULL;
	if (first) {
		memcpy(out, blob, 16);
		memcpy(out + 16 + ((field_len + 7) & ~7u), blob + 16, fields);
	} else {
		memcpy(out, blob, 16 + fields);
	}
	put_u32(out + 12, new_fields);
	pos = start;
	out[pos++] = UNKNOWN_FIELD;
	out[pos++] = 1;
	out[pos++] = 's';
	out[pos++] = '\0';
	put_u32(out + pos, mlen);
	pos += 4;
	memcpy(out + pos, MARKER, mlen + 1);
	memcpy(out + end, blob + len - body, body);
	dbus_free(blob);

	weird = dbus_message_demarshal(out, out_len, &error);
	free(out);
	if (!weird)
		fprintf(stderr, "afbus-header-field: %s\n", error.message);
	return weird;
}

static int send_main(const char *dest, int first)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	DBusMessage *m = weird_call(dest, first), *r;
	char *blob;
	int len;

	if (!m)
		return 1;
	/* the field is there as we send it */
	if (!dbus_message_marshal(m, &blob, &len) ||
	    !memmem(blob, len, MARKER, sizeof(MARKER) - 1)) {
		printf("the unknown field did not survive demarshalling\n");
		return 1;
	}
	dbus_free(blob);
	r = dbus_connection_send_with_reply_and_block(c, m, 10000, &error);
	dbus_message_unref(m);
	if (!r) {
		printf("error %s: %s\n", error.name, error.message);
		return 1;
	}
	dbus_message_unref(r);
	printf("answered\n");
	return 0;
}

static int recv_main(void)
{
	DBusConnection *c = connect_bus();
	DBusMessage *m = NULL, *r;
	char *blob;
	int i, len;

	printf("ready %s\n", dbus_bus_get_unique_name(c));
	fflush(stdout);
	for (i = 0; i < 300 && !m; i++) {
		if (!dbus_connection_read_write(c, 100))
			return 1;
		while (!m && (m = dbus_connection_pop_message(c))) {
			if (!dbus_message_is_method_call(m, "com.example.Header",
							 "Check")) {
				dbus_message_unref(m);
				m = NULL;
			}
		}
	}
	if (!m) {
		printf("no call\n");
		return 1;
	}
	if (!dbus_message_marshal(m, &blob, &len))
		return 1;
	printf("unknown-field=%s\n",
	       memmem(blob, len, MARKER, sizeof(MARKER) - 1) ? "present" : "absent");
	dbus_free(blob);
	r = dbus_message_new_method_return(m);
	if (!r || !dbus_connection_send(c, r, NULL))
		return 1;
	dbus_connection_flush(c);
	dbus_message_unref(r);
	dbus_message_unref(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "recv") == 0)
		return recv_main();
	if (argc == 3 && strcmp(argv[1], "send") == 0)
		return send_main(argv[2], 0);
	if (argc == 4 && strcmp(argv[1], "send") == 0 &&
	    strcmp(argv[3], "first") == 0)
		return send_main(argv[2], 1);
	fprintf(stderr, "usage: afbus-header-field recv | send DEST [first]\n");
	return 2;
}
