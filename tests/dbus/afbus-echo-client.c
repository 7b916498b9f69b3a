// SPDX-License-Identifier: GPL-2.0
/*
 * A small D-Bus client on libdbus for the AF_BUS tests: it calls
 * com.example.Echo.Echo on DEST COUNT times, each with a different
 * string, and checks every reply.  It counts the
 * org.freedesktop.DBus.AF_BUS.Forwarded signals it receives for DEST,
 * and the callers whose replies named another unique owner (Whoami).
 *
 * Usage: afbus-echo-client DEST COUNT [DELAY-MS [SIZE]]
 * Prints "calls=N ok=N errors=N forwarded=N owners=A,B,..." and exits 0
 * if every call got its own string back.  With DELAY-MS >= 0 it sleeps
 * between calls, asks who answered (Whoami) and tolerates (counts)
 * errors, for handover tests, and reads what came in (a Forwarded
 * that its reply beat) before the next call; DELAY-MS -1 does none of
 * that.  SIZE makes every string SIZE bytes long.
 *
 * Usage: afbus-echo-client --wait DEST COUNT
 * As above (DELAY-MS -1), but once connected it prints "connected" and
 * waits for a line on its standard input before the first call.
 *
 * Usage: afbus-echo-client --progress DEST COUNT DELAY-MS
 * As the first form, and prints "unique NAME" (its own unique name)
 * once connected and "answered N" once the Nth call is done.
 *
 * Usage: afbus-echo-client --fd DEST
 * Passes the read end of a pipe holding a known text to ReadFd and
 * checks that the service read that text from it.
 *
 * The library passes Forwarded on to the application only with
 * DBUS_AFBUS_SHOW_INTERNAL=1, which this tool sets unless the
 * environment says otherwise.
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

/* Reads and dispatches (to filter()) what has come in. */
static void read_pending(DBusConnection *c)
{
	while (dbus_connection_read_write_dispatch(c, 0) &&
	       dbus_connection_get_dispatch_status(c) == DBUS_DISPATCH_DATA_REMAINS)
		;
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

static DBusConnection *connect_bus(void)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);

	if (!c) {
		fprintf(stderr, "afbus-echo-client: %s\n", error.message);
		exit(1);
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	return c;
}

static int pass_fd(const char *name)
{
	static const char text[] = "through AF_BUS";
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	DBusMessage *m, *r;
	const char *s;
	int p[2];

	dest = name;
	c = connect_bus();
	if (!dbus_connection_can_send_type(c, DBUS_TYPE_UNIX_FD)) {
		printf("fd passing not negotiated\n");
		return 1;
	}
	if (pipe(p) < 0 || write(p[1], text, sizeof(text) - 1) != sizeof(text) - 1)
		return 1;
	close(p[1]);
	m = dbus_message_new_method_call(dest, "/", "com.example.Echo", "ReadFd");
	dbus_message_append_args(m, DBUS_TYPE_UNIX_FD, &p[0], DBUS_TYPE_INVALID);
	close(p[0]);
	r = dbus_connection_send_with_reply_and_block(c, m, 10000, &error);
	dbus_message_unref(m);
	if (!r) {
		printf("error %s: %s\n", error.name, error.message);
		return 1;
	}
	if (!dbus_message_get_args(r, &error, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID)) {
		printf("bad reply: %s\n", error.message);
		return 1;
	}
	printf("read \"%s\"\n", s);
	return strcmp(s, text) != 0;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	int i, count, delay, ok = 0, errors = 0, wait_line = 0, progress = 0;
	char owners[1024] = "", buf[64];

	size_t size;
	char *big = NULL;

	/* The library passes its Forwarded signals on to us only with
	 * this; DBUS_AFBUS_SHOW_INTERNAL=0 checks that it does not by
	 * default. */
	setenv("DBUS_AFBUS_SHOW_INTERNAL", "1", 0);
	if (argc < 3) {
		fprintf(stderr, "usage: afbus-echo-client DEST COUNT [DELAY-MS [SIZE]]\n"
			"       afbus-echo-client --wait DEST COUNT\n"
			"       afbus-echo-client --progress DEST COUNT DELAY-MS\n"
			"       afbus-echo-client --fd DEST\n");
		return 2;
	}
	if (strcmp(argv[1], "--fd") == 0)
		return pass_fd(argv[2]);
	if (strcmp(argv[1], "--wait") == 0) {
		if (argc != 4)
			return 2;
		wait_line = 1;
		argv++;
		argc--;
	} else if (strcmp(argv[1], "--progress") == 0) {
		if (argc != 5)
			return 2;
		progress = 1;
		setvbuf(stdout, NULL, _IOLBF, 0);
		argv++;
		argc--;
	}
	dest = argv[1];
	count = atoi(argv[2]);
	delay = argc > 3 ? atoi(argv[3]) : -1;
	size = argc > 4 ? strtoul(argv[4], NULL, 0) : 0;
	if (size > 0) {
		big = malloc(size + 1);
		if (!big)
			return 1;
	}

	c = connect_bus();
	dbus_connection_add_filter(c, filter, NULL, NULL);
	if (progress)
		printf("unique %s\n", dbus_bus_get_unique_name(c));
	if (wait_line) {
		char line[16];

		printf("connected\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}

	for (i = 0; i < count; i++) {
		char *reply, *who;

		snprintf(buf, sizeof(buf), "message %d", i);
		if (big) {
			memset(big, 'a' + i % 26, size);
			memcpy(big, buf, strlen(buf));
			big[size] = '\0';
		}
		reply = call(c, "Echo", big ? big : buf, &error);
		if (reply && strcmp(reply, big ? big : buf) == 0) {
			ok++;
		} else {
			errors++;
			fprintf(stderr, "call %d: %s%s%.100s\n", i,
				reply ? "" : error.name, reply ? "" : ": ",
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
			/* A Forwarded that came after the reply: the next
			 * call can go directly. */
			read_pending(c);
			if (progress)
				printf("answered %d\n", i + 1);
		}
	}
	/* Signals that arrived after the last reply. */
	read_pending(c);
	dbus_connection_read_write(c, 100);
	while (dbus_connection_dispatch(c) == DBUS_DISPATCH_DATA_REMAINS)
		;

	printf("calls=%d ok=%d errors=%d forwarded=%d owners=%s\n",
	       count, ok, errors, forwarded, owners);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return (delay < 0 && ok != count) ? 1 : 0;
}
