// SPDX-License-Identifier: GPL-2.0
/*
 * A small D-Bus service on libdbus for the AF_BUS tests: it connects to
 * the session bus, asks for a well-known name and answers, on any path,
 * interface com.example.Echo:
 *   Echo (s) -> s          the string back
 *   Big (u n) -> s         a string of n bytes ('x'), at most 1 MiB
 *   Fail ()                the error com.example.Echo.Error.Failed
 *   Whoami () -> s         its own unique name
 *   CallerUid () -> s      "uid N": the caller's uid, which it first
 *                          asks the daemon (GetConnectionUnixUser)
 *   ReadFd (h) -> s        what it reads from the file descriptor
 *   Hang ()                never replies
 *   Stall (u ms) -> s      sleeps ms milliseconds, or until SIGUSR1,
 *                          without reading its socket, then answers
 *                          "stalled"
 *   Seq (u n)              records n, answering nothing (a call
 *                          that asks for a reply gets "ok")
 *   SeqReport () -> s      "seq=N in-order=0|1": how many Seq calls
 *                          came, and whether each n was one more than
 *                          the one before, starting at 0
 *   Signal (s arg) -> s    emits the signal com.example.Echo.Answer
 *                          (path /com/example, arg0 ARG) for
 *                          everybody, then answers "signalled"
 *   Quit ()                replies, then exits
 *
 * Usage: afbus-echo-service NAME [FLAGS]
 * FLAGS as for RequestName (1 allow replacement, 2 replace existing,
 * 4 do not queue).  It prints "ready UNIQUE-NAME" once it owns NAME
 * (or "queued UNIQUE-NAME"), "lost NAME" when it loses it, and exits 0
 * on Quit or on disconnection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dbus/dbus.h>

#define IFACE "com.example.Echo"

static void on_usr1(int sig)
{
	(void)sig;
}

static void die(const char *what, DBusError *error)
{
	fprintf(stderr, "afbus-echo-service: %s: %s\n", what,
		error && dbus_error_is_set(error) ? error->message : "failed");
	exit(1);
}

static void reply_string(DBusConnection *c, DBusMessage *m, const char *s)
{
	DBusMessage *r = dbus_message_new_method_return(m);

	if (!r || !dbus_message_append_args(r, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID) ||
	    !dbus_connection_send(c, r, NULL))
		die("reply", NULL);
	dbus_message_unref(r);
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusConnection *c;
	const char *name;
	unsigned int flags, n_seq = 0;
	int ret, seq_in_order = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: afbus-echo-service NAME [FLAGS]\n");
		return 2;
	}
	name = argv[1];
	flags = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
	/* no SA_RESTART: the signal interrupts a Stall */
	sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = on_usr1 }, NULL);

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c)
		die("connect", &error);
	dbus_connection_set_exit_on_disconnect(c, FALSE);

	ret = dbus_bus_request_name(c, name, flags, &error);
	if (ret < 0)
		die("RequestName", &error);
	printf("%s %s\n", ret == DBUS_REQUEST_NAME_REPLY_IN_QUEUE ? "queued" : "ready",
	       dbus_bus_get_unique_name(c));
	fflush(stdout);

	while (dbus_connection_read_write_dispatch(c, -1)) {
		DBusMessage *m;

		while ((m = dbus_connection_pop_message(c)) != NULL) {
			if (dbus_message_is_method_call(m, IFACE, "Echo")) {
				const char *s;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_STRING, &s,
							  DBUS_TYPE_INVALID))
					reply_string(c, m, s);
				else
					dbus_error_free(&error);
			} else if (dbus_message_is_method_call(m, IFACE, "Seq")) {
				dbus_uint32_t n;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_UINT32, &n,
							  DBUS_TYPE_INVALID)) {
					if (n != n_seq)
						seq_in_order = 0;
					n_seq++;
					if (!dbus_message_get_no_reply(m))
						reply_string(c, m, "ok");
				} else {
					dbus_error_free(&error);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "SeqReport")) {
				char report[64];

				snprintf(report, sizeof(report), "seq=%u in-order=%d",
					 n_seq, seq_in_order);
				reply_string(c, m, report);
			} else if (dbus_message_is_method_call(m, IFACE, "Big")) {
				dbus_uint32_t n;
				char *big;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_UINT32, &n,
							  DBUS_TYPE_INVALID) &&
				    n <= 1024 * 1024 && (big = malloc(n + 1)) != NULL) {
					memset(big, 'x', n);
					big[n] = '\0';
					reply_string(c, m, big);
					free(big);
				} else {
					dbus_error_free(&error);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "ReadFd")) {
				int fd;
				char buf[256];
				ssize_t n;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_UNIX_FD, &fd,
							  DBUS_TYPE_INVALID)) {
					n = read(fd, buf, sizeof(buf) - 1);
					buf[n > 0 ? n : 0] = '\0';
					close(fd);
					reply_string(c, m, buf);
				} else {
					dbus_error_free(&error);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "Stall")) {
				dbus_uint32_t ms;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_UINT32, &ms,
							  DBUS_TYPE_INVALID)) {
					struct timespec ts = {
						.tv_sec = ms / 1000,
						.tv_nsec = (ms % 1000) * 1000000L,
					};

					/* tests wait for this line: whatever
					 * is sent after it stays in the
					 * kernel's queue; SIGUSR1 ends the
					 * stall early (EINTR) */
					printf("stalling\n");
					fflush(stdout);
					nanosleep(&ts, NULL);
					reply_string(c, m, "stalled");
				} else {
					dbus_error_free(&error);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "Hang")) {
				/* no reply; tests wait for the call to be here */
				printf("hang\n");
				fflush(stdout);
			} else if (dbus_message_is_method_call(m, IFACE, "Signal")) {
				const char *arg;
				DBusMessage *sig;

				if (dbus_message_get_args(m, &error, DBUS_TYPE_STRING, &arg,
							  DBUS_TYPE_INVALID)) {
					sig = dbus_message_new_signal("/com/example", IFACE,
								      "Answer");
					if (sig && dbus_message_append_args(sig, DBUS_TYPE_STRING,
									    &arg,
									    DBUS_TYPE_INVALID))
						dbus_connection_send(c, sig, NULL);
					if (sig)
						dbus_message_unref(sig);
					reply_string(c, m, "signalled");
				} else {
					dbus_error_free(&error);
				}
			} else if (dbus_message_is_method_call(m, IFACE, "Whoami")) {
				reply_string(c, m, dbus_bus_get_unique_name(c));
			} else if (dbus_message_is_method_call(m, IFACE, "CallerUid")) {
				unsigned long uid;
				char buf[32];

				uid = dbus_bus_get_unix_user(c, dbus_message_get_sender(m),
							     &error);
				if (dbus_error_is_set(&error)) {
					snprintf(buf, sizeof(buf), "error");
					dbus_error_free(&error);
				} else {
					snprintf(buf, sizeof(buf), "uid %lu", uid);
				}
				reply_string(c, m, buf);
			} else if (dbus_message_is_method_call(m, IFACE, "Fail")) {
				DBusMessage *r = dbus_message_new_error(m, IFACE ".Error.Failed",
									"failing as asked");
				dbus_connection_send(c, r, NULL);
				dbus_message_unref(r);
			} else if (dbus_message_is_method_call(m, IFACE, "Quit")) {
				reply_string(c, m, "bye");
				dbus_connection_flush(c);
				dbus_message_unref(m);
				dbus_connection_close(c);
				dbus_connection_unref(c);
				return 0;
			} else if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS, "NameLost")) {
				const char *lost;

				if (dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &lost,
							  DBUS_TYPE_INVALID)) {
					printf("lost %s\n", lost);
					fflush(stdout);
				}
			} else if (dbus_message_is_signal(m, DBUS_INTERFACE_DBUS, "NameAcquired")) {
				const char *got;

				if (dbus_message_get_args(m, NULL, DBUS_TYPE_STRING, &got,
							  DBUS_TYPE_INVALID) && strcmp(got, name) == 0) {
					printf("acquired %s\n", got);
					fflush(stdout);
				}
			}
			dbus_message_unref(m);
		}
	}
	dbus_connection_unref(c);
	return 0;
}
