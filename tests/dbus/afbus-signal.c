// SPDX-License-Identifier: GPL-2.0
/*
 * Signals on the session bus, for the AF_BUS tests (libdbus).
 *
 * afbus-signal listen [--remove-after N] RULE...
 *	AddMatch each RULE, print "ready UNIQUE-NAME", then one line per
 *	signal received that the daemon did not send:
 *	"INTERFACE.MEMBER ARG0 SENDER".  After N signals it removes its
 *	rules (RemoveMatch) and prints "removed".  Runs until killed.
 *
 * afbus-signal emit [--own NAME] [--self RULE] [--first N] INTERFACE.MEMBER COUNT PREFIX
 *	Optionally become the primary owner of NAME, and AddMatch RULE;
 *	send COUNT signals (path /com/example, arg0 "PREFIX-I", I from N,
 *	default 0) without a destination; with --self, print "self=N": how
 *	many of its own signals came back to it within 2 s.
 *
 * afbus-signal sequence DEST INTERFACE.MEMBER ARG0 [DEST INTERFACE.MEMBER ARG0]...
 *	Connect, print "ready UNIQUE-NAME", read one line from stdin, then
 *	send the signals in the order given on this one connection (path
 *	/com/example, string ARG0), each to the unique or well-known name
 *	DEST, or without a destination when DEST is "-"; flush, print
 *	"sent N" and exit.
 *
 * afbus-signal many-rules COUNT
 *	AddMatch COUNT different rules; print "added=N error=NAME" (NAME
 *	of the first error, or "none").
 *
 * afbus-signal churn FIRST COUNT
 *	For I from FIRST to FIRST+COUNT-1: AddMatch and RemoveMatch a rule
 *	for the signals of com.example.churn.mI, and RequestName and
 *	ReleaseName com.example.churn.oI; a name the bus has not seen
 *	each time.  The calls are sent without waiting for their replies,
 *	with a GetId call every 100 rounds (and at the end) to keep pace
 *	with the daemon; prints "churned=N errors=E".
 *
 * afbus-signal --uid UID ...
 *	Any of the above as user and group UID, without supplementary
 *	groups (set before connecting).
 *
 * Exit status 0 on success, 1 on any D-Bus error (printed).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <unistd.h>
#include <dbus/dbus.h>

static int fail(const char *what, DBusError *error)
{
	fprintf(stderr, "afbus-signal: %s: %s: %s\n", what,
		error->name, error->message);
	return 1;
}

static DBusConnection *connect_bus(void)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);

	if (!c) {
		fail("connect", &error);
		exit(1);
	}
	return c;
}

/* The next signal not from the daemon, or NULL after @timeout_ms. */
static DBusMessage *next_signal(DBusConnection *c, int timeout_ms)
{
	DBusMessage *m;

	for (;;) {
		m = dbus_connection_pop_message(c);
		if (!m) {
			if (!dbus_connection_read_write(c, timeout_ms))
				exit(1);	/* disconnected */
			m = dbus_connection_pop_message(c);
			if (!m)
				return NULL;
		}
		if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_SIGNAL &&
		    !dbus_message_has_sender(m, DBUS_SERVICE_DBUS))
			return m;
		dbus_message_unref(m);
	}
}

static int listen_main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	long remove_after = -1, n = 0;
	int i = 0;

	if (argc > 1 && strcmp(argv[0], "--remove-after") == 0) {
		remove_after = atol(argv[1]);
		argc -= 2;
		argv += 2;
	}
	for (i = 0; i < argc; i++) {
		dbus_bus_add_match(c, argv[i], &error);
		if (dbus_error_is_set(&error))
			return fail(argv[i], &error);
	}
	printf("ready %s\n", dbus_bus_get_unique_name(c));
	fflush(stdout);

	for (;;) {
		DBusMessage *m = next_signal(c, -1);
		const char *arg0 = "-";

		if (!m)
			continue;
		dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &arg0,
				      DBUS_TYPE_INVALID);
		printf("%s.%s %s %s\n", dbus_message_get_interface(m),
		       dbus_message_get_member(m), arg0,
		       dbus_message_get_sender(m));
		fflush(stdout);
		dbus_message_unref(m);
		if (++n == remove_after) {
			for (i = 0; i < argc; i++) {
				dbus_bus_remove_match(c, argv[i], &error);
				if (dbus_error_is_set(&error))
					return fail(argv[i], &error);
			}
			printf("removed\n");
			fflush(stdout);
		}
	}
}

static int emit_main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	const char *self = NULL;
	char iface[256], arg[256], *dot;
	long count, first = 0, i, seen = 0;

	while (argc > 1 && argv[0][0] == '-') {
		if (strcmp(argv[0], "--own") == 0) {
			if (dbus_bus_request_name(c, argv[1],
						  DBUS_NAME_FLAG_DO_NOT_QUEUE,
						  &error) !=
			    DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
				fprintf(stderr, "afbus-signal: %s not owned\n",
					argv[1]);
				return 1;
			}
		} else if (strcmp(argv[0], "--self") == 0) {
			self = argv[1];
			dbus_bus_add_match(c, self, &error);
		} else if (strcmp(argv[0], "--first") == 0) {
			first = atol(argv[1]);
		} else {
			break;
		}
		if (dbus_error_is_set(&error))
			return fail(argv[1], &error);
		argc -= 2;
		argv += 2;
	}
	if (argc != 3 || strlen(argv[0]) >= sizeof(iface) ||
	    !(dot = strrchr(argv[0], '.'))) {
		fprintf(stderr, "afbus-signal: bad emit arguments\n");
		return 2;
	}
	strcpy(iface, argv[0]);
	iface[dot - argv[0]] = '\0';
	count = first + atol(argv[1]);

	for (i = first; i < count; i++) {
		DBusMessage *m = dbus_message_new_signal("/com/example", iface,
							 dot + 1);
		const char *s = arg;

		snprintf(arg, sizeof(arg), "%s-%ld", argv[2], i);
		if (!m || !dbus_message_append_args(m, DBUS_TYPE_STRING, &s,
						    DBUS_TYPE_INVALID) ||
		    !dbus_connection_send(c, m, NULL))
			return 1;
		dbus_message_unref(m);
	}
	dbus_connection_flush(c);

	if (self) {
		DBusMessage *m;

		while ((m = next_signal(c, 2000))) {
			if (dbus_message_has_sender(m, dbus_bus_get_unique_name(c)))
				seen++;
			dbus_message_unref(m);
		}
		printf("self=%ld\n", seen);
	}
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}

static int sequence_main(int argc, char **argv)
{
	DBusConnection *c = connect_bus();
	char line[64];
	int i;

	if (argc == 0 || argc % 3 != 0) {
		fprintf(stderr, "afbus-signal: bad sequence arguments\n");
		return 2;
	}
	printf("ready %s\n", dbus_bus_get_unique_name(c));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	for (i = 0; i < argc; i += 3) {
		const char *dest = argv[i], *arg0 = argv[i + 2];
		char iface[256], *dot;
		DBusMessage *m;

		if (strlen(argv[i + 1]) >= sizeof(iface) ||
		    !(dot = strrchr(argv[i + 1], '.'))) {
			fprintf(stderr, "afbus-signal: bad signal %s\n", argv[i + 1]);
			return 2;
		}
		strcpy(iface, argv[i + 1]);
		iface[dot - argv[i + 1]] = '\0';
		m = dbus_message_new_signal("/com/example", iface,
					    dot + 1);
		if (!m || (strcmp(dest, "-") != 0 &&
			   !dbus_message_set_destination(m, dest)) ||
		    !dbus_message_append_args(m, DBUS_TYPE_STRING, &arg0,
					      DBUS_TYPE_INVALID) ||
		    !dbus_connection_send(c, m, NULL))
			return 1;
		dbus_message_unref(m);
	}
	dbus_connection_flush(c);
	printf("sent %d\n", argc / 3);
	fflush(stdout);
	dbus_connection_close(c);
	dbus_connection_unref(c);
	return 0;
}

static int many_rules_main(long count)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c = connect_bus();
	char rule[128];
	long i;

	for (i = 0; i < count; i++) {
		snprintf(rule, sizeof(rule),
			 "type='signal',interface='com.example.Many',member='M%ld'", i);
		dbus_bus_add_match(c, rule, &error);
		if (dbus_error_is_set(&error))
			break;
	}
	printf("added=%ld error=%s\n", i, error.name ? error.name : "none");
	if (error.name)
		fprintf(stderr, "afbus-signal: %s\n", error.message);
	return 0;
}

/* Sends the bus driver METHOD (s arg), not waiting for its reply. */
static int send_driver(DBusConnection *c, const char *method, const char *arg)
{
	DBusMessage *m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
						      DBUS_INTERFACE_DBUS, method);
	dbus_uint32_t flags = 0;
	int ok;

	if (!m)
		return 0;
	dbus_message_set_no_reply(m, TRUE);
	ok = dbus_message_append_args(m, DBUS_TYPE_STRING, &arg, DBUS_TYPE_INVALID) &&
	     (strcmp(method, "RequestName") != 0 ||
	      dbus_message_append_args(m, DBUS_TYPE_UINT32, &flags, DBUS_TYPE_INVALID)) &&
	     dbus_connection_send(c, m, NULL);
	dbus_message_unref(m);
	return ok;
}

/* A call to the daemon that waits for its reply: 0 if it failed. */
static int sync_daemon(DBusConnection *c)
{
	DBusError error = DBUS_ERROR_INIT;
	char *id = dbus_bus_get_id(c, &error);

	if (!id) {
		fprintf(stderr, "afbus-signal: GetId: %s\n", error.message);
		dbus_error_free(&error);
		return 0;
	}
	dbus_free(id);
	return 1;
}

static int churn_main(long first, long count)
{
	DBusConnection *c = connect_bus();
	char rule[128], name[64];
	long i, errors = 0;

	for (i = first; i < first + count; i++) {
		snprintf(rule, sizeof(rule),
			 "type='signal',sender='com.example.churn.m%ld'", i);
		snprintf(name, sizeof(name), "com.example.churn.o%ld", i);
		if (!send_driver(c, "AddMatch", rule) ||
		    !send_driver(c, "RemoveMatch", rule) ||
		    !send_driver(c, "RequestName", name) ||
		    !send_driver(c, "ReleaseName", name))
			errors++;
		if ((i - first) % 100 == 99 && !sync_daemon(c))
			errors++;
	}
	if (!sync_daemon(c))
		errors++;
	printf("churned=%ld errors=%ld\n", count, errors);
	return errors != 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "--uid") == 0) {
		uid_t uid = atol(argv[2]);

		if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid)) {
			perror("afbus-signal: --uid");
			return 2;
		}
		argv[2] = argv[0];
		argc -= 2;
		argv += 2;
	}
	if (argc >= 2 && strcmp(argv[1], "listen") == 0)
		return listen_main(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "emit") == 0)
		return emit_main(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "sequence") == 0)
		return sequence_main(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "many-rules") == 0)
		return many_rules_main(atol(argv[2]));
	if (argc == 4 && strcmp(argv[1], "churn") == 0)
		return churn_main(atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: see the comment at the top of afbus-signal.c\n");
	return 2;
}
