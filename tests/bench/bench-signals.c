// SPDX-License-Identifier: GPL-2.0
/*
 * Signal fan-out: one emitter, N subscriber processes.
 *
 *   bench-signals [-N SUBSCRIBERS] [-m SIGNALS] [-s BYTES] [--half]
 *                 --bus ADDRESS [--emit-bus ADDRESS] | --peer DIRECTORY
 *
 * Every subscriber asks for org.afbus.Bench.Tick signals with a match
 * rule, except, with --half, every second one, whose rule asks for Tock
 * signals, which nobody sends.  All of them also ask for Done.  The
 * emitter sends SIGNALS (default 1000) Tick signals with a sequence
 * number and a BYTES-long payload (default 0), as fast as it can write
 * them, then one Done.  Each subscriber counts the Ticks it gets in
 * sequence (a gap, repeat or stray Tick counts as bad) until Done.
 *
 * --bus does this on the bus at ADDRESS (AddMatch; the bus delivers);
 * with --emit-bus the emitter connects to that other address of the same
 * bus (a daemon listening on unix: and afbus: at once: a legacy emitter
 * and native subscribers, or the other way round);
 * --peer is the floor without a bus: each subscriber connects straight
 * to the emitter (a DBusServer listening in DIRECTORY) and tells it
 * whether it matches; the emitter writes each signal to the matching
 * subscribers' connections itself.
 *
 * Prints
 *   result subscribers=N matching=K signals=M delivered=D expected=E bad=B
 *          msgs_per_s=X signals_per_s=X ctxt_per_op=X cpu_us_per_op=X
 * where msgs_per_s counts delivered signals (D over the time from the
 * first Tick sent to the last Done received), signals_per_s emitted
 * ones, and the counters are per delivered signal.  Exit status 0 if
 * every matching subscriber got every Tick in order and the others none.
 */
#include <signal.h>
#include <sys/wait.h>

#include "bench-conn.h"

static const char *tool = "bench-signals";

#define RULE(member) "type='signal',interface='" BENCH_IFACE "',member='" member "'"

struct sub_report {
	int index;
	long got, bad;
	uint64_t done_ns;
};

static dbus_bool_t is_matching(int i, int half)
{
	return !half || i % 2 == 0;
}

/* Count Ticks on c until Done; send the report down the pipe. */
static void subscriber_loop(DBusConnection *c, int index, int report)
{
	struct sub_report r = { index, 0, 0, 0 };

	while (!r.done_ns && dbus_connection_read_write_dispatch(c, -1)) {
		DBusMessage *m;

		while ((m = dbus_connection_pop_message(c)) != NULL) {
			dbus_uint32_t seq;

			if (dbus_message_is_signal(m, BENCH_IFACE, "Tick")) {
				if (dbus_message_get_args(m, NULL, DBUS_TYPE_UINT32, &seq,
							  DBUS_TYPE_INVALID) &&
				    seq == (dbus_uint32_t)r.got)
					r.got++;
				else
					r.bad++;
			} else if (dbus_message_is_signal(m, BENCH_IFACE, "Done")) {
				r.done_ns = bench_now_ns();
			}
			dbus_message_unref(m);
		}
	}
	_exit(write(report, &r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

static void subscriber(int i, int half, const char *bus, const char *peer,
		       int ready, int report)
{
	DBusError error = DBUS_ERROR_INIT;
	dbus_bool_t matching = is_matching(i, half);
	DBusConnection *c;

	alarm(600);
	if (bus) {
		c = bench_bus_connect(tool, bus);
		dbus_bus_add_match(c, matching ? RULE("Tick") : RULE("Tock"), &error);
		if (!dbus_error_is_set(&error))
			dbus_bus_add_match(c, RULE("Done"), &error);
		if (dbus_error_is_set(&error))
			bench_die(tool, "AddMatch: %s", error.message);
	} else {
		DBusMessage *m;

		c = bench_peer_connect(tool, peer);
		m = dbus_message_new_signal(BENCH_PATH, BENCH_IFACE, "Subscribe");
		if (!m || !dbus_message_append_args(m, DBUS_TYPE_BOOLEAN, &matching,
						    DBUS_TYPE_INVALID) ||
		    !dbus_connection_send(c, m, NULL))
			bench_die(tool, "out of memory");
		dbus_message_unref(m);
		dbus_connection_flush(c);
	}
	if (write(ready, "r", 1) != 1)
		_exit(1);
	subscriber_loop(c, i, report);
}

/* Peer-to-peer: wait for each connection's Subscribe; fill matching[]. */
static void read_subscriptions(struct bench_server *s, dbus_bool_t *matching)
{
	int i;

	for (i = 0; i < s->n_conns; i++) {
		DBusMessage *m = NULL;

		while (!m) {
			if (!dbus_connection_read_write_dispatch(s->conns[i], 30000))
				bench_die(tool, "subscriber %d went away", i);
			m = dbus_connection_pop_message(s->conns[i]);
			if (m && !dbus_message_is_signal(m, BENCH_IFACE, "Subscribe")) {
				dbus_message_unref(m);
				m = NULL;
			}
		}
		if (!dbus_message_get_args(m, NULL, DBUS_TYPE_BOOLEAN, &matching[i],
					   DBUS_TYPE_INVALID))
			bench_die(tool, "bad Subscribe");
		dbus_message_unref(m);
	}
}

static DBusMessage *new_signal(const char *member, dbus_uint32_t seq,
			       const unsigned char *payload, int size)
{
	DBusMessage *m = dbus_message_new_signal(BENCH_PATH, BENCH_IFACE, member);

	if (!m || !dbus_message_append_args(m, DBUS_TYPE_UINT32, &seq,
					    DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE,
					    &payload, size, DBUS_TYPE_INVALID))
		bench_die(tool, "out of memory");
	return m;
}

/* Send m on c and write it out. */
static void emit(DBusConnection *c, DBusMessage *m)
{
	if (!dbus_connection_send(c, m, NULL))
		bench_die(tool, "out of memory");
	dbus_connection_flush(c);
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-N SUBSCRIBERS] [-m SIGNALS] [-s BYTES] [--half] "
		"--bus ADDRESS [--emit-bus ADDRESS] | --peer DIRECTORY\n", tool);
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 4, signals = 1000, size = 0, i, j, delivered = 0, bad = 0, matching = 0;
	const char *bus = NULL, *emit_bus = NULL, *dir = NULL;
	char peer[256];
	int half = 0, ready[2], report[2], a, status;
	dbus_bool_t *wants, ok = TRUE;
	struct bench_counters c0, c1;
	struct bench_server s;
	DBusConnection *c = NULL;
	unsigned char *payload;
	uint64_t t0, last = 0;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--half") == 0)
			half = 1;
		else if (a + 1 >= argc)
			usage();
		else if (strcmp(argv[a], "-N") == 0)
			n = bench_number(tool, "-N", argv[++a], 1);
		else if (strcmp(argv[a], "-m") == 0)
			signals = bench_number(tool, "-m", argv[++a], 1);
		else if (strcmp(argv[a], "-s") == 0)
			size = bench_number(tool, "-s", argv[++a], 0);
		else if (strcmp(argv[a], "--bus") == 0)
			bus = argv[++a];
		else if (strcmp(argv[a], "--emit-bus") == 0)
			emit_bus = argv[++a];
		else if (strcmp(argv[a], "--peer") == 0)
			dir = argv[++a];
		else
			usage();
	}
	if (!bus == !dir || (emit_bus && !bus))
		usage();
	snprintf(peer, sizeof(peer), "unix:path=%s/bench-signals-%d", dir ? dir : "",
		 (int)getpid());

	payload = calloc(1, size + 1);
	wants = calloc(n, sizeof(*wants));
	if (!payload || !wants || pipe(ready) || pipe(report))
		bench_die(tool, "out of memory or pipes");
	if (dir)
		bench_server_listen(tool, &s, peer, n);

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			bench_die(tool, "fork: %s", strerror(errno));
		if (pid == 0)
			subscriber(i, half, bus, peer, ready[1], report[1]);
		wants[i] = is_matching(i, half);
		matching += wants[i];
	}
	alarm(600);
	if (bus) {
		c = bench_bus_connect(tool, emit_bus ? emit_bus : bus);
	} else {
		bench_server_accept(tool, &s, n, 30000);
		read_subscriptions(&s, wants);
	}
	for (i = 0; i < n; i++) {
		char ch;

		if (read(ready[0], &ch, 1) != 1)
			bench_die(tool, "a subscriber died before it was ready");
	}

	c0 = bench_counters_read();
	t0 = bench_now_ns();
	for (j = 0; j <= signals; j++) {
		DBusMessage *m = j < signals ? new_signal("Tick", j, payload, size)
					     : new_signal("Done", j, payload, 0);

		if (bus) {
			emit(c, m);
		} else {
			for (i = 0; i < n; i++)
				if (wants[i] || j == signals)
					emit(s.conns[i], m);
		}
		dbus_message_unref(m);
		bench_jitter();
	}
	for (i = 0; i < n; i++) {
		struct sub_report r;

		if (read(report[0], &r, sizeof(r)) != sizeof(r))
			bench_die(tool, "a subscriber died");
		delivered += r.got;
		bad += r.bad;
		if (r.got != (is_matching(r.index, half) ? signals : 0)) {
			fprintf(stderr, "%s: subscriber %d got %ld of %ld Ticks\n", tool,
				r.index, r.got, is_matching(r.index, half) ? signals : 0);
			ok = FALSE;
		}
		if (r.done_ns > last)
			last = r.done_ns;
	}
	c1 = bench_counters_read();
	while (wait(&status) > 0)
		ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;

	printf("result subscribers=%ld matching=%ld signals=%ld delivered=%ld expected=%ld bad=%ld"
	       " msgs_per_s=%.1f signals_per_s=%.1f",
	       n, matching, signals, delivered, matching * signals, bad,
	       delivered / ((last - t0) / 1e9), signals / ((last - t0) / 1e9));
	bench_print_counters(c0, c1, delivered ? delivered : 1);
	printf("\n");
	return ok && delivered == matching * signals && !bad ? 0 : 1;
}
