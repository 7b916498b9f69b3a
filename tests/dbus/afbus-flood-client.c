// SPDX-License-Identifier: GPL-2.0
/*
 * Sends a burst of calls to a service that does not read for a while,
 * for the AF_BUS tests of a full recipient queue.
 *
 * Usage: afbus-flood-client DEST COUNT STALL-MS [FIRST-WAIT-MS [SIZE]]
 *
 * With STALL-MS > 0 it first asks DEST to stall (com.example.Echo.Stall)
 * for that long.  Then it sends COUNT calls com.example.Echo.Echo
 * ("call N") without waiting, flushes its queue (dbus_connection_flush,
 * which blocks while the service's queue is full) and waits for every
 * reply.  With FIRST-WAIT-MS, it sends call 0 alone and waits up to that
 * long for the org.freedesktop.DBus.AF_BUS.Forwarded signal about DEST
 * before sending the others, so that they take whatever path that
 * signal gives ("-": no first call alone).  With SIZE, each string is
 * padded to SIZE bytes.  It prints
 *   "first-forwarded ADDR" (with FIRST-WAIT-MS; "none" if none came)
 *   "flushing" (all calls are sent or queued; it now flushes)
 *   "calls=N ok=N in-order=0|1 flush-ms=N flush-cpu-ms=N errors=N error=NAME
 *    limits-exceeded=N ok-in-order=0|1"
 * where ok counts the replies holding their call's string, in-order
 * tells whether the replies came in the order of the calls,
 * flush-cpu-ms is the CPU time (user + system) the client used while it
 * flushed, errors counts the error replies and NAME is the name of the
 * last one ("-" if none), limits-exceeded counts the errors
 * org.freedesktop.DBus.Error.LimitsExceeded, and ok-in-order tells
 * whether the replies holding their call's string came in the order of
 * their calls (errors aside).  Exit status 0 if every call got its
 * reply in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <dbus/dbus.h>

static const char *dest;
static int got_forwarded;
static dbus_uint64_t forwarded_addr;
static int *order, n_order, ok, errors, limits_exceeded;
static int last_ok = -1, ok_in_order = 1;
static char error_name[256] = "-";
static size_t size;

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data)
{
	const char *name;
	dbus_uint64_t addr;

	(void)c;
	(void)data;
	if (!got_forwarded &&
	    dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "Forwarded") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name,
				  DBUS_TYPE_UINT64, &addr, DBUS_TYPE_INVALID) &&
	    strcmp(name, dest) == 0) {
		got_forwarded = 1;
		forwarded_addr = addr;
	}
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

/* The string of call n: "call N", padded with 'x' to size bytes. */
static char *text(int n)
{
	size_t len = size > 32 ? size : 32;
	char *buf = malloc(len + 1);

	if (!buf)
		exit(1);
	snprintf(buf, len + 1, "call %d", n);
	if (size > strlen(buf)) {
		memset(buf + strlen(buf), 'x', size - strlen(buf));
		buf[size] = '\0';
	}
	return buf;
}

static void replied(DBusPendingCall *pending, void *data)
{
	DBusMessage *r = dbus_pending_call_steal_reply(pending);
	int n = (int)(long)data;
	const char *s;
	char *buf = text(n);

	if (r && dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID) &&
	    strcmp(s, buf) == 0) {
		ok++;
		if (n < last_ok)
			ok_in_order = 0;
		last_ok = n;
	} else if (r && dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR) {
		errors++;
		if (dbus_message_is_error(r, DBUS_ERROR_LIMITS_EXCEEDED))
			limits_exceeded++;
		snprintf(error_name, sizeof(error_name), "%s", dbus_message_get_error_name(r));
	} else {
		fprintf(stderr, "call %d: bad reply\n", n);
	}
	free(buf);
	order[n_order++] = n;
	if (r)
		dbus_message_unref(r);
}

static void call(DBusConnection *c, int n)
{
	DBusMessage *m;
	DBusPendingCall *pending;
	char *buf = text(n);
	const char *s = buf;

	m = dbus_message_new_method_call(dest, "/", "com.example.Echo", "Echo");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID) ||
	    !dbus_connection_send_with_reply(c, m, &pending, 120000) || !pending) {
		fprintf(stderr, "afbus-flood-client: cannot send call %d\n", n);
		exit(1);
	}
	dbus_pending_call_set_notify(pending, replied, (void *)(long)n, NULL);
	dbus_pending_call_unref(pending);
	dbus_message_unref(m);
	free(buf);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static long cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	int i, count, first = 0, in_order = 1;
	dbus_uint32_t stall;
	long t0, c0, flush_ms, flush_cpu;

	/* The library passes its Forwarded signals on to us only with
	 * this; DBUS_AFBUS_SHOW_INTERNAL=0 checks that it does not by
	 * default. */
	setenv("DBUS_AFBUS_SHOW_INTERNAL", "1", 0);
	if (argc < 4) {
		fprintf(stderr, "usage: afbus-flood-client DEST COUNT STALL-MS [FIRST-WAIT-MS [SIZE]]\n");
		return 2;
	}
	dest = argv[1];
	count = atoi(argv[2]);
	stall = strtoul(argv[3], NULL, 0);
	if (argc > 5)
		size = strtoul(argv[5], NULL, 0);
	order = calloc(count, sizeof(*order));
	if (!order)
		return 1;

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-flood-client: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	dbus_connection_add_filter(c, filter, NULL, NULL);

	if (stall > 0) {
		DBusMessage *m = dbus_message_new_method_call(dest, "/", "com.example.Echo",
							      "Stall");

		dbus_message_set_no_reply(m, TRUE);
		dbus_message_append_args(m, DBUS_TYPE_UINT32, &stall, DBUS_TYPE_INVALID);
		dbus_connection_send(c, m, NULL);
		dbus_message_unref(m);
	}

	if (argc > 4 && strcmp(argv[4], "-") != 0) {
		long wait = atol(argv[4]);

		call(c, 0);
		first = 1;
		t0 = now_ms();
		while (!got_forwarded && now_ms() - t0 < wait &&
		       dbus_connection_read_write_dispatch(c, 50))
			;
		if (got_forwarded)
			printf("first-forwarded %llx\n", (unsigned long long)forwarded_addr);
		else
			printf("first-forwarded none\n");
		fflush(stdout);
	}

	for (i = first; i < count; i++)
		call(c, i);

	printf("flushing\n");
	fflush(stdout);
	t0 = now_ms();
	c0 = cpu_ms();
	dbus_connection_flush(c);
	flush_cpu = cpu_ms() - c0;
	flush_ms = now_ms() - t0;

	t0 = now_ms();
	while (n_order < count && now_ms() - t0 < 120000 &&
	       dbus_connection_read_write_dispatch(c, 100))
		;
	for (i = 0; i < n_order; i++)
		if (order[i] != i)
			in_order = 0;

	printf("calls=%d ok=%d in-order=%d flush-ms=%ld flush-cpu-ms=%ld errors=%d error=%s"
	       " limits-exceeded=%d ok-in-order=%d\n",
	       count, ok, in_order, flush_ms, flush_cpu, errors, error_name,
	       limits_exceeded, ok_in_order);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return (ok == count && in_order) ? 0 : 1;
}
