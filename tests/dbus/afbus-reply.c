// SPDX-License-Identifier: GPL-2.0
/*
 * Replies nobody asked for, for the AF_BUS tests of reply tracking
 * (nfdbus' NFDBUS_BUS_REPLIES): a service, a caller, and a forger that
 * sends replies straight through the kernel, bypassing libdbus' own
 * sending, so that the test sees the errno of each refused send.
 *
 * afbus-reply serve NAME
 *	Owns NAME (prints "ready UNIQUE-NAME") and answers, interface
 *	com.example.Reply:
 *	  Echo (s) -> s     the string back
 *	  Fd () -> h        a pipe holding "reply with a pipe"
 *	  Stall () -> s     keeps the call unanswered ("stalling CALLER
 *	                    SERIAL": the caller's unique name and the call's
 *	                    serial) until a Release answers it "stalled"
 *	  Twice () -> s     answers "first", then sends the very same reply
 *	                    again ("replay: RESULT") and then an error to the
 *	                    same call ("late-error: RESULT")
 *	  Unasked ()        a call sent with NO_REPLY_EXPECTED: answers it
 *	                    anyway ("unasked: RESULT")
 *	  Hold ()           keeps the call unanswered ("held N": N calls
 *	                    held since it started)
 *	  Release () -> s   answers every held call "released" and every
 *	                    stalled one "stalled", then itself "released"
 *	RESULT is "sent" or the error of sendto(2), e.g. "Operation not
 *	permitted".
 * afbus-reply call DEST METHOD TIMEOUT-MS [STRING]
 *	Calls com.example.Reply.METHOD; prints "caller UNIQUE-NAME" and
 *	"serial N" once the call is written, then "reply SENDER [STRING]"
 *	(for Fd: what it read from the pipe), or "error NAME: MESSAGE"; for
 *	Twice it then reads for 2 s and prints "late-seen N", how many more
 *	replies to its call reached the application.
 * afbus-reply unasked DEST WAIT-MS
 *	Calls Unasked with NO_REPLY_EXPECTED, then reads for WAIT-MS and
 *	prints "replies-seen N": how many method returns or errors to that
 *	call reached the application.
 * afbus-reply many DEST N TIMEOUT-MS
 *	Makes N Hold calls at once; prints "sent N" once they are written,
 *	then "replies=R errors=E" when all ended, and the first error.
 * afbus-reply forge DEST SERIAL [error]
 *	Sends DEST a method return (or an error) with REPLY_SERIAL SERIAL
 *	and its own unique name as SENDER; prints "forge: RESULT".
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/bus.h>
#include <dbus/dbus.h>

#ifndef AF_BUS
#define AF_BUS 46
#endif

#define IFACE "com.example.Reply"
#define MAX_HELD 4096

static DBusConnection *c;
static dbus_uint32_t raw_serial = 0x70000000;

static void die(const char *what, DBusError *error)
{
	fprintf(stderr, "afbus-reply: %s: %s\n", what,
		error && dbus_error_is_set(error) ? error->message : "failed");
	exit(1);
}

static void connect_bus(void)
{
	DBusError error = DBUS_ERROR_INIT;

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c)
		die("connect", &error);
	dbus_connection_set_exit_on_disconnect(c, FALSE);
}

/* Sends m as it is (SENDER and serial already set) to the AF_BUS client
 * named dest; returns "sent" or the error. */
static const char *send_raw_bytes(const char *buf, int len, const char *dest)
{
	struct sockaddr_bus sa;
	int fd;

	if (!dest || strncmp(dest, ":0.", 3) != 0)
		return "not an AF_BUS unique name";
	if (!dbus_connection_get_socket(c, &fd))
		return "no socket";
	memset(&sa, 0, sizeof(sa));
	sa.sbus_family = AF_BUS;
	sa.sbus_addr.s_addr = strtoull(dest + 3, NULL, 16);
	if (sendto(fd, buf, len, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   offsetof(struct sockaddr_bus, sbus_path)) != len)
		return strerror(errno);
	return "sent";
}

static const char *send_raw(DBusMessage *m, const char *dest)
{
	const char *ret;
	char *buf;
	int len;

	if (!dbus_message_get_sender(m))
		dbus_message_set_sender(m, dbus_bus_get_unique_name(c));
	if (!dbus_message_get_serial(m))
		dbus_message_set_serial(m, raw_serial++);
	if (!dbus_message_marshal(m, &buf, &len))
		die("marshal", NULL);
	ret = send_raw_bytes(buf, len, dest);
	dbus_free(buf);
	return ret;
}

static void reply_string(DBusMessage *m, const char *s)
{
	DBusMessage *r = dbus_message_new_method_return(m);

	if (!r || !dbus_message_append_args(r, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID) ||
	    !dbus_connection_send(c, r, NULL))
		die("reply", NULL);
	dbus_message_unref(r);
}

static void say(const char *what, const char *result)
{
	printf("%s: %s\n", what, result);
	fflush(stdout);
}

static int serve(const char *name)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *held[MAX_HELD], *stalled[MAX_HELD];
	int n_held = 0, total_held = 0, n_stalled = 0, ret, i;

	connect_bus();
	ret = dbus_bus_request_name(c, name, DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
	if (ret != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER)
		die("RequestName", &error);
	printf("ready %s\n", dbus_bus_get_unique_name(c));
	fflush(stdout);

	while (dbus_connection_read_write_dispatch(c, -1)) {
		DBusMessage *m;

		while ((m = dbus_connection_pop_message(c)) != NULL) {
			if (dbus_message_is_method_call(m, IFACE, "Echo")) {
				const char *s;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_STRING, &s,
							  DBUS_TYPE_INVALID))
					reply_string(m, s);
				else
					dbus_error_free(&error);
			} else if (dbus_message_is_method_call(m, IFACE, "Fd")) {
				DBusMessage *r = dbus_message_new_method_return(m);
				int p[2];

				if (!r || pipe(p) < 0 ||
				    write(p[1], "reply with a pipe", 17) != 17)
					die("Fd", NULL);
				close(p[1]);
				if (!dbus_message_append_args(r, DBUS_TYPE_UNIX_FD, &p[0],
							      DBUS_TYPE_INVALID) ||
				    !dbus_connection_send(c, r, NULL))
					die("Fd reply", NULL);
				close(p[0]);
				dbus_message_unref(r);
			} else if (dbus_message_is_method_call(m, IFACE, "Stall")) {
				if (n_stalled < MAX_HELD) {
					stalled[n_stalled++] = dbus_message_ref(m);
					printf("stalling %s %u\n",
					       dbus_message_get_sender(m),
					       dbus_message_get_serial(m));
					fflush(stdout);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "Twice")) {
				DBusMessage *r = dbus_message_new_method_return(m);
				DBusMessage *copy;
				const char *s = "first";
				char *buf;
				int len;

				if (!r || !dbus_message_append_args(r, DBUS_TYPE_STRING, &s,
								    DBUS_TYPE_INVALID) ||
				    !dbus_connection_send(c, r, NULL))
					die("Twice", NULL);
				dbus_connection_flush(c);
				/* the reply as it went out: its serial, and our
				 * SENDER, which the library writes without
				 * editing the message (so on a copy here) */
				copy = dbus_message_copy(r);
				/* (a copy's serial is 0) */
				if (copy)
					dbus_message_set_serial(copy,
						dbus_message_get_serial(r));
				if (!copy || !dbus_message_set_sender(copy,
						dbus_bus_get_unique_name(c)) ||
				    !dbus_message_marshal(copy, &buf, &len))
					die("marshal", NULL);
				dbus_message_unref(copy);
				say("replay", send_raw_bytes(buf, len,
							     dbus_message_get_sender(m)));
				dbus_free(buf);
				dbus_message_unref(r);
				r = dbus_message_new_error(m, IFACE ".Error.Late",
							   "an error after the answer");
				say("late-error", send_raw(r, dbus_message_get_sender(m)));
				dbus_message_unref(r);
			} else if (dbus_message_is_method_call(m, IFACE, "Unasked")) {
				DBusMessage *r = dbus_message_new_method_return(m);
				const char *s = "unasked";

				dbus_message_append_args(r, DBUS_TYPE_STRING, &s,
							 DBUS_TYPE_INVALID);
				say("unasked", send_raw(r, dbus_message_get_sender(m)));
				dbus_message_unref(r);
			} else if (dbus_message_is_method_call(m, IFACE, "Hold")) {
				if (n_held < MAX_HELD) {
					held[n_held++] = dbus_message_ref(m);
					printf("held %d\n", ++total_held);
					fflush(stdout);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "Release")) {
				for (i = 0; i < n_held; i++) {
					reply_string(held[i], "released");
					dbus_message_unref(held[i]);
				}
				n_held = 0;
				for (i = 0; i < n_stalled; i++) {
					reply_string(stalled[i], "stalled");
					dbus_message_unref(stalled[i]);
				}
				n_stalled = 0;
				reply_string(m, "released");
			}
			dbus_message_unref(m);
		}
	}
	return 0;
}

static void print_reply(DBusMessage *r, const char *method)
{
	DBusError error = DBUS_ERROR_INIT;
	const char *s;
	int fd;

	if (dbus_set_error_from_message(&error, r)) {
		printf("error %s: %s\n", error.name, error.message);
		dbus_error_free(&error);
	} else if (!strcmp(method, "Fd") &&
		   dbus_message_get_args(r, NULL, DBUS_TYPE_UNIX_FD, &fd,
					 DBUS_TYPE_INVALID)) {
		char buf[256];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		close(fd);
		printf("reply %s read \"%s\"\n", dbus_message_get_sender(r), buf);
	} else if (dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &s,
					 DBUS_TYPE_INVALID)) {
		printf("reply %s %s\n", dbus_message_get_sender(r), s);
	} else {
		printf("reply %s\n", dbus_message_get_sender(r));
	}
}

static int replies_seen(dbus_uint32_t serial, int wait_ms);

static DBusMessage *new_call(const char *dest, const char *method)
{
	DBusMessage *m = dbus_message_new_method_call(dest, "/", IFACE, method);

	if (!m)
		die("call", NULL);
	return m;
}

static int call(const char *dest, const char *method, int timeout,
		const char *arg)
{
	DBusPendingCall *pending;
	DBusMessage *m, *r;

	connect_bus();
	m = new_call(dest, method);
	if (arg) {
		dbus_message_append_args(m, DBUS_TYPE_STRING, &arg, DBUS_TYPE_INVALID);
	}
	if (!dbus_connection_send_with_reply(c, m, &pending, timeout) || !pending)
		die("send", NULL);
	dbus_connection_flush(c);
	printf("caller %s\nserial %u\n", dbus_bus_get_unique_name(c),
	       dbus_message_get_serial(m));
	fflush(stdout);
	dbus_pending_call_block(pending);
	r = dbus_pending_call_steal_reply(pending);
	print_reply(r, method);
	fflush(stdout);
	dbus_message_unref(r);
	dbus_pending_call_unref(pending);
	/* Twice answers again: stay to see whether it reaches us */
	if (!strcmp(method, "Twice"))
		printf("late-seen %d\n",
		       replies_seen(dbus_message_get_serial(m), 2000));
	dbus_message_unref(m);
	return 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* How many method returns and errors to serial reach the application
 * in wait_ms. */
static int replies_seen(dbus_uint32_t serial, int wait_ms)
{
	long end = now_ms() + wait_ms;
	int seen = 0;

	while (now_ms() < end &&
	       dbus_connection_read_write_dispatch(c, end - now_ms())) {
		DBusMessage *r;

		while ((r = dbus_connection_pop_message(c)) != NULL) {
			if (dbus_message_get_reply_serial(r) == serial) {
				printf("unexpected %s from %s\n",
				       dbus_message_type_to_string(dbus_message_get_type(r)),
				       dbus_message_get_sender(r));
				seen++;
			}
			dbus_message_unref(r);
		}
	}
	return seen;
}

static int unasked(const char *dest, int wait_ms)
{
	dbus_uint32_t serial;
	DBusMessage *m;

	connect_bus();
	m = new_call(dest, "Unasked");
	dbus_message_set_no_reply(m, TRUE);
	if (!dbus_connection_send(c, m, &serial))
		die("send", NULL);
	dbus_connection_flush(c);
	printf("serial %u\n", serial);
	fflush(stdout);
	printf("replies-seen %d\n", replies_seen(serial, wait_ms));
	dbus_message_unref(m);
	return 0;
}

static int many(const char *dest, int n, int timeout)
{
	DBusPendingCall **pending = calloc(n, sizeof(*pending));
	DBusError error = DBUS_ERROR_INIT;
	char first[512] = "";
	int i, replies = 0, errors = 0;

	connect_bus();
	if (!pending)
		die("calloc", NULL);
	for (i = 0; i < n; i++) {
		DBusMessage *m = new_call(dest, "Hold");

		if (!dbus_connection_send_with_reply(c, m, &pending[i], timeout) ||
		    !pending[i])
			die("send", NULL);
		dbus_message_unref(m);
	}
	dbus_connection_flush(c);
	printf("sent %d\n", n);
	fflush(stdout);
	for (i = 0; i < n; i++) {
		DBusMessage *r;

		dbus_pending_call_block(pending[i]);
		r = dbus_pending_call_steal_reply(pending[i]);
		if (dbus_set_error_from_message(&error, r)) {
			if (!errors++)
				snprintf(first, sizeof(first), "%s: %s", error.name,
					 error.message);
			dbus_error_free(&error);
		} else {
			replies++;
		}
		dbus_message_unref(r);
		dbus_pending_call_unref(pending[i]);
	}
	printf("replies=%d errors=%d\n", replies, errors);
	if (errors)
		printf("first-error %s\n", first);
	free(pending);
	return 0;
}

static int forge(const char *dest, dbus_uint32_t serial, int error)
{
	DBusMessage *m;
	const char *s = "forged";

	connect_bus();
	m = dbus_message_new(error ? DBUS_MESSAGE_TYPE_ERROR :
				     DBUS_MESSAGE_TYPE_METHOD_RETURN);
	if (!m || !dbus_message_set_destination(m, dest) ||
	    !dbus_message_set_reply_serial(m, serial) ||
	    (error && !dbus_message_set_error_name(m, IFACE ".Error.Forged")) ||
	    !dbus_message_append_args(m, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID))
		die("forge", NULL);
	say("forge", send_raw(m, dest));
	dbus_message_unref(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "call"))
		return call(argv[2], argv[3], atoi(argv[4]),
			    argc == 6 ? argv[5] : NULL);
	if (argc == 4 && !strcmp(argv[1], "unasked"))
		return unasked(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "many"))
		return many(argv[2], atoi(argv[3]), atoi(argv[4]));
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "forge"))
		return forge(argv[2], strtoul(argv[3], NULL, 0),
			     argc == 5 && !strcmp(argv[4], "error"));
	fprintf(stderr, "usage: see the comment at the top of afbus-reply.c\n");
	return 2;
}
