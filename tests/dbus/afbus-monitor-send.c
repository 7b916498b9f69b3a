// SPDX-License-Identifier: GPL-2.0
/*
 * A monitor that sends, for the tests of what a monitor may do: nothing
 * (dbus-daemon closes a monitor that sends it a message).
 *
 * Usage: afbus-monitor-send [--wait] [--first PEER] call DEST |
 *                           addmatch RULE | idle
 *
 * Connects to the session bus (with --first, calls com.example.Echo.Echo
 * on PEER first, so that its library watches PEER, and prints "first
 * reply" or "first error NAME"), becomes a monitor (BecomeMonitor with no
 * rules), takes in its messages up to the NameLost of its unique name
 * and the monitor's copy of the NameOwnerChanged that follows it (as
 * upstream's /monitor/become does: none is left unread), with --wait
 * prints "ready" and waits for a line on its standard input, then
 * either calls com.example.Echo.Echo ("from-monitor") on DEST and waits
 * 10 s at most for the answer, or calls AddMatch (RULE) on the bus
 * driver, or (idle) sends nothing, and prints
 *   "monitor"                         (it became one)
 *   "reply" or "error NAME" or "idle" (what the call got)
 *   "disconnected=0|1"                (whether the bus closed it within
 *                                      10 s of the call; idle: within
 *                                      3 s)
 * Exit status 0 if it became a monitor.
 */
#include <stdio.h>
#include <string.h>
#include <dbus/dbus.h>

/* Calls com.example.Echo.Echo ("from-monitor") on DEST; its reply, or
 * NULL with ERR set. */
static DBusMessage *echo_call(DBusConnection *c, const char *dest, DBusError *err)
{
	const char *text = "from-monitor";
	DBusMessage *m, *reply;

	m = dbus_message_new_method_call(dest, "/", "com.example.Echo", "Echo");
	if (m == NULL ||
	    !dbus_message_append_args(m, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID)) {
		if (m != NULL)
			dbus_message_unref(m);
		dbus_set_error(err, DBUS_ERROR_NO_MEMORY, "out of memory");
		return NULL;
	}
	reply = dbus_connection_send_with_reply_and_block(c, m, 10000, err);
	dbus_message_unref(m);
	return reply;
}

int main(int argc, char **argv)
{
	DBusError err = DBUS_ERROR_INIT;
	DBusConnection *c;
	DBusMessage *m, *reply;
	DBusMessageIter iter, array;
	dbus_uint32_t zero = 0;
	const char *unique;
	const char *first = NULL;
	int i, lost = 0, wait_line = 0, idle;

	if (argc > 1 && strcmp(argv[1], "--wait") == 0) {
		wait_line = 1;
		argv++;
		argc--;
	}
	if (argc > 2 && strcmp(argv[1], "--first") == 0) {
		first = argv[2];
		argv += 2;
		argc -= 2;
	}
	idle = argc == 2 && strcmp(argv[1], "idle") == 0;
	if (!idle &&
	    (argc != 3 || (strcmp(argv[1], "call") && strcmp(argv[1], "addmatch")))) {
		fprintf(stderr, "usage: afbus-monitor-send [--wait] [--first PEER] call DEST |\n"
			"                          addmatch RULE | idle\n");
		return 2;
	}

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &err);
	if (c == NULL) {
		fprintf(stderr, "connect: %s\n", err.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);

	if (first != NULL) {
		reply = echo_call(c, first, &err);
		if (reply != NULL) {
			printf("first reply\n");
			dbus_message_unref(reply);
		} else {
			printf("first error %s\n", err.name);
			dbus_error_free(&err);
		}
	}

	m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
					 "org.freedesktop.DBus.Monitoring",
					 "BecomeMonitor");
	dbus_message_iter_init_append(m, &iter);
	if (!dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "s", &array) ||
	    !dbus_message_iter_close_container(&iter, &array) ||
	    !dbus_message_iter_append_basic(&iter, DBUS_TYPE_UINT32, &zero))
		return 1;
	reply = dbus_connection_send_with_reply_and_block(c, m, 10000, &err);
	dbus_message_unref(m);
	if (reply == NULL) {
		fprintf(stderr, "BecomeMonitor: %s\n", err.message);
		return 1;
	}
	dbus_message_unref(reply);
	printf("monitor\n");
	fflush(stdout);

	/* As upstream's /monitor/become: take in everything up to the
	 * NameLost of its unique name and, since a monitor with no rules
	 * sees everything, the copy of the NameOwnerChanged that announces
	 * the loss (the daemon sends them in this order, but as separate
	 * datagrams, which one read need not take in together), so that
	 * nothing waits unread. */
	unique = dbus_bus_get_unique_name(c);
	for (i = 0; i < 100 && lost < 2; i++) {
		dbus_connection_read_write(c, 100);
		while ((m = dbus_connection_pop_message(c)) != NULL) {
			const char *name, *old_owner, *new_owner;

			if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS, "NameLost") &&
			    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name,
						  DBUS_TYPE_INVALID) &&
			    strcmp(name, unique) == 0)
				lost++;
			else if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS,
							"NameOwnerChanged") &&
				 dbus_message_get_args(m, NULL,
						       DBUS_TYPE_STRING, &name,
						       DBUS_TYPE_STRING, &old_owner,
						       DBUS_TYPE_STRING, &new_owner,
						       DBUS_TYPE_INVALID) &&
				 strcmp(name, unique) == 0 && *new_owner == '\0')
				lost++;
			dbus_message_unref(m);
		}
	}
	if (lost < 2)
		fprintf(stderr, "afbus-monitor-send: did not see its unique name lost\n");
	if (wait_line) {
		char line[16];

		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}

	if (idle) {
		reply = NULL;
	} else if (strcmp(argv[1], "call") == 0) {
		reply = echo_call(c, argv[2], &err);
	} else {
		dbus_bus_add_match(c, argv[2], &err);
		reply = NULL;
	}
	/* Whatever was read but not taken in when the call ended: libdbus
	 * answers a call with Disconnected rather than NoReply if messages
	 * wait unread when the bus closes the connection.  Said on standard
	 * error, so that a failing check shows why. */
	while ((m = dbus_connection_pop_message(c)) != NULL) {
		if (!dbus_message_has_interface(m, DBUS_INTERFACE_LOCAL))
			fprintf(stderr, "unread: type=%d %s.%s from %s serial=%u\n",
				dbus_message_get_type(m),
				dbus_message_get_interface(m) ?: "-",
				dbus_message_get_member(m) ?: "-",
				dbus_message_get_sender(m) ?: "-",
				dbus_message_get_serial(m));
		dbus_message_unref(m);
	}
	if (idle) {
		printf("idle\n");
	} else if (reply != NULL) {
		printf("reply\n");
		dbus_message_unref(reply);
	} else {
		printf("error %s\n", err.name ? err.name : "(none)");
		dbus_error_free(&err);
	}

	for (i = 0; i < (idle ? 30 : 100) && dbus_connection_get_is_connected(c); i++)
		dbus_connection_read_write(c, 100);
	printf("disconnected=%d\n", !dbus_connection_get_is_connected(c));
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}
