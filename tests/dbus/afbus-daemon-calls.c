// SPDX-License-Identifier: GPL-2.0
/*
 * Calls that go through the daemon, for the tests of the daemon's reply
 * bookkeeping on AF_BUS: a client's first message to a well-known name
 * always goes to the daemon (its library has no address for the name
 * yet), so calls to N different names of one service are N calls the
 * daemon forwards, answered by the service straight through the kernel.
 *
 * afbus-daemon-calls serve PREFIX N
 *	Owns PREFIX.n0 ... PREFIX.n<N-1>, prints "ready UNIQUE-NAME", and
 *	answers, interface com.example.Echo: Echo (s) -> s, Hang () never
 *	(it prints "hang SENDER"),
 *	Quit () -> (), then exits.
 * afbus-daemon-calls call PREFIX FIRST N WAIT-MS [quit]
 *	On one connection, calls Echo on PREFIX.nFIRST ...
 *	PREFIX.n<FIRST+N-1> one after the other (10 s timeout each); with
 *	"quit", then Quit on PREFIX.n<FIRST+N>; then reads for WAIT-MS.  Prints "error I NAME:
 *	MESSAGE" for each call that failed, then
 *	"calls=N ok=K errors=E stray=S", S counting the method returns and
 *	errors that reached the application outside the calls (a NoReply
 *	for a call already answered, say).
 * afbus-daemon-calls hang NAME TIMEOUT-MS
 *	Calls Echo on NAME three times, reading for 200 ms after each (so
 *	that the daemon's Forwarded gives the library the name's address),
 *	then Hang, which goes straight to the name's address; prints
 *	"error NAME: MESSAGE" (or "reply"), "elapsed-ms N" for the Hang
 *	call, and "forwarded N stray N": the Forwarded signals with an
 *	address the application saw, and the stray replies.
 * afbus-daemon-calls burst PREFIX N ROUNDS
 *	Prints "connected", waits for a line on standard input, then calls
 *	Echo ROUNDS times on each of PREFIX.n0 ... PREFIX.n<N-1>, round by
 *	round, without waiting, and reads the replies (60 s at most); then
 *	reads for a second and makes one more round, the same way but from
 *	PREFIX.n<N-1> down to PREFIX.n0 (the most recently used names first:
 *	the library's cache holds the last 64).  Prints
 *	"replies=R in-order=0|1 last-forwarded=F": the replies of all
 *	rounds, whether each name's replies came in the order of its calls,
 *	and the Forwarded signals the last round earned (each call that
 *	went through the daemon earns one; one sent straight to the name's
 *	address earns none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dbus/dbus.h>

#define IFACE "com.example.Echo"

static int stray, forwarded;

static void die(const char *what, DBusError *error)
{
	fprintf(stderr, "afbus-daemon-calls: %s: %s\n", what,
		error && dbus_error_is_set(error) ? error->message : "failed");
	exit(1);
}

static DBusConnection *connect_bus(void)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);

	if (!c)
		die("connect", &error);
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	return c;
}

static DBusHandlerResult serve_filter(DBusConnection *c, DBusMessage *m,
				      void *data)
{
	DBusMessage *reply = NULL;
	const char *s;

	(void)data;
	if (dbus_message_is_method_call(m, IFACE, "Echo")) {
		if (!dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &s,
					   DBUS_TYPE_INVALID))
			s = "";
		reply = dbus_message_new_method_return(m);
		dbus_message_append_args(reply, DBUS_TYPE_STRING, &s,
					 DBUS_TYPE_INVALID);
	} else if (dbus_message_is_method_call(m, IFACE, "Hang")) {
		/* the test kills the callee once it has the call */
		printf("hang %s\n", dbus_message_get_sender(m));
		fflush(stdout);
		return DBUS_HANDLER_RESULT_HANDLED;
	} else if (dbus_message_is_method_call(m, IFACE, "Quit")) {
		reply = dbus_message_new_method_return(m);
		dbus_connection_send(c, reply, NULL);
		dbus_connection_flush(c);
		exit(0);
	} else {
		return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
	}
	dbus_connection_send(c, reply, NULL);
	dbus_message_unref(reply);
	return DBUS_HANDLER_RESULT_HANDLED;
}

static int serve(const char *prefix, int n)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	char name[256];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s.n%d", prefix, i);
		if (dbus_bus_request_name(c, name, DBUS_NAME_FLAG_DO_NOT_QUEUE,
					  &error) != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER)
			die(name, &error);
	}
	dbus_connection_add_filter(c, serve_filter, NULL, NULL);
	printf("ready %s\n", dbus_bus_get_unique_name(c));
	fflush(stdout);
	while (dbus_connection_read_write_dispatch(c, -1))
		;
	return 0;
}

static DBusHandlerResult call_filter(DBusConnection *c, DBusMessage *m,
				     void *data)
{
	const char *name;
	dbus_uint64_t addr;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "Forwarded") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &name,
				  DBUS_TYPE_UINT64, &addr, DBUS_TYPE_INVALID) &&
	    addr != 0)
		forwarded++;
	if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_METHOD_RETURN ||
	    dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_ERROR) {
		stray++;
		printf("stray %s reply_serial=%u %s\n",
		       dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_ERROR ?
		       dbus_message_get_error_name(m) : "method-return",
		       dbus_message_get_reply_serial(m),
		       dbus_message_get_sender(m) ? dbus_message_get_sender(m) : "");
		return DBUS_HANDLER_RESULT_HANDLED;
	}
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static DBusMessage *call(DBusConnection *c, const char *prefix, int i,
			 const char *method, DBusError *error)
{
	char name[256], text[64];
	const char *s = text;
	DBusMessage *m, *reply;

	snprintf(name, sizeof(name), "%s.n%d", prefix, i);
	snprintf(text, sizeof(text), "call %d", i);
	m = dbus_message_new_method_call(name, "/", IFACE, method);
	if (!m)
		die("message", NULL);
	if (strcmp(method, "Echo") == 0)
		dbus_message_append_args(m, DBUS_TYPE_STRING, &s,
					 DBUS_TYPE_INVALID);
	reply = dbus_connection_send_with_reply_and_block(c, m, 10000, error);
	dbus_message_unref(m);
	return reply;
}

static int calls(const char *prefix, int first, int n, int wait_ms, int quit)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	DBusMessage *reply;
	struct timespec start, now;
	int i, ok = 0, errors = 0;

	dbus_connection_add_filter(c, call_filter, NULL, NULL);
	for (i = first; i < first + n; i++) {
		reply = call(c, prefix, i, "Echo", &error);
		if (reply) {
			ok++;
			dbus_message_unref(reply);
		} else {
			errors++;
			printf("error %d %s: %s\n", i, error.name, error.message);
			dbus_error_free(&error);
		}
	}
	if (quit) {
		reply = call(c, prefix, first + n, "Quit", &error);
		if (reply)
			dbus_message_unref(reply);
		else
			printf("quit: %s: %s\n", error.name, error.message);
		dbus_error_free(&error);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		dbus_connection_read_write_dispatch(c, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 +
		 (now.tv_nsec - start.tv_nsec) / 1000000 < wait_ms);
	printf("calls=%d ok=%d errors=%d stray=%d\n", n, ok, errors, stray);
	return 0;
}

static int burst_n, *burst_last, burst_replies, burst_in_order = 1;
static dbus_uint32_t *burst_serials;

static DBusHandlerResult burst_filter(DBusConnection *c, DBusMessage *m,
				      void *data)
{
	dbus_uint32_t serial = dbus_message_get_reply_serial(m);
	int k;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "Forwarded"))
		forwarded++;
	if (dbus_message_get_type(m) != DBUS_MESSAGE_TYPE_METHOD_RETURN)
		return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
	for (k = 0; burst_serials[k] != 0; k++) {
		if (burst_serials[k] != serial)
			continue;
		/* Call k is round k / n, name k % n. */
		if (burst_last[k % burst_n] >= k / burst_n)
			burst_in_order = 0;
		burst_last[k % burst_n] = k / burst_n;
		burst_replies++;
		burst_serials[k] = 1;	/* answered */
		break;
	}
	return DBUS_HANDLER_RESULT_HANDLED;
}

static void burst_round(DBusConnection *c, const char *prefix, int round,
			int down)
{
	char name[256], text[64];
	const char *s = text;
	DBusMessage *m;
	int j, i;

	for (j = 0; j < burst_n; j++) {
		i = down ? burst_n - 1 - j : j;
		snprintf(name, sizeof(name), "%s.n%d", prefix, i);
		snprintf(text, sizeof(text), "round %d", round);
		m = dbus_message_new_method_call(name, "/", IFACE, "Echo");
		if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &s,
						    DBUS_TYPE_INVALID) ||
		    !dbus_connection_send(c, m,
					  &burst_serials[round * burst_n + i]))
			die("message", NULL);
		dbus_message_unref(m);
	}
}

/* Reads until @replies replies came, or for @ms milliseconds. */
static void read_until(DBusConnection *c, int replies, int ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		dbus_connection_read_write_dispatch(c, 50);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (burst_replies < replies &&
		 (now.tv_sec - start.tv_sec) * 1000 +
		 (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

static int burst(const char *prefix, int n, int rounds)
{
	DBusConnection *c = connect_bus();
	char line[64];
	int r;

	burst_n = n;
	burst_last = calloc(n, sizeof(*burst_last));
	burst_serials = calloc((size_t)n * (rounds + 1) + 1,
			       sizeof(*burst_serials));
	if (!burst_last || !burst_serials)
		die("memory", NULL);
	for (r = 0; r < n; r++)
		burst_last[r] = -1;
	dbus_connection_add_filter(c, burst_filter, NULL, NULL);
	printf("connected\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (r = 0; r < rounds; r++)
		burst_round(c, prefix, r, 0);
	dbus_connection_flush(c);
	read_until(c, n * rounds, 60000);
	read_until(c, n * rounds + 1, 1000);
	forwarded = 0;
	burst_round(c, prefix, rounds, 1);
	dbus_connection_flush(c);
	read_until(c, n * (rounds + 1), 60000);
	read_until(c, n * (rounds + 1) + 1, 1000);
	printf("replies=%d in-order=%d last-forwarded=%d\n", burst_replies,
	       burst_in_order, forwarded);
	return 0;
}

static void read_for(DBusConnection *c, int ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		dbus_connection_read_write_dispatch(c, 50);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000 +
		 (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

static int hang(const char *name, int timeout)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	DBusMessage *m, *reply;
	struct timespec start, now;
	const char *s = "warm-up";
	int i;

	dbus_connection_add_filter(c, call_filter, NULL, NULL);
	for (i = 0; i < 3; i++) {
		m = dbus_message_new_method_call(name, "/", IFACE, "Echo");
		dbus_message_append_args(m, DBUS_TYPE_STRING, &s,
					 DBUS_TYPE_INVALID);
		reply = dbus_connection_send_with_reply_and_block(c, m, 10000,
								  &error);
		dbus_message_unref(m);
		if (!reply)
			die("Echo", &error);
		dbus_message_unref(reply);
		read_for(c, 200);
	}
	m = dbus_message_new_method_call(name, "/", IFACE, "Hang");
	clock_gettime(CLOCK_MONOTONIC, &start);
	reply = dbus_connection_send_with_reply_and_block(c, m, timeout, &error);
	clock_gettime(CLOCK_MONOTONIC, &now);
	dbus_message_unref(m);
	if (reply) {
		printf("reply\n");
		dbus_message_unref(reply);
	} else {
		printf("error %s: %s\n", error.name, error.message);
		dbus_error_free(&error);
	}
	printf("elapsed-ms %ld\n", (long)((now.tv_sec - start.tv_sec) * 1000 +
					  (now.tv_nsec - start.tv_nsec) / 1000000));
	read_for(c, 1000);
	printf("forwarded %d stray %d\n", forwarded, stray);
	return 0;
}

int main(int argc, char **argv)
{
	/* The library passes its Forwarded signals on to us only with
	 * this; DBUS_AFBUS_SHOW_INTERNAL=0 checks that it does not by
	 * default. */
	setenv("DBUS_AFBUS_SHOW_INTERNAL", "1", 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], atoi(argv[3]));
	if (argc == 5 && strcmp(argv[1], "burst") == 0)
		return burst(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "hang") == 0)
		return hang(argv[2], atoi(argv[3]));
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "call") == 0)
		return calls(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			     argc == 7 && strcmp(argv[6], "quit") == 0);
	fprintf(stderr, "usage: afbus-daemon-calls serve PREFIX N\n"
		"       afbus-daemon-calls call PREFIX FIRST N WAIT-MS [quit]\n"
		"       afbus-daemon-calls hang NAME TIMEOUT-MS\n"
		"       afbus-daemon-calls burst PREFIX N ROUNDS\n");
	return 2;
}
