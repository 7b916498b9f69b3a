// SPDX-License-Identifier: GPL-2.0
/*
 * Sends messages carrying unix fds and says what came of each.
 *
 * Usage: afbus-fds [--signal|--no-reply|--raw] [--count K] [--then] DEST N
 * Sends K (default 1) messages com.example.Echo.ReadFd to DEST on the
 * session bus, each with N unix fds (N copies of a pipe that holds
 * "through AF_BUS"), one after the other on one connection, and prints
 * one line for each:
 *   reply STRING                   the method return's string
 *   error NAME from SENDER: TEXT   an error answering it
 *   no error                       (signals, --no-reply) nothing in 2 s
 *   disconnected                   we were disconnected
 * A method call waits 10 s for its answer ("timeout" then).
 * --signal sends a signal (to DEST) instead, --no-reply a call that
 * awaits no reply; both then wait 2 s for an error answering it.
 * --raw sends the call on the AF_BUS socket itself, bypassing libdbus
 * (DEST must be a unique name :0.HEX), so that N may be more than
 * libdbus sends.  --then ends with a call without fds to DEST
 * (com.example.Echo.Echo "then"), its outcome printed as "then: ...".
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/bus.h>
#include <dbus/dbus.h>

#ifndef AF_BUS
#define AF_BUS 46
#endif

#define IFACE "com.example.Echo"

static DBusConnection *c;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void print_answer(DBusMessage *r)
{
	const char *s = "";

	if (dbus_message_get_type(r) == DBUS_MESSAGE_TYPE_ERROR) {
		dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID);
		printf("error %s from %s: %s\n", dbus_message_get_error_name(r),
		       dbus_message_get_sender(r) ? dbus_message_get_sender(r) : "(none)", s);
	} else {
		dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID);
		printf("reply %s\n", s);
	}
}

/* Waits up to @ms for the answer to @serial and prints it. */
static void wait_answer(dbus_uint32_t serial, int ms, const char *none)
{
	long long end = now_ms() + ms;
	DBusMessage *r;

	while (now_ms() < end) {
		if (!dbus_connection_read_write(c, 100) || !dbus_connection_get_is_connected(c)) {
			printf("disconnected\n");
			return;
		}
		while ((r = dbus_connection_pop_message(c)) != NULL) {
			if (dbus_message_is_signal(r, DBUS_INTERFACE_LOCAL, "Disconnected")) {
				printf("disconnected\n");
				dbus_message_unref(r);
				return;
			}
			if (dbus_message_get_reply_serial(r) == serial) {
				print_answer(r);
				dbus_message_unref(r);
				return;
			}
			dbus_message_unref(r);
		}
	}
	printf("%s\n", none);
}

/* Sends @m on the AF_BUS socket with @n copies of @pfd; returns its serial. */
static dbus_uint32_t send_raw(DBusMessage *m, const char *dest, int pfd, int n)
{
	struct sockaddr_bus sa;
	struct msghdr msg;
	struct iovec iov;
	struct cmsghdr *cm;
	char *buf, *cbuf;
	int sock, len, i;
	dbus_uint32_t serial = 4242;

	if (!dbus_connection_get_socket(c, &sock))
		exit(1);
	dbus_message_set_sender(m, dbus_bus_get_unique_name(c));
	dbus_message_set_serial(m, serial);
	if (!dbus_message_marshal(m, &buf, &len))
		exit(1);

	memset(&sa, 0, sizeof(sa));
	sa.sbus_family = AF_BUS;
	sa.sbus_addr.s_addr = strtoull(dest + 3, NULL, 16);
	iov.iov_base = buf;
	iov.iov_len = len;
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &sa;
	msg.msg_namelen = offsetof(struct sockaddr_bus, sbus_path);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	cbuf = calloc(1, CMSG_SPACE(sizeof(int) * n));
	msg.msg_control = cbuf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	for (i = 0; i < n; i++)
		((int *)CMSG_DATA(cm))[i] = pfd;
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != len) {
		perror("afbus-fds: sendmsg");
		exit(1);
	}
	free(cbuf);
	dbus_free(buf);
	return serial;
}

int main(int argc, char **argv)
{
	static const char text[] = "through AF_BUS";
	DBusError error = DBUS_ERROR_INIT;
	int signal = 0, no_reply = 0, raw = 0, then = 0, count = 1, n, i, k;
	const char *dest;

	while (argc > 1 && argv[1][0] == '-') {
		if (strcmp(argv[1], "--signal") == 0)
			signal = 1;
		else if (strcmp(argv[1], "--no-reply") == 0)
			no_reply = 1;
		else if (strcmp(argv[1], "--raw") == 0)
			raw = 1;
		else if (strcmp(argv[1], "--then") == 0)
			then = 1;
		else if (strcmp(argv[1], "--count") == 0 && argc > 2) {
			count = atoi(argv[2]);
			argc--, argv++;
		} else
			break;
		argc--, argv++;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: afbus-fds [--signal|--no-reply|--raw] [--count K] [--then] DEST N\n");
		return 2;
	}
	dest = argv[1];
	n = atoi(argv[2]);

	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-fds: %s\n", error.message);
		return 1;
	}
	dbus_connection_set_exit_on_disconnect(c, FALSE);
	if (n > 0 && !dbus_connection_can_send_type(c, DBUS_TYPE_UNIX_FD)) {
		printf("fd passing not negotiated\n");
		return 1;
	}

	for (k = 0; k < count; k++) {
		DBusMessage *m;
		dbus_uint32_t serial;
		int p[2];

		if (pipe(p) < 0 || write(p[1], text, sizeof(text) - 1) != sizeof(text) - 1)
			return 1;
		close(p[1]);
		if (signal) {
			m = dbus_message_new_signal("/", IFACE, "ReadFd");
			dbus_message_set_destination(m, dest);
		} else {
			m = dbus_message_new_method_call(dest, "/", IFACE, "ReadFd");
			dbus_message_set_no_reply(m, no_reply);
		}
		if (raw) {
			serial = send_raw(m, dest, p[0], n);
		} else {
			for (i = 0; i < n; i++)
				dbus_message_append_args(m, DBUS_TYPE_UNIX_FD, &p[0],
							 DBUS_TYPE_INVALID);
			if (!dbus_connection_send(c, m, &serial))
				return 1;
		}
		close(p[0]);
		dbus_message_unref(m);
		if (signal || no_reply)
			wait_answer(serial, 2000, "no error");
		else
			wait_answer(serial, 10000, "timeout");
		fflush(stdout);
	}

	if (then) {
		DBusMessage *m, *r;
		const char *s = "then";

		m = dbus_message_new_method_call(dest, "/", IFACE, "Echo");
		dbus_message_append_args(m, DBUS_TYPE_STRING, &s, DBUS_TYPE_INVALID);
		r = dbus_connection_send_with_reply_and_block(c, m, 10000, &error);
		printf("then: ");
		if (r) {
			print_answer(r);
		} else {
			printf("error %s: %s\n", error.name, error.message);
			dbus_error_free(&error);
		}
		dbus_message_unref(m);
	}
	return 0;
}
