// SPDX-License-Identifier: GPL-2.0
/*
 * A small D-Bus client on libdbus for the AF_BUS tests: it calls
 * com.example.Echo.Echo on DEST COUNT times, each with a different
 * string, and checks every reply.  It counts the
 * org.freedesktop.DBus.AF_BUS.Forwarded signals it receives for DEST,
 * and the callers whose replies named another unique owner (Whoami).
 *
 * Usage: afbus-echo-client DEST COUNT [DELAY-MS]
 * Prints "calls=N ok=N errors=N forwarded=N owners=A,B,..." and exits 0
 * if every call got its own string back.  With DELAY-MS it sleeps
 * between calls and tolerates (counts) errors, for handover tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dbus/dbus.h>

static const char *dest;
static int forwarded;

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data)
{
	const char *name;
	dbus_uint64_t addr;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "Forwarded") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name,
				  DBUS_TYPE_UINT64, &addr, DBUS_TYPE_INVALID) &&
	    strcmp(name, dest) == 0)
		forwarded++;
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static char *call(DBusConnection *c, const char *method, const char *arg,
		  DBusError *error)
{
	DBusMessage *m, *r;
	const char *s;
	char *ret = NULL;

	m = dbus_message_new_method_call(dest, "/", "com.example.Echo", method);
	if (arg)
		dbus_message_append_args(m, DBUS_TYPE_STRING, &arg, DBUS_TYPE_INVALID);
	r = dbus_connection_send_with_reply_and_block(c, m, 10000, error);
	dbus_message_unref(m);
	if (!r)
		return NULL;
	if (dbus_message_get_args(r, error, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID))
		ret = strdup(s);
	dbus_message_unref(r);
	return ret;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	int i, count, delay, ok = 0, errors = 0;
	char owners[1024] = "", buf[64];

	if (argc < 3) {
		fprintf(stderr, "usage: afbus-echo-client DEST COUNT [DELAY-MS]\n");
		return 2;
	}
	dest = argv[1];
	count = atoi(argv[2]);
	delay = argc > 3 ? atoi(argv[3]) : -1;

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-echo-client: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	dbus_connection_add_filter(c, filter, NULL, NULL);

	for (i = 0; i < count; i++) {
		char *reply, *who;

		snprintf(buf, sizeof(buf), "message %d", i);
		reply = call(c, "Echo", buf, &error);
		if (reply && strcmp(reply, buf) == 0) {
			ok++;
		} else {
			errors++;
			fprintf(stderr, "call %d: %s\n", i,
				reply ? reply : error.message);
			dbus_error_free(&error);
		}
		free(reply);
		if (delay >= 0) {
			who = call(c, "Whoami", NULL, &error);
			if (who && !strstr(owners, who) &&
			    strlen(owners) + strlen(who) + 2 < sizeof(owners)) {
				if (owners[0])
					strcat(owners, ",");
				strcat(owners, who);
			}
			dbus_error_free(&error);
			free(who);
			usleep(delay * 1000);
		}
	}
	/* Signals that arrived after the last reply. */
	while (dbus_connection_read_write_dispatch(c, 0) &&
	       dbus_connection_get_dispatch_status(c) == DBUS_DISPATCH_DATA_REMAINS)
		;
	dbus_connection_read_write(c, 100);
	while (dbus_connection_dispatch(c) == DBUS_DISPATCH_DATA_REMAINS)
		;

	printf("calls=%d ok=%d errors=%d forwarded=%d owners=%s\n",
	       count, ok, errors, forwarded, owners);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return (delay < 0 && ok != count) ? 1 : 0;
}
