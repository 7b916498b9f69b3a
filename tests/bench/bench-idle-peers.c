// SPDX-License-Identifier: GPL-2.0
/*
 * Idle peers and match rules for the cost-growth benchmarks: keeps
 * PEERS connections to a bus open, each with RULES match rules that the
 * benchmark traffic never satisfies (signals of org.afbus.Bench with
 * members IdleN, which nobody sends; same interface as the benchmark's
 * signals, so that a bus must look at them), and reads and drops
 * whatever they receive.
 *
 *   bench-idle-peers [-k PEERS] [-r RULES] --bus ADDRESS
 *
 * PEERS defaults to 1, RULES to 0.  It prints "ready PEERS RULES" once
 * every connection is registered and every rule added, and runs until
 * it is killed.
 */
#include "bench-conn.h"

static const char *tool = "bench-idle-peers";

int main(int argc, char **argv)
{
	long peers = 1, rules = 0, i, j;
	const char *bus = NULL;
	DBusConnection **c;
	struct pollfd *pfd;
	int a;

	for (a = 1; a + 1 < argc; a++) {
		if (strcmp(argv[a], "-k") == 0)
			peers = bench_number(tool, "-k", argv[++a], 1);
		else if (strcmp(argv[a], "-r") == 0)
			rules = bench_number(tool, "-r", argv[++a], 0);
		else if (strcmp(argv[a], "--bus") == 0)
			bus = argv[++a];
		else
			break;
	}
	if (!bus || a != argc) {
		fprintf(stderr, "usage: %s [-k PEERS] [-r RULES] --bus ADDRESS\n", tool);
		return 2;
	}

	c = calloc(peers, sizeof(*c));
	pfd = calloc(peers, sizeof(*pfd));
	if (!c || !pfd)
		bench_die(tool, "out of memory");
	for (i = 0; i < peers; i++) {
		int fd;

		c[i] = bench_bus_connect(tool, bus);
		for (j = 0; j < rules; j++) {
			DBusError error = DBUS_ERROR_INIT;
			char rule[128];

			snprintf(rule, sizeof(rule), "type='signal',interface='"
				 BENCH_IFACE "',member='Idle%ld'", j);
			dbus_bus_add_match(c[i], rule, &error);
			if (dbus_error_is_set(&error))
				bench_die(tool, "AddMatch %s: %s", rule, error.message);
		}
		if (!dbus_connection_get_unix_fd(c[i], &fd))
			bench_die(tool, "connection %ld has no file descriptor", i);
		pfd[i].fd = fd;
		pfd[i].events = POLLIN;
	}
	printf("ready %ld %ld\n", peers, rules);
	fflush(stdout);

	for (;;) {
		if (poll(pfd, peers, -1) < 0 && errno != EINTR)
			bench_die(tool, "poll: %s", strerror(errno));
		for (i = 0; i < peers; i++) {
			DBusMessage *m;

			if (!pfd[i].revents)
				continue;
			if (!dbus_connection_read_write(c[i], 0))
				bench_die(tool, "the bus went away");
			while ((m = dbus_connection_pop_message(c[i])) != NULL)
				dbus_message_unref(m);
		}
	}
}
