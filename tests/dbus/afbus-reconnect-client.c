// SPDX-License-Identifier: GPL-2.0
/*
 * A D-Bus client on libdbus that outlives its bus daemon, for the AF_BUS
 * fault tests: it connects to ADDRESS, calls com.example.Echo.Echo on
 * DEST, leaves a call to com.example.Echo.Hang pending, and waits for
 * the connection to end (the daemon is killed).  It then reconnects to
 * ADDRESS, trying every 100 ms up to TRIES times (a new daemon is
 * started on the same path), waits for DEST to have an owner again and
 * calls Echo once more.
 *
 * Usage: afbus-reconnect-client ADDRESS DEST TRIES
 * Prints, one per line:
 *   "connected UNIQUE"              after Hello
 *   "echo OK" / "echo FAILED ..."   the first call
 *   "waiting"                       the Hang call is pending
 *   "disconnected"                  libdbus said
 *                                   org.freedesktop.DBus.Local.Disconnected
 *   "pending ERROR-NAME"            how the Hang call ended
 *   "reconnected UNIQUE TRIES"      after N attempts
 *   "echo-again OK" / "echo-again FAILED ..."
 * and exits 0 if each step worked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dbus/dbus.h>

#define IFACE "com.example.Echo"

static int disconnected;

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data)
{
	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, DBUS_INTERFACE_LOCAL, "Disconnected"))
		disconnected = 1;
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static DBusConnection *connect_to(const char *address, DBusError *error)
{
	DBusConnection *c = dbus_connection_open_private(address, error);

	if (!c)
		return NULL;
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	if (!dbus_bus_register(c, error)) {
		dbus_connection_close(c);
		dbus_connection_unref(c);
		return NULL;
	}
	return c;
}

/* Echo "text" on dest; 0 if the reply holds it. */
static int echo(DBusConnection *c, const char *dest, const char *label)
{
	DBusError error = DBUS_ERROR_INIT;
	const char *text = "hello again", *got;
	DBusMessage *m, *r;
	int ret = 1;

	m = dbus_message_new_method_call(dest, "/", IFACE, "Echo");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID))
		return 1;
	r = dbus_connection_send_with_reply_and_block(c, m, 20000, &error);
	dbus_message_unref(m);
	if (r && dbus_message_get_args(r, &error, DBUS_TYPE_STRING, &got, DBUS_TYPE_INVALID) &&
	    strcmp(got, text) == 0) {
		printf("%s OK\n", label);
		ret = 0;
	} else {
		printf("%s FAILED %s\n", label, dbus_error_is_set(&error) ? error.name : "(wrong reply)");
		dbus_error_free(&error);
	}
	if (r)
		dbus_message_unref(r);
	fflush(stdout);
	return ret;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusPendingCall *pending = NULL;
	const char *address, *dest;
	DBusConnection *c;
	DBusMessage *m, *r;
	int tries, n, failed = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: afbus-reconnect-client ADDRESS DEST TRIES\n");
		return 2;
	}
	address = argv[1];
	dest = argv[2];
	tries = atoi(argv[3]);

	c = connect_to(address, &error);
	if (!c) {
		printf("connect FAILED %s: %s\n", error.name, error.message);
		return 1;
	}
	printf("connected %s\n", dbus_bus_get_unique_name(c));
	failed |= echo(c, dest, "echo");

	if (!dbus_connection_add_filter(c, filter, NULL, NULL))
		return 1;
	m = dbus_message_new_method_call(dest, "/", IFACE, "Hang");
	if (!m || !dbus_connection_send_with_reply(c, m, &pending, DBUS_TIMEOUT_INFINITE) ||
	    !pending)
		return 1;
	dbus_message_unref(m);
	dbus_connection_flush(c);
	printf("waiting\n");
	fflush(stdout);

	while (!disconnected && dbus_connection_read_write_dispatch(c, -1))
		;
	/* read_write_dispatch returns FALSE once Disconnected was dispatched */
	while (!disconnected && dbus_connection_dispatch(c) == DBUS_DISPATCH_DATA_REMAINS)
		;
	printf("%s\n", disconnected ? "disconnected" : "not-disconnected");
	failed |= !disconnected;
	dbus_pending_call_block(pending);
	r = dbus_pending_call_steal_reply(pending);
	printf("pending %s\n", r && dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR ?
	       dbus_message_get_error_name(r) : "(no error)");
	if (r)
		dbus_message_unref(r);
	dbus_pending_call_unref(pending);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	fflush(stdout);

	for (n = 1, c = NULL; n <= tries; n++) {
		dbus_error_free(&error);
		c = connect_to(address, &error);
		if (c)
			break;
		usleep(100000);
	}
	if (!c) {
		printf("reconnect FAILED after %d tries: %s\n", tries, error.message);
		return 1;
	}
	printf("reconnected %s %d\n", dbus_bus_get_unique_name(c), n);
	fflush(stdout);
	for (n = 0; n < tries && !dbus_bus_name_has_owner(c, dest, NULL); n++)
		usleep(100000);
	failed |= echo(c, dest, "echo-again");
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return failed;
}
