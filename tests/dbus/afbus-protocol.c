// SPDX-License-Identifier: GPL-2.0
/*
 * A scriptable client and a service for the tests of the bus protocol
 * between the fork's libdbus and dbus-daemon (issue 35): forged internal
 * signals, driver calls and the order of later sends, Forwarded, the
 * reply limits after ReloadConfig, and a service that must not wait
 * behind one recipient.
 *
 * afbus-protocol client
 *	Connects to the session bus ($DBUS_SESSION_BUS_ADDRESS) and runs
 *	the commands it reads on standard input, one a line, printing one
 *	result line for each (and flushing it):
 *	  name                         "name UNIQUE-NAME"
 *	  call DEST PATH IFACE.METHOD TIMEOUT-MS [ARG...]
 *	                               a blocking call: "reply [VALUE]" or
 *	                               "error NAME: MESSAGE", then a line
 *	                               "elapsed-ms N"
 *	  send DEST PATH IFACE.METHOD [ARG...]
 *	                               a call whose reply nobody waits for
 *	                               (it is counted when it comes):
 *	                               "sent SERIAL"
 *	  signal DEST|- PATH IFACE.MEMBER [ARG...]
 *	                               "sent SERIAL" ("-": no destination)
 *	  signal-twice DEST|- PATH IFACE.MEMBER [ARG...]
 *	                               sends one signal message twice, as
 *	                               an application may share a message,
 *	                               and flushes: "sent-twice sender=S",
 *	                               S the message's SENDER afterwards
 *	                               ("-" if none: the library did not
 *	                               edit the locked message)
 *	  match RULE                   AddMatch, waiting for its reply:
 *	                               "match ok" or "match error NAME"
 *	  own NAME                     RequestName NAME (flags 0), waiting:
 *	                               "own CODE" or "own error NAME"
 *	  own-async NAME               the same without waiting: "own-sent"
 *	  match-async RULE             AddMatch without waiting, as
 *	                               dbus_bus_add_match() with no error:
 *	                               "match-sent"
 *	  read MS                      reads and dispatches for MS ms:
 *	                               "read signals=N replies=M" (what came
 *	                               meanwhile)
 *	  wait-signals MEMBER N MS     reads until N signals named MEMBER
 *	                               came since the start, for MS ms at
 *	                               most: "signals MEMBER=K"
 *	  sleep MS                     does not read for MS ms: "slept"
 *	  exit
 *	and then "= N", N counting the commands from 1.
 *	ARG is s:STRING, u:NUMBER or i:NUMBER; RULE has no spaces.
 *	"stray N" at the end: the method returns and errors that reached
 *	the application outside blocking calls.
 *
 * afbus-protocol serve NAME
 *	Owns NAME (prints "ready UNIQUE-NAME", or "queued UNIQUE-NAME")
 *	and answers, on any path, interface com.example.Proto:
 *	  Echo (s) -> s        the string back
 *	  Hold ()              keeps the call unanswered
 *	  Release () -> u      answers each held call "released", then
 *	                       this one with how many
 *	  Emit (u n) -> u      sends n signals Tick (u i), no destination,
 *	                       then answers n
 *	  EmitThenReply () -> s  sends the signal Answer, then answers
 *	  CallName (s dest, i timeout-ms) -> s
 *	                       calls Echo on dest, blocking, and answers
 *	                       "reply ms=N" or "error NAME ms=N"
 *	  Sleep (u ms) -> s    does not read for ms, then answers "slept"
 *	  Quit ()              answers, then exits
 *	It exits 0 on Quit or when the bus goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dbus/dbus.h>

#define IFACE "com.example.Proto"
#define MAX_HELD 4096
#define MAX_COUNTED 32

static DBusConnection *c;
static struct {
	char member[64];
	long n;
} counted[MAX_COUNTED];
static long n_signals, n_replies;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void die(const char *what, DBusError *error)
{
	fprintf(stderr, "afbus-protocol: %s: %s\n", what,
		error && dbus_error_is_set(error) ? error->message : "failed");
	exit(1);
}

static long signals_named(const char *member)
{
	int i;

	for (i = 0; i < MAX_COUNTED && counted[i].member[0]; i++)
		if (strcmp(counted[i].member, member) == 0)
			return counted[i].n;
	return 0;
}

static DBusHandlerResult client_filter(DBusConnection *conn, DBusMessage *m,
				       void *data)
{
	const char *member = dbus_message_get_member(m);
	int i;

	(void)conn;
	(void)data;
	switch (dbus_message_get_type(m)) {
	case DBUS_MESSAGE_TYPE_SIGNAL:
		n_signals++;
		for (i = 0; i < MAX_COUNTED; i++) {
			if (!counted[i].member[0])
				snprintf(counted[i].member,
					 sizeof(counted[i].member), "%s",
					 member ? member : "");
			if (strcmp(counted[i].member, member ? member : "") == 0) {
				counted[i].n++;
				break;
			}
		}
		break;
	case DBUS_MESSAGE_TYPE_METHOD_RETURN:
	case DBUS_MESSAGE_TYPE_ERROR:
		n_replies++;
		break;
	}
	return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

/* Appends the arguments ARG... (s:, u:, i:) to @m. */
static int append_args(DBusMessage *m, char **args)
{
	for (; *args; args++) {
		const char *a = *args + 2;
		dbus_uint32_t u;
		dbus_int32_t i;

		if (strncmp(*args, "s:", 2) == 0) {
			if (!dbus_message_append_args(m, DBUS_TYPE_STRING, &a,
						      DBUS_TYPE_INVALID))
				return 0;
		} else if (strncmp(*args, "u:", 2) == 0) {
			u = strtoul(a, NULL, 0);
			if (!dbus_message_append_args(m, DBUS_TYPE_UINT32, &u,
						      DBUS_TYPE_INVALID))
				return 0;
		} else if (strncmp(*args, "i:", 2) == 0) {
			i = strtol(a, NULL, 0);
			if (!dbus_message_append_args(m, DBUS_TYPE_INT32, &i,
						      DBUS_TYPE_INVALID))
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

/* IFACE.MEMBER: the message of that type to DEST at PATH with args. */
static DBusMessage *new_message(int type, const char *dest, const char *path,
				const char *what, char **args)
{
	char iface[256];
	const char *dot = strrchr(what, '.');
	DBusMessage *m;

	if (!dot || (size_t)(dot - what) >= sizeof(iface))
		return NULL;
	memcpy(iface, what, dot - what);
	iface[dot - what] = '\0';
	if (type == DBUS_MESSAGE_TYPE_SIGNAL) {
		m = dbus_message_new_signal(path, iface, dot + 1);
		if (m && strcmp(dest, "-") != 0)
			dbus_message_set_destination(m, dest);
	} else {
		m = dbus_message_new_method_call(dest, path, iface, dot + 1);
	}
	if (m && !append_args(m, args)) {
		dbus_message_unref(m);
		return NULL;
	}
	return m;
}

/* The first argument of @m as text, or "". */
static void print_first_arg(DBusMessage *m)
{
	DBusMessageIter iter;
	const char *s;
	dbus_uint32_t u;
	dbus_int32_t i;

	if (!dbus_message_iter_init(m, &iter))
		return;
	switch (dbus_message_iter_get_arg_type(&iter)) {
	case DBUS_TYPE_STRING:
		dbus_message_iter_get_basic(&iter, &s);
		printf(" %s", s);
		break;
	case DBUS_TYPE_UINT32:
		dbus_message_iter_get_basic(&iter, &u);
		printf(" %u", u);
		break;
	case DBUS_TYPE_INT32:
		dbus_message_iter_get_basic(&iter, &i);
		printf(" %d", i);
		break;
	}
}

static void read_for(long ms)
{
	long end = now_ms() + ms, left;

	while ((left = end - now_ms()) > 0) {
		if (!dbus_connection_read_write_dispatch(c, (int)left))
			break;
	}
	while (dbus_connection_dispatch(c) == DBUS_DISPATCH_DATA_REMAINS)
		;
}

static int client(void)
{
	DBusError error = DBUS_ERROR_INIT;
	char line[4096];
	int n_commands = 0;

	c = dbus_bus_get(DBUS_BUS_SESSION, &error);
	if (!c)
		die("connect", &error);
	if (!dbus_connection_add_filter(c, client_filter, NULL, NULL))
		die("add filter", NULL);

	while (fgets(line, sizeof(line), stdin)) {
		char *argv[64];
		int argc = 0;
		char *tok, *save = NULL;

		for (tok = strtok_r(line, " \t\n", &save); tok && argc < 63;
		     tok = strtok_r(NULL, " \t\n", &save))
			argv[argc++] = tok;
		argv[argc] = NULL;
		if (argc == 0)
			continue;

		if (strcmp(argv[0], "name") == 0) {
			printf("name %s\n", dbus_bus_get_unique_name(c));
		} else if (strcmp(argv[0], "call") == 0 && argc >= 5) {
			DBusMessage *m, *r;
			long start;

			m = new_message(DBUS_MESSAGE_TYPE_METHOD_CALL, argv[1],
					argv[2], argv[3], argv + 5);
			if (!m)
				die("bad call", NULL);
			start = now_ms();
			r = dbus_connection_send_with_reply_and_block(c, m,
								      atoi(argv[4]),
								      &error);
			if (r) {
				printf("reply");
				print_first_arg(r);
				printf("\n");
				dbus_message_unref(r);
			} else {
				printf("error %s: %s\n", error.name,
				       error.message);
				dbus_error_free(&error);
			}
			printf("elapsed-ms %ld\n", now_ms() - start);
			dbus_message_unref(m);
		} else if ((strcmp(argv[0], "send") == 0 && argc >= 4) ||
			   (strcmp(argv[0], "signal") == 0 && argc >= 4)) {
			int type = argv[0][1] == 'e' ?
				DBUS_MESSAGE_TYPE_METHOD_CALL :
				DBUS_MESSAGE_TYPE_SIGNAL;
			DBusMessage *m = new_message(type, argv[1], argv[2],
						     argv[3], argv + 4);
			dbus_uint32_t serial;

			if (!m || !dbus_connection_send(c, m, &serial))
				die("send", NULL);
			printf("sent %u\n", serial);
			dbus_message_unref(m);
		} else if (strcmp(argv[0], "signal-twice") == 0 && argc >= 4) {
			DBusMessage *m = new_message(DBUS_MESSAGE_TYPE_SIGNAL,
						     argv[1], argv[2], argv[3],
						     argv + 4);
			const char *sender;

			if (!m || !dbus_connection_send(c, m, NULL) ||
			    !dbus_connection_send(c, m, NULL))
				die("send", NULL);
			dbus_connection_flush(c);
			sender = dbus_message_get_sender(m);
			printf("sent-twice sender=%s\n", sender ? sender : "-");
			dbus_message_unref(m);
		} else if (strcmp(argv[0], "match") == 0 && argc == 2) {
			dbus_bus_add_match(c, argv[1], &error);
			if (dbus_error_is_set(&error)) {
				printf("match error %s\n", error.name);
				dbus_error_free(&error);
			} else {
				printf("match ok\n");
			}
		} else if (strcmp(argv[0], "match-async") == 0 && argc == 2) {
			dbus_bus_add_match(c, argv[1], NULL);
			printf("match-sent\n");
		} else if (strcmp(argv[0], "own") == 0 && argc == 2) {
			int ret = dbus_bus_request_name(c, argv[1], 0, &error);

			if (ret < 0) {
				printf("own error %s\n", error.name);
				dbus_error_free(&error);
			} else {
				printf("own %d\n", ret);
			}
		} else if (strcmp(argv[0], "own-async") == 0 && argc == 2) {
			const char *name = argv[1];
			dbus_uint32_t flags = 0;
			DBusMessage *m = dbus_message_new_method_call(
				DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
				DBUS_INTERFACE_DBUS, "RequestName");

			if (!m || !dbus_message_append_args(m,
					DBUS_TYPE_STRING, &name,
					DBUS_TYPE_UINT32, &flags,
					DBUS_TYPE_INVALID) ||
			    !dbus_connection_send(c, m, NULL))
				die("RequestName", NULL);
			dbus_message_unref(m);
			printf("own-sent\n");
		} else if (strcmp(argv[0], "read") == 0 && argc == 2) {
			long s0 = n_signals, r0 = n_replies;

			read_for(atol(argv[1]));
			printf("read signals=%ld replies=%ld\n",
			       n_signals - s0, n_replies - r0);
		} else if (strcmp(argv[0], "wait-signals") == 0 && argc == 4) {
			long want = atol(argv[2]);
			long end = now_ms() + atol(argv[3]);

			while (signals_named(argv[1]) < want && now_ms() < end)
				read_for(50);
			printf("signals %s=%ld\n", argv[1],
			       signals_named(argv[1]));
		} else if (strcmp(argv[0], "sleep") == 0 && argc == 2) {
			usleep(atol(argv[1]) * 1000);
			printf("slept\n");
		} else if (strcmp(argv[0], "exit") == 0) {
			break;
		} else {
			printf("bad command %s\n", argv[0]);
		}
		printf("= %d\n", ++n_commands);
		fflush(stdout);
	}
	printf("stray %ld\n", n_replies);
	return 0;
}

static DBusMessage *held[MAX_HELD];
static int n_held;

static void reply_string(DBusMessage *m, const char *s)
{
	DBusMessage *r = dbus_message_new_method_return(m);

	if (!r || !dbus_message_append_args(r, DBUS_TYPE_STRING, &s,
					    DBUS_TYPE_INVALID) ||
	    !dbus_connection_send(c, r, NULL))
		die("reply", NULL);
	dbus_message_unref(r);
}

static void reply_u(DBusMessage *m, dbus_uint32_t u)
{
	DBusMessage *r = dbus_message_new_method_return(m);

	if (!r || !dbus_message_append_args(r, DBUS_TYPE_UINT32, &u,
					    DBUS_TYPE_INVALID) ||
	    !dbus_connection_send(c, r, NULL))
		die("reply", NULL);
	dbus_message_unref(r);
}

static void emit(const char *member, dbus_uint32_t i)
{
	DBusMessage *s = dbus_message_new_signal("/com/example/Proto", IFACE,
						 member);

	if (!s || !dbus_message_append_args(s, DBUS_TYPE_UINT32, &i,
					    DBUS_TYPE_INVALID) ||
	    !dbus_connection_send(c, s, NULL))
		die("signal", NULL);
	dbus_message_unref(s);
}

static int quit;

static DBusHandlerResult service_filter(DBusConnection *conn, DBusMessage *m,
					void *data)
{
	DBusError error = DBUS_ERROR_INIT;
	char text[512];
	dbus_uint32_t u, i;

	(void)conn;
	(void)data;
	if (dbus_message_is_method_call(m, IFACE, "Echo")) {
		const char *s;

		if (!dbus_message_get_args(m, &error, DBUS_TYPE_STRING, &s,
					   DBUS_TYPE_INVALID))
			die("Echo", &error);
		reply_string(m, s);
	} else if (dbus_message_is_method_call(m, IFACE, "Hold")) {
		if (n_held < MAX_HELD)
			held[n_held++] = dbus_message_ref(m);
	} else if (dbus_message_is_method_call(m, IFACE, "Release")) {
		u = n_held;
		while (n_held > 0) {
			reply_string(held[--n_held], "released");
			dbus_message_unref(held[n_held]);
		}
		reply_u(m, u);
	} else if (dbus_message_is_method_call(m, IFACE, "Emit")) {
		if (!dbus_message_get_args(m, &error, DBUS_TYPE_UINT32, &u,
					   DBUS_TYPE_INVALID))
			die("Emit", &error);
		for (i = 0; i < u; i++)
			emit("Tick", i);
		reply_u(m, u);
	} else if (dbus_message_is_method_call(m, IFACE, "EmitThenReply")) {
		emit("Answer", 0);
		reply_string(m, "answered");
	} else if (dbus_message_is_method_call(m, IFACE, "CallName")) {
		const char *dest, *via = "via";
		dbus_int32_t timeout;
		DBusMessage *call, *r;
		long start;

		if (!dbus_message_get_args(m, &error, DBUS_TYPE_STRING, &dest,
					   DBUS_TYPE_INT32, &timeout,
					   DBUS_TYPE_INVALID))
			die("CallName", &error);
		call = dbus_message_new_method_call(dest, "/", IFACE, "Echo");
		if (!call || !dbus_message_append_args(call, DBUS_TYPE_STRING,
						       &via, DBUS_TYPE_INVALID))
			die("CallName", NULL);
		start = now_ms();
		r = dbus_connection_send_with_reply_and_block(c, call, timeout,
							      &error);
		if (r) {
			snprintf(text, sizeof(text), "reply ms=%ld",
				 now_ms() - start);
			dbus_message_unref(r);
		} else {
			snprintf(text, sizeof(text), "error %s ms=%ld",
				 error.name, now_ms() - start);
			dbus_error_free(&error);
		}
		dbus_message_unref(call);
		reply_string(m, text);
	} else if (dbus_message_is_method_call(m, IFACE, "Sleep")) {
		if (!dbus_message_get_args(m, &error, DBUS_TYPE_UINT32, &u,
					   DBUS_TYPE_INVALID))
			die("Sleep", &error);
		usleep(u * 1000);
		reply_string(m, "slept");
	} else if (dbus_message_is_method_call(m, IFACE, "Quit")) {
		reply_string(m, "bye");
		quit = 1;
	} else if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
		   dbus_message_has_interface(m, IFACE)) {
		DBusMessage *r = dbus_message_new_error(m,
			DBUS_ERROR_UNKNOWN_METHOD, "no such method");

		if (!r || !dbus_connection_send(c, r, NULL))
			die("error reply", NULL);
		dbus_message_unref(r);
	} else {
		return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
	}
	return DBUS_HANDLER_RESULT_HANDLED;
}

static int serve(const char *name)
{
	DBusError error = DBUS_ERROR_INIT;
	int ret;

	c = dbus_bus_get(DBUS_BUS_SESSION, &error);
	if (!c)
		die("connect", &error);
	if (!dbus_connection_add_filter(c, service_filter, NULL, NULL))
		die("add filter", NULL);
	ret = dbus_bus_request_name(c, name, 0, &error);
	if (ret < 0)
		die("RequestName", &error);
	printf("%s %s\n",
	       ret == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER ? "ready" : "queued",
	       dbus_bus_get_unique_name(c));
	fflush(stdout);
	while (!quit && dbus_connection_read_write_dispatch(c, -1))
		;
	dbus_connection_flush(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "client") == 0)
		return client();
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	fprintf(stderr, "usage: afbus-protocol client | serve NAME\n");
	return 2;
}
