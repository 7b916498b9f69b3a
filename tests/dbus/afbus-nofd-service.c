// SPDX-License-Identifier: GPL-2.0
/*
 * A D-Bus service on a unix socket that does not negotiate fd passing
 * (no NEGOTIATE_UNIX_FD in its authentication; libdbus always asks for
 * it on unix:, as do GDBus and sd-bus by default), written on the raw
 * socket with libdbus only marshalling its messages.
 *
 * Usage: afbus-nofd-service SOCKET-PATH [NAME]
 * Says Hello (and RequestName NAME), prints "ready UNIQUE-NAME", then
 * for each message it receives prints "call MEMBER fds=N" (N: the
 * UNIX_FDS header field) or "signal MEMBER fds=N", and answers every
 * method call that awaits a reply with an empty method return.  Exits
 * when the bus hangs up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <dbus/dbus.h>

static int fd;
static dbus_uint32_t next_serial = 1;
static char unique[256];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void send_message(DBusMessage *m)
{
	char *buf;
	int len;

	dbus_message_set_serial(m, next_serial++);
	if (!dbus_message_marshal(m, &buf, &len))
		die("marshal");
	if (write(fd, buf, len) != len)
		die("write");
	dbus_free(buf);
}

/* The next message from the bus, or NULL at end of file. */
static DBusMessage *read_message(void)
{
	static char buf[1 << 20];
	static int have;
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m;
	int need;

	for (;;) {
		if (have >= DBUS_MINIMUM_HEADER_SIZE) {
			need = dbus_message_demarshal_bytes_needed(buf, have);
			if (need < 0 || need > (int)sizeof(buf)) {
				fprintf(stderr, "afbus-nofd-service: bad message\n");
				exit(1);
			}
			if (need > 0 && need <= have) {
				m = dbus_message_demarshal(buf, need, &error);
				if (!m) {
					fprintf(stderr, "afbus-nofd-service: %s\n", error.message);
					exit(1);
				}
				memmove(buf, buf + need, have - need);
				have -= need;
				return m;
			}
		}
		need = read(fd, buf + have, sizeof(buf) - have);
		if (need <= 0)
			return NULL;
		have += need;
	}
}

/* Calls the bus driver, returns its reply. */
static DBusMessage *call_bus(const char *method, const char *arg, dbus_uint32_t flags)
{
	DBusMessage *m, *r;
	dbus_uint32_t serial = next_serial;

	m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
					 DBUS_INTERFACE_DBUS, method);
	if (arg)
		dbus_message_append_args(m, DBUS_TYPE_STRING, &arg, DBUS_TYPE_UINT32, &flags,
					 DBUS_TYPE_INVALID);
	send_message(m);
	dbus_message_unref(m);
	while ((r = read_message()) != NULL) {
		if (dbus_message_get_reply_serial(r) == serial)
			return r;
		dbus_message_unref(r);
	}
	fprintf(stderr, "afbus-nofd-service: no reply to %s\n", method);
	exit(1);
}

static void auth(void)
{
	char line[512], hex[64] = "", uid[32];
	int i, n;

	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	for (i = 0; uid[i]; i++)
		sprintf(hex + 2 * i, "%02x", uid[i]);
	n = snprintf(line, sizeof(line), "AUTH EXTERNAL %s\r\n", hex);
	if (write(fd, "", 1) != 1 || write(fd, line, n) != n)
		die("write");
	n = read(fd, line, sizeof(line) - 1);
	if (n <= 0 || strncmp(line, "OK ", 3) != 0) {
		fprintf(stderr, "afbus-nofd-service: authentication failed\n");
		exit(1);
	}
	/* BEGIN without NEGOTIATE_UNIX_FD */
	if (write(fd, "BEGIN\r\n", 7) != 7)
		die("write");
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	DBusMessage *m, *r;
	const char *name;

	if (argc < 2) {
		fprintf(stderr, "usage: afbus-nofd-service SOCKET-PATH [NAME]\n");
		return 2;
	}
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strncpy(sa.sun_path, argv[1], sizeof(sa.sun_path) - 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	auth();

	r = call_bus("Hello", NULL, 0);
	if (!dbus_message_get_args(r, NULL, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID)) {
		fprintf(stderr, "afbus-nofd-service: Hello failed\n");
		return 1;
	}
	snprintf(unique, sizeof(unique), "%s", name);
	dbus_message_unref(r);

	if (argc > 2) {
		r = call_bus("RequestName", argv[2], DBUS_NAME_FLAG_DO_NOT_QUEUE);
		if (dbus_message_get_type(r) != DBUS_MESSAGE_TYPE_METHOD_RETURN) {
			fprintf(stderr, "afbus-nofd-service: RequestName failed\n");
			return 1;
		}
		dbus_message_unref(r);
	}
	printf("ready %s\n", unique);
	fflush(stdout);

	while ((m = read_message()) != NULL) {
		int type = dbus_message_get_type(m);
		dbus_uint32_t n_fds = 0;

		/* the header field, since no fd can come with it */
		if (dbus_message_contains_unix_fds(m))
			n_fds = 1;
		if (type == DBUS_MESSAGE_TYPE_METHOD_CALL ||
		    type == DBUS_MESSAGE_TYPE_SIGNAL) {
			printf("%s %s fds=%u\n",
			       type == DBUS_MESSAGE_TYPE_SIGNAL ? "signal" : "call",
			       dbus_message_get_member(m), n_fds);
			fflush(stdout);
		}
		if (type == DBUS_MESSAGE_TYPE_METHOD_CALL && !dbus_message_get_no_reply(m)) {
			r = dbus_message_new_method_return(m);
			send_message(r);
			dbus_message_unref(r);
		}
		dbus_message_unref(m);
	}
	return 0;
}
