// SPDX-License-Identifier: GPL-2.0
/*
 * A caller that stops reading, for the AF_BUS tests of a recipient
 * whose queue is full: the service's replies to it must wait, and its
 * replies to everybody else must not.
 *
 * Usage: afbus-slow-caller DEST COUNT SIZE
 *
 * Calls com.example.Echo.Big (SIZE) on DEST COUNT times without
 * waiting, prints "sent PID" (its process id) once the calls are
 * written, then reads nothing
 * until SIGUSR1, so that its receive queue fills with replies.  Then it
 * reads until every call is answered (10 min at most: a guard against a
 * hang, not a wait meant to pass on a slow kernel) and prints
 *   "replies=N ok=N in-order=0|1 errors=N"
 * where ok counts the replies of SIZE bytes and in-order tells whether
 * the answers came in the order of the calls.  Exit status 0 if all
 * COUNT calls got their reply, in order.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dbus/dbus.h>

static volatile sig_atomic_t resumed;

static void on_usr1(int sig)
{
	(void)sig;
	resumed = 1;
}

int main(int argc, char **argv)
{
	int count, size, answered = 0, ok = 0, errors = 0, in_order = 1, i;
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t usr1, old;
	dbus_uint32_t *serials;
	DBusConnection *c;
	DBusMessage *m;
	DBusError error;
	time_t deadline;

	if (argc != 4) {
		fprintf(stderr, "usage: afbus-slow-caller DEST COUNT SIZE\n");
		return 2;
	}
	count = atoi(argv[2]);
	size = atoi(argv[3]);
	serials = calloc(count > 0 ? count : 1, sizeof(*serials));
	if (count <= 0 || size < 0 || !serials)
		return 2;

	/* SIGUSR1 is blocked until sigsuspend() waits for it. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	sigaction(SIGUSR1, &sa, NULL);

	dbus_error_init(&error);
	c = dbus_bus_get(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-slow-caller: %s\n", error.message);
		return 1;
	}

	for (i = 0; i < count; i++) {
		dbus_uint32_t n = size;

		m = dbus_message_new_method_call(argv[1], "/", "com.example.Echo", "Big");
		if (!m || !dbus_message_append_args(m, DBUS_TYPE_UINT32, &n,
						    DBUS_TYPE_INVALID) ||
		    !dbus_connection_send(c, m, &serials[i]))
			return 1;
		dbus_message_unref(m);
	}
	dbus_connection_flush(c);
	printf("sent %d\n", (int)getpid());
	fflush(stdout);

	while (!resumed)
		sigsuspend(&old);

	deadline = time(NULL) + 600;
	while (answered < count && time(NULL) < deadline) {
		if (!dbus_connection_read_write(c, 1000))
			break;
		while ((m = dbus_connection_pop_message(c)) != NULL) {
			dbus_uint32_t rs = dbus_message_get_reply_serial(m);
			const char *s;

			for (i = 0; i < count && serials[i] != rs; i++)
				;
			if (rs == 0 || i == count) {
				dbus_message_unref(m);
				continue;
			}
			if (i != answered)
				in_order = 0;
			answered++;
			if (dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_ERROR)
				errors++;
			else if (dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &s,
						       DBUS_TYPE_INVALID) &&
				 strlen(s) == (size_t)size)
				ok++;
			dbus_message_unref(m);
		}
	}

	printf("replies=%d ok=%d in-order=%d errors=%d\n", answered, ok,
	       in_order, errors);
	return answered == count && ok == count && in_order ? 0 : 1;
}
