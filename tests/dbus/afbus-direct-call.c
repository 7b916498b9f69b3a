// SPDX-License-Identifier: GPL-2.0
/*
 * Calls DEST (a unique name, so the call goes straight through the
 * kernel) and reports how the call ended, for the AF_BUS tests of
 * NoReply when the callee dies mid-call.
 *
 * Usage: afbus-direct-call DEST METHOD TIMEOUT-MS [--match] [--wait] [--take-in]
 * Calls com.example.Echo.METHOD on DEST with dbus_connection_send_with_
 * reply_and_block() and prints
 *   "reply" or "error NAME: MESSAGE"
 *   "elapsed-ms N"
 *   "noc N peergone N stray N"
 * the last line counting the NameOwnerChanged signals about DEST, the
 * org.freedesktop.DBus.AF_BUS.PeerGone signals, and the method returns
 * and errors (a second answer to the call, say) that the application
 * received in the second after the call.  With --match the application
 * first adds its own match rule for NameOwnerChanged with arg0=DEST.
 * With --wait it prints "connected UNIQUE-NAME" once it is on the bus
 * (and has its rule), and makes the call when it reads a line on
 * standard input; with --take-in too, it first takes in what came
 * meanwhile (reading for 300 ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dbus/dbus.h>

static const char *dest;
static int noc, peergone, stray;

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data)
{
	const char *name;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS, "NameOwnerChanged") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name,
				  DBUS_TYPE_INVALID) && strcmp(name, dest) == 0)
		noc++;
	if (dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "PeerGone"))
		peergone++;
	if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_METHOD_RETURN ||
	    dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_ERROR)
		stray++;
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	DBusMessage *m, *r;
	long start, end;
	char rule[512];
	int i, match = 0, wait = 0, take_in = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: afbus-direct-call DEST METHOD TIMEOUT-MS [--match] [--wait] [--take-in]\n");
		return 2;
	}
	dest = argv[1];
	for (i = 4; i < argc; i++) {
		match |= strcmp(argv[i], "--match") == 0;
		wait |= strcmp(argv[i], "--wait") == 0;
		take_in |= strcmp(argv[i], "--take-in") == 0;
	}

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-direct-call: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	dbus_connection_add_filter(c, filter, NULL, NULL);

	if (match) {
		snprintf(rule, sizeof(rule),
			 "type='signal',interface='org.freedesktop.DBus',"
			 "member='NameOwnerChanged',arg0='%s'", dest);
		dbus_bus_add_match(c, rule, &error);
		if (dbus_error_is_set(&error)) {
			fprintf(stderr, "AddMatch: %s\n", error.message);
			return 1;
		}
	}

	if (wait) {
		printf("connected %s\n", dbus_bus_get_unique_name(c));
		fflush(stdout);
		if (!fgets(rule, sizeof(rule), stdin))
			return 1;
	}
	for (i = 0; take_in && i < 3; i++)
		dbus_connection_read_write(c, 100);

	m = dbus_message_new_method_call(dest, "/", "com.example.Echo", argv[2]);
	start = now_ms();
	r = dbus_connection_send_with_reply_and_block(c, m, atoi(argv[3]), &error);
	end = now_ms();
	dbus_message_unref(m);
	if (r) {
		printf("reply\n");
		dbus_message_unref(r);
	} else {
		printf("error %s: %s\n", error.name, error.message);
		dbus_error_free(&error);
	}
	printf("elapsed-ms %ld\n", end - start);
	fflush(stdout);

	/* The signals that follow the disconnection. */
	start = now_ms();
	while (now_ms() - start < 1000 && dbus_connection_read_write_dispatch(c, 100))
		;
	printf("noc %d peergone %d stray %d\n", noc, peergone, stray);

	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}
