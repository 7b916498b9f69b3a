/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening libdbus connections for the benchmark tools: to a bus
 * (any address libdbus knows: afbus:, unix:, ...) and, for the
 * peer-to-peer floor, accepting connections on a DBusServer without a
 * main loop.
 */
#ifndef BENCH_CONN_H
#define BENCH_CONN_H

#include <poll.h>
#include <dbus/dbus.h>

#include "bench-stats.h"

#define BENCH_IFACE "org.afbus.Bench"
#define BENCH_PATH "/org/afbus/Bench"

/* A private connection to the bus at address, registered (Hello). */
static inline DBusConnection *bench_bus_connect(const char *tool,
						const char *address)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_connection_open_private(address, &error);

	if (!c || !dbus_bus_register(c, &error))
		bench_die(tool, "connecting to %s: %s", address,
			  dbus_error_is_set(&error) ? error.message : "failed");
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	return c;
}

/* A private peer-to-peer connection to a DBusServer at address. */
static inline DBusConnection *bench_peer_connect(const char *tool,
						 const char *address)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_connection_open_private(address, &error);

	if (!c)
		bench_die(tool, "connecting to %s: %s", address, error.message);
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	return c;
}

/* Accepting peer-to-peer connections: the server's watches, polled. */
struct bench_server {
	DBusServer *server;
	DBusWatch *watches[8];
	int n_watches;
	DBusConnection **conns;
	int n_conns, max_conns;
};

static dbus_bool_t bench_server_add_watch(DBusWatch *w, void *data)
{
	struct bench_server *s = data;

	if (s->n_watches == (int)(sizeof(s->watches) / sizeof(s->watches[0])))
		return FALSE;
	s->watches[s->n_watches++] = w;
	return TRUE;
}

static void bench_server_remove_watch(DBusWatch *w, void *data)
{
	struct bench_server *s = data;
	int i;

	for (i = 0; i < s->n_watches; i++)
		if (s->watches[i] == w)
			s->watches[i] = s->watches[--s->n_watches];
}

static void bench_server_new_connection(DBusServer *server, DBusConnection *c,
					void *data)
{
	struct bench_server *s = data;

	(void)server;
	if (s->n_conns == s->max_conns)
		return;	/* not referenced: libdbus drops it */
	dbus_connection_ref(c);
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	s->conns[s->n_conns++] = c;
}

/* Listen on address (e.g. unix:path=/tmp/x) for at most max connections. */
static inline void bench_server_listen(const char *tool, struct bench_server *s,
				       const char *address, int max)
{
	DBusError error = DBUS_ERROR_INIT;

	memset(s, 0, sizeof(*s));
	s->max_conns = max;
	s->conns = calloc(max, sizeof(*s->conns));
	s->server = dbus_server_listen(address, &error);
	if (!s->conns || !s->server)
		bench_die(tool, "listening on %s: %s", address,
			  dbus_error_is_set(&error) ? error.message : "no memory");
	if (!dbus_server_set_watch_functions(s->server, bench_server_add_watch,
					     bench_server_remove_watch, NULL, s, NULL))
		bench_die(tool, "dbus_server_set_watch_functions failed");
	dbus_server_set_new_connection_function(s->server,
						bench_server_new_connection, s, NULL);
}

/*
 * Wait until n connections have been accepted in total, at most
 * timeout_ms for each (-1: for ever).
 */
static inline void bench_server_accept(const char *tool, struct bench_server *s,
				       int n, int timeout_ms)
{
	while (s->n_conns < n) {
		struct pollfd pfd[8];
		DBusWatch *w[8];
		int i, k = 0;

		for (i = 0; i < s->n_watches; i++) {
			if (!dbus_watch_get_enabled(s->watches[i]))
				continue;
			w[k] = s->watches[i];
			pfd[k].fd = dbus_watch_get_unix_fd(w[k]);
			pfd[k].events = POLLIN;
			pfd[k].revents = 0;
			k++;
		}
		if (poll(pfd, k, timeout_ms) <= 0)
			bench_die(tool, "no peer connected in time (%d of %d)",
				  s->n_conns, n);
		for (i = 0; i < k; i++)
			if (pfd[i].revents)
				dbus_watch_handle(w[i], DBUS_WATCH_READABLE);
	}
}

#endif /* BENCH_CONN_H */
