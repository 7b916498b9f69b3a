// SPDX-License-Identifier: GPL-2.0
/*
 * A client that uses the daemon's peer watches itself, as a hostile one
 * would, for the tests of org.freedesktop.DBus.AF_BUS.WatchPeer and
 * UnwatchPeer (bus-afbus-peers.c in the daemon).
 *
 * Usage: afbus-watch-peer N RULES
 *
 * On one connection, each call awaiting its reply (10 s at most):
 *   WatchPeer on com.example.W.n0 ... n<N-1>, printing "watch I: ERROR"
 *	for each that fails;
 *   AddMatch of RULES rules (interface='com.example.R<i>'), printing
 *	"match I: ERROR" for each that fails;
 *   then one line each, "WHAT: ok" or "WHAT: ERROR":
 *	"bad-name" WatchPeer ("not a name"), "daemon" WatchPeer
 *	("org.freedesktop.DBus"), "no-arg" WatchPeer without an argument,
 *	"again" WatchPeer (n0) a second time, "unwatch-unknown"
 *	UnwatchPeer (com.example.NotWatched), "unwatch" UnwatchPeer (n0),
 *	"rewatch" WatchPeer (n<N>) after it;
 *   "watched=W matched=M" (the WatchPeer and AddMatch calls of the first
 *	two steps that succeeded), then "ready";
 * and then waits for a line on standard input before it exits, so that
 * its watches stay while other clients are tested.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dbus/dbus.h>

#define AFBUS_IFACE "org.freedesktop.DBus.AF_BUS"

static DBusConnection *conn;

/* Calls METHOD (ARG, or no argument if NULL) on the driver; prints
 * "LABEL: ok" or "LABEL: ERROR-NAME" unless quiet and ok; returns 1 if
 * it succeeded. */
static int call(const char *label, const char *iface, const char *method,
		const char *arg, int quiet)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;

	m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
					 iface, method);
	if (!m || (arg && !dbus_message_append_args(m, DBUS_TYPE_STRING, &arg,
						    DBUS_TYPE_INVALID))) {
		fprintf(stderr, "afbus-watch-peer: out of memory\n");
		exit(1);
	}
	r = dbus_connection_send_with_reply_and_block(conn, m, 10000, &error);
	dbus_message_unref(m);
	if (r) {
		dbus_message_unref(r);
		if (!quiet)
			printf("%s: ok\n", label);
		return 1;
	}
	printf("%s: %s\n", label, error.name);
	dbus_error_free(&error);
	return 0;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	char label[64], arg[128];
	int n, rules, i, watched = 0, matched = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: afbus-watch-peer N RULES\n");
		return 2;
	}
	n = atoi(argv[1]);
	rules = atoi(argv[2]);

	conn = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!conn) {
		fprintf(stderr, "afbus-watch-peer: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(conn, FALSE);

	for (i = 0; i < n; i++) {
		snprintf(label, sizeof(label), "watch %d", i);
		snprintf(arg, sizeof(arg), "com.example.W.n%d", i);
		watched += call(label, AFBUS_IFACE, "WatchPeer", arg, 1);
	}
	for (i = 0; i < rules; i++) {
		snprintf(label, sizeof(label), "match %d", i);
		snprintf(arg, sizeof(arg),
			 "type='signal',interface='com.example.R%d'", i);
		matched += call(label, DBUS_INTERFACE_DBUS, "AddMatch", arg, 1);
	}

	call("bad-name", AFBUS_IFACE, "WatchPeer", "not a name", 0);
	call("daemon", AFBUS_IFACE, "WatchPeer", DBUS_SERVICE_DBUS, 0);
	call("no-arg", AFBUS_IFACE, "WatchPeer", NULL, 0);
	call("again", AFBUS_IFACE, "WatchPeer", "com.example.W.n0", 0);
	call("unwatch-unknown", AFBUS_IFACE, "UnwatchPeer",
	     "com.example.NotWatched", 0);
	call("unwatch", AFBUS_IFACE, "UnwatchPeer", "com.example.W.n0", 0);
	snprintf(arg, sizeof(arg), "com.example.W.n%d", n);
	call("rewatch", AFBUS_IFACE, "WatchPeer", arg, 0);

	printf("watched=%d matched=%d\nready\n", watched, matched);
	fflush(stdout);

	if (!fgets(arg, sizeof(arg), stdin))
		arg[0] = '\0';
	dbus_connection_close(conn);
	dbus_connection_unref(conn);
	return 0;
}
