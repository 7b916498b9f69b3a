// SPDX-License-Identifier: GPL-2.0
/*
 * One sender's messages to a well-known name, in order across the name's
 * restart, for the AF_BUS tests of the order of a client's messages
 * (issue 17, items 3 and 4).
 *
 * Usage: afbus-order-client NAME COUNT
 *
 * NAME is an activatable afbus-echo-service.  The client calls Echo on
 * NAME until the daemon's Forwarded gives its library the name's address
 * (5 s at most), then Quit, which goes straight to that address, and
 * waits until NAME has no owner.  Its library still has the address.
 * Then it sends COUNT calls Seq (0 ... COUNT-1) to NAME without asking
 * for replies, pausing 10 ms after every 50: the first ones find the
 * address without an owner and start the service again, and the later
 * ones go out while it starts and after.  Last it calls SeqReport and
 * prints
 *   "cached ADDR" (the address it had, in hexadecimal, or "none")
 *   the report: "seq=N in-order=0|1"
 * Exit status 0 if it got a report.
 *
 * Usage: afbus-order-client --mixed NAME COUNT SIZE
 *
 * NAME is an afbus-echo-service that its owner serves.  The client asks
 * the daemon for the owner's unique name, prints "connected UNIQUE" and
 * waits for a line on its standard input.  Then it queues COUNT calls
 * Seq (0 ... COUNT-1) without asking for replies, each with a string of
 * SIZE bytes after the number: two to NAME, two to UNIQUE, and so on.
 * It prints "queued" once the library has taken them, flushes them,
 * calls SeqReport and prints the report, as above.
 *
 * Usage: afbus-order-client --after NAME COUNT SIZE
 *
 * As --mixed, but the first half of the calls go to NAME; then a call
 * to the daemon (GetId) returns only once it has answered all of them
 * (Forwarded), and the second half alternate between UNIQUE and NAME.
 *
 * Usage: afbus-order-client --hog NAME COUNT PEER CALLS
 *
 * For a receiver that does not read: the client queues COUNT calls Seq
 * to NAME as --after's first half (200 bytes each), waits until the
 * daemon has answered them all (GetId), prints "synced" and waits for
 * a line on its standard input.  Then it calls Echo CALLS times on
 * PEER (5 s at most each) and prints "peer-calls=N ok=N", waits for
 * another line, flushes its calls to NAME and prints NAME's report.
 *
 * Usage: afbus-order-client --match NAME
 *
 * A call to the driver, then a direct call whose answer it changes
 * (issue 35, item 3).  As --mixed up to the line on standard input;
 * then the client sends AddMatch for the signal com.example.Echo.Answer
 * with arg0 "match" without waiting for its reply (dbus_bus_add_match()
 * with no error: the classic idiom), and calls Signal ("match") on
 * UNIQUE, which emits that signal before it answers.  It waits for the
 * answer (60 s) and then 3 s more for the signal, and prints
 * "reply=0|1 signal=N": how many such signals it received.
 *
 * Usage: afbus-order-client --own NAME OWN
 *
 * A name asked for, then a signal for everybody that a rule with
 * sender=OWN matches: the client prints "connected UNIQUE" (NAME's
 * owner, unused) and waits for a line on standard input; then it sends
 * RequestName OWN without waiting for its reply, emits
 * com.example.Echo.Answer with arg0 "own" for everybody, flushes, and
 * prints "sent".  Then it waits for the RequestName reply (60 s) and
 * prints "owner=1" if it is OWN's primary owner; it stays connected
 * (and OWN's owner) until a second line comes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dbus/dbus.h>

#define IFACE "com.example.Echo"

static const char *name;
static dbus_uint64_t forwarded_addr;

static DBusHandlerResult filter(DBusConnection *c, DBusMessage *m, void *data)
{
	const char *n;
	dbus_uint64_t addr;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, "org.freedesktop.DBus.AF_BUS", "Forwarded") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &n,
				  DBUS_TYPE_UINT64, &addr, DBUS_TYPE_INVALID) &&
	    strcmp(n, name) == 0)
		forwarded_addr = addr;
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static DBusMessage *call(DBusConnection *c, const char *method, int timeout)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;
	const char *s = "order";

	m = dbus_message_new_method_call(name, "/", IFACE, method);
	if (!m || (strcmp(method, "Echo") == 0 &&
		   !dbus_message_append_args(m, DBUS_TYPE_STRING, &s,
					     DBUS_TYPE_INVALID))) {
		fprintf(stderr, "afbus-order-client: out of memory\n");
		exit(1);
	}
	r = dbus_connection_send_with_reply_and_block(c, m, timeout, &error);
	dbus_message_unref(m);
	if (!r) {
		fprintf(stderr, "afbus-order-client: %s: %s\n", method, error.message);
		dbus_error_free(&error);
	}
	return r;
}

/* Sends Seq (n) to @dest, with the string @pad after n unless NULL,
 * asking for no reply. */
static void send_seq(DBusConnection *c, const char *dest, dbus_uint32_t n,
		     const char *pad)
{
	DBusMessage *m = dbus_message_new_method_call(dest, "/", IFACE, "Seq");

	if (!m || !dbus_message_append_args(m, DBUS_TYPE_UINT32, &n,
					    DBUS_TYPE_INVALID) ||
	    (pad && !dbus_message_append_args(m, DBUS_TYPE_STRING, &pad,
					      DBUS_TYPE_INVALID))) {
		fprintf(stderr, "afbus-order-client: out of memory\n");
		exit(1);
	}
	dbus_message_set_no_reply(m, TRUE);
	dbus_connection_send(c, m, NULL);
	dbus_message_unref(m);
}

static int report(DBusConnection *c)
{
	DBusMessage *r = call(c, "SeqReport", 60000);
	const char *text;

	if (!r || !dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &text,
					 DBUS_TYPE_INVALID))
		return 1;
	printf("%s\n", text);
	dbus_message_unref(r);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}

static unsigned int answers;

static DBusHandlerResult count_answers(DBusConnection *c, DBusMessage *m,
				       void *data)
{
	const char *arg;

	(void)c;
	(void)data;
	if (dbus_message_is_signal(m, IFACE, "Answer") &&
	    dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &arg,
				  DBUS_TYPE_INVALID) &&
	    strcmp(arg, "match") == 0)
		answers++;
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

/* NAME's owner's unique name (malloc'd), or NULL. */
static char *get_owner(DBusConnection *c)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;
	const char *owner;
	char *dup;

	m = dbus_message_new_method_call("org.freedesktop.DBus", "/",
					 "org.freedesktop.DBus", "GetNameOwner");
	if (!m ||
	    !dbus_message_append_args(m, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID))
		return NULL;
	r = dbus_connection_send_with_reply_and_block(c, m, 10000, &error);
	dbus_message_unref(m);
	if (!r || !dbus_message_get_args(r, &error, DBUS_TYPE_STRING, &owner,
					 DBUS_TYPE_INVALID)) {
		fprintf(stderr, "afbus-order-client: GetNameOwner: %s\n",
			error.message);
		return NULL;
	}
	dup = strdup(owner);
	dbus_message_unref(r);
	return dup;
}

static int match_then_call(DBusConnection *c)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;
	const char *arg = "match";
	char *owner = get_owner(c), line[16];
	struct timespec start, now;
	int replied = 0;

	if (!owner)
		return 1;
	dbus_connection_add_filter(c, count_answers, NULL, NULL);
	printf("connected %s\n", owner);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	dbus_bus_add_match(c, "type='signal',interface='" IFACE "',"
			   "member='Answer',arg0='match'", NULL);
	m = dbus_message_new_method_call(owner, "/", IFACE, "Signal");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &arg,
					    DBUS_TYPE_INVALID))
		return 1;
	r = dbus_connection_send_with_reply_and_block(c, m, 60000, &error);
	dbus_message_unref(m);
	if (r) {
		replied = 1;
		dbus_message_unref(r);
	} else {
		fprintf(stderr, "afbus-order-client: Signal: %s\n", error.message);
		dbus_error_free(&error);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		dbus_connection_read_write_dispatch(c, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 3);
	printf("reply=%d signal=%u\n", replied, answers);
	return 0;
}

static int own_then_signal(DBusConnection *c, const char *own)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusPendingCall *pending = NULL;
	DBusMessage *m, *sig, *r;
	dbus_uint32_t flags = 4, result = 0; /* DBUS_NAME_FLAG_DO_NOT_QUEUE */
	const char *arg = "own";
	char *owner = get_owner(c), line[16];

	if (!owner)
		return 1;
	printf("connected %s\n", owner);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	m = dbus_message_new_method_call("org.freedesktop.DBus", "/",
					 "org.freedesktop.DBus", "RequestName");
	sig = dbus_message_new_signal("/com/example", IFACE, "Answer");
	if (!m || !sig ||
	    !dbus_message_append_args(m, DBUS_TYPE_STRING, &own,
				      DBUS_TYPE_UINT32, &flags, DBUS_TYPE_INVALID) ||
	    !dbus_message_append_args(sig, DBUS_TYPE_STRING, &arg,
				      DBUS_TYPE_INVALID) ||
	    !dbus_connection_send_with_reply(c, m, &pending, 60000) || !pending ||
	    !dbus_connection_send(c, sig, NULL))
		return 1;
	dbus_message_unref(m);
	dbus_message_unref(sig);
	dbus_connection_flush(c);
	printf("sent\n");
	fflush(stdout);
	dbus_pending_call_block(pending);
	r = dbus_pending_call_steal_reply(pending);
	if (r && dbus_message_get_args(r, &error, DBUS_TYPE_UINT32, &result,
				       DBUS_TYPE_INVALID) && result == 1)
		printf("owner=1\n");
	else
		printf("owner=0\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}

static int mixed(DBusConnection *c, unsigned int count, size_t size,
		 int after)
{
	DBusError error = DBUS_ERROR_INIT;
	char *owner = get_owner(c), *pad = malloc(size + 1), line[16];
	unsigned int i;

	if (!owner || !pad)
		return 1;
	memset(pad, 'p', size);
	pad[size] = '\0';

	printf("connected %s\n", owner);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	for (i = 0; i < count; i++) {
		const char *dest = i % 4 < 2 ? name : owner;

		if (after && i < count / 2) {
			dest = name;
		} else if (after && i == count / 2) {
			dbus_bus_get_id(c, &error);
			if (dbus_error_is_set(&error)) {
				fprintf(stderr, "afbus-order-client: GetId: %s\n",
					error.message);
				return 1;
			}
			dest = owner;
		}
		send_seq(c, dest, i, pad);
	}
	printf("queued\n");
	fflush(stdout);
	dbus_connection_flush(c);
	free(pad);
	return report(c);
}

static int hog(DBusConnection *c, unsigned int count, const char *peer,
	       unsigned int calls)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;
	char pad[201], line[16];
	const char *arg = pad;
	unsigned int i, ok = 0;

	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (i = 0; i < count; i++)
		send_seq(c, name, i, pad);
	dbus_bus_get_id(c, &error);
	if (dbus_error_is_set(&error)) {
		fprintf(stderr, "afbus-order-client: GetId: %s\n", error.message);
		return 1;
	}
	printf("synced\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	for (i = 0; i < calls; i++) {
		m = dbus_message_new_method_call(peer, "/", IFACE, "Echo");
		if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &arg,
						    DBUS_TYPE_INVALID))
			return 1;
		r = dbus_connection_send_with_reply_and_block(c, m, 5000, &error);
		dbus_message_unref(m);
		if (r) {
			ok++;
			dbus_message_unref(r);
		} else {
			fprintf(stderr, "afbus-order-client: Echo: %s\n",
				error.message);
			dbus_error_free(&error);
		}
	}
	printf("peer-calls=%u ok=%u\n", calls, ok);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	dbus_connection_flush(c);
	return report(c);
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	DBusMessage *r;
	unsigned int count, i;
	int tries, after = 0;
	const char *hog_peer = NULL;

	/* The library passes its Forwarded signals on to us only with
	 * this; DBUS_AFBUS_SHOW_INTERNAL=0 checks that it does not by
	 * default. */
	setenv("DBUS_AFBUS_SHOW_INTERNAL", "1", 0);
	if ((argc == 3 && strcmp(argv[1], "--match") == 0) ||
	    (argc == 4 && strcmp(argv[1], "--own") == 0)) {
		name = argv[2];
		c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
		if (!c) {
			fprintf(stderr, "afbus-order-client: %s\n", error.message);
			return 1;
		}
		dbus_connection_set_exit_on_disconnect(c, FALSE);
		return argc == 3 ? match_then_call(c) : own_then_signal(c, argv[3]);
	}
	if (argc == 6 && strcmp(argv[1], "--hog") == 0) {
		hog_peer = argv[4];
		argv++;
		argc = 3;
	} else if (argc == 5 && (strcmp(argv[1], "--mixed") == 0 ||
			  strcmp(argv[1], "--after") == 0)) {
		after = strcmp(argv[1], "--after") == 0;
		argv++;
		argc--;
	} else if (argc != 3) {
		fprintf(stderr, "usage: afbus-order-client NAME COUNT\n"
			"       afbus-order-client --mixed|--after NAME COUNT SIZE\n"
			"       afbus-order-client --hog NAME COUNT PEER CALLS\n"
			"       afbus-order-client --match NAME\n"
			"       afbus-order-client --own NAME OWN\n");
		return 2;
	}
	name = argv[1];
	count = strtoul(argv[2], NULL, 0);

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-order-client: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	if (hog_peer)
		return hog(c, count, hog_peer, strtoul(argv[4], NULL, 0));
	if (argc == 4)
		return mixed(c, count, strtoul(argv[3], NULL, 0), after);
	dbus_connection_add_filter(c, filter, NULL, NULL);

	for (tries = 0; tries < 50 && forwarded_addr == 0; tries++) {
		r = call(c, "Echo", 30000);
		if (r)
			dbus_message_unref(r);
		dbus_connection_read_write_dispatch(c, 100);
	}
	if (forwarded_addr)
		printf("cached %llx\n", (unsigned long long)forwarded_addr);
	else
		printf("cached none\n");
	fflush(stdout);

	r = call(c, "Quit", 10000);
	if (r)
		dbus_message_unref(r);
	for (tries = 0; tries < 100 && dbus_bus_name_has_owner(c, name, NULL);
	     tries++)
		usleep(100000);

	for (i = 0; i < count; i++) {
		send_seq(c, name, i, NULL);
		if (i % 50 == 49) {
			dbus_connection_flush(c);
			dbus_connection_read_write_dispatch(c, 0);
			usleep(10000);
		}
	}
	dbus_connection_flush(c);

	return report(c);
}
