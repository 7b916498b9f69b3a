// SPDX-License-Identifier: GPL-2.0
/*
 * The service side of the round-trip benchmark: answers
 * org.afbus.Bench.Ping (ay) with the same bytes, on any object path.
 *
 *   bench-echo-service --bus ADDRESS NAME
 *       connects to the bus at ADDRESS and owns NAME;
 *   bench-echo-service --listen ADDRESS
 *       listens on ADDRESS (e.g. unix:path=/tmp/p2p) for direct
 *       peer-to-peer clients, one after the other.
 *
 * It prints "ready" once it serves, and exits on org.afbus.Bench.Quit or
 * when the bus goes away.
 */
#include "bench-conn.h"

static const char *tool = "bench-echo-service";

/* Answer what c has queued; FALSE on Quit. */
static dbus_bool_t serve_one(DBusConnection *c, DBusMessage *m)
{
	DBusError error = DBUS_ERROR_INIT;
	const unsigned char *bytes;
	DBusMessage *r;
	int n;

	if (dbus_message_is_method_call(m, BENCH_IFACE, "Quit")) {
		r = dbus_message_new_method_return(m);
		if (r) {
			dbus_connection_send(c, r, NULL);
			dbus_message_unref(r);
		}
		dbus_connection_flush(c);
		return FALSE;
	}
	if (!dbus_message_is_method_call(m, BENCH_IFACE, "Ping"))
		return TRUE;
	if (!dbus_message_get_args(m, &error, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE,
				   &bytes, &n, DBUS_TYPE_INVALID)) {
		r = dbus_message_new_error(m, error.name, error.message);
		dbus_error_free(&error);
	} else {
		r = dbus_message_new_method_return(m);
		if (r && !dbus_message_append_args(r, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE,
						   &bytes, n, DBUS_TYPE_INVALID))
			bench_die(tool, "out of memory");
	}
	if (!r || !dbus_connection_send(c, r, NULL))
		bench_die(tool, "out of memory");
	dbus_message_unref(r);
	return TRUE;
}

/* Serve c until it disconnects (TRUE) or a Quit (FALSE). */
static dbus_bool_t serve(DBusConnection *c)
{
	while (dbus_connection_read_write_dispatch(c, -1)) {
		DBusMessage *m;

		while ((m = dbus_connection_pop_message(c)) != NULL) {
			dbus_bool_t go_on = serve_one(c, m);

			dbus_message_unref(m);
			if (!go_on)
				return FALSE;
		}
	}
	return TRUE;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;

	if (argc == 4 && strcmp(argv[1], "--bus") == 0) {
		c = bench_bus_connect(tool, argv[2]);
		if (dbus_bus_request_name(c, argv[3], DBUS_NAME_FLAG_DO_NOT_QUEUE,
					  &error) != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER)
			bench_die(tool, "cannot own %s: %s", argv[3],
				  dbus_error_is_set(&error) ? error.message : "taken");
		printf("ready\n");
		fflush(stdout);
		serve(c);
		dbus_connection_close(c);
		dbus_connection_unref(c);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--listen") == 0) {
		struct bench_server s;

		bench_server_listen(tool, &s, argv[2], 1);
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			dbus_bool_t go_on;

			s.n_conns = 0;
			bench_server_accept(tool, &s, 1, -1);
			go_on = serve(s.conns[0]);
			dbus_connection_close(s.conns[0]);
			dbus_connection_unref(s.conns[0]);
			if (!go_on)
				break;
		}
		dbus_server_disconnect(s.server);
		dbus_server_unref(s.server);
		return 0;
	}
	fprintf(stderr, "usage: %s --bus ADDRESS NAME | --listen ADDRESS\n", tool);
	return 2;
}
