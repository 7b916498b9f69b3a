// SPDX-License-Identifier: GPL-2.0
/*
 * An sd-bus program for the system guest's tests of sd-bus on AF_BUS
 * (tests/system/sdbus-*.sh): a service and its callers on the system
 * bus, built against the guest's libsystemd (the afbus: build, systemd/).
 * It speaks the interface of the D-Bus tests' echo service
 * (tests/dbus/afbus-echo-service.c), so that their tools drive it too:
 *
 * sdbus-peer serve NAME
 *	Owns NAME and answers, on any path, interface com.example.Echo:
 *	  Echo (s) -> s       the string back
 *	  Big (u n) -> s      n bytes of 'x' (at most 1 MiB)
 *	  Whoami () -> s      its own unique name
 *	  CallerUid () -> s   "uid N": the caller's uid, which sd-bus asks
 *	                      the bus (sd_bus_query_sender_creds())
 *	  ReadFd (h) -> s     what it reads from the descriptor
 *	  Hang ()             never answers
 *	  Stall (u ms) -> s   sleeps, without reading, then "stalled"
 *	  Quit ()             answers, then exits
 *	Prints "ready UNIQUE-NAME FAMILY" (FAMILY: AF_BUS or AF_UNIX, of its
 *	bus connection's socket).
 * sdbus-peer info
 *	Prints "UNIQUE-NAME FAMILY" for a connection to the system bus.
 * sdbus-peer call [--wait] DEST COUNT
 *	Calls Echo COUNT times, each with its own string, checking each
 *	answer; prints "calls=N ok=N errors=N FAMILY" and the first error.
 *	With --wait, once connected (the Hello answered) it makes two calls
 *	(so that its library learns where DEST lives, if DEST is a
 *	well-known name), prints "connected NAME" and waits for a line on
 *	its standard input before the COUNT calls.
 * sdbus-peer fd DEST
 *	Passes the read end of a pipe holding "fd-passed" to ReadFd; prints
 *	the answer.
 * sdbus-peer wait DEST METHOD [ARG] TIMEOUT-MS
 *	One call of METHOD (Hang, or Stall with the number ARG), and prints
 *	"reply STRING" or "error NAME: MESSAGE", then "elapsed-ms N".
 * sdbus-peer watch-stall DEST MS
 *	Calls Stall(MS) on DEST, prints "unique NAME" and "serial N" (the
 *	call's) at once, and keeps
 *	reading meanwhile (sd_bus_call_async): what reaches it besides the
 *	answer is printed as "stray TYPE SENDER INTERFACE.MEMBER"; then the
 *	answer as for wait.
 * sdbus-peer listen RULE
 *	Adds the match rule RULE (sd_bus_add_match(), which returns once the
 *	bus answered AddMatch), prints "ready UNIQUE-NAME FAMILY", then for
 *	every signal that reaches the library "recv INTERFACE.MEMBER ARG0"
 *	(a filter, which sees each message read from the socket) and for
 *	each one RULE matches "match INTERFACE.MEMBER ARG0".
 * sdbus-peer emit PATH INTERFACE MEMBER ARG0 COUNT
 *	Emits COUNT signals (s ARG0, u N: 0 to COUNT - 1) from PATH, flushes
 *	them and prints "emitted COUNT FAMILY".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#define IFACE "com.example.Echo"

static const char *tool = "sdbus-peer";
static sd_bus *bus;
static int quit;

static void die(const char *what, int r)
{
	fprintf(stderr, "%s: %s: %s\n", tool, what, strerror(r < 0 ? -r : r));
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The address family of the connection's socket: AF_BUS (46) or AF_UNIX. */
static const char *family(void)
{
	int fd = sd_bus_get_fd(bus), af = 0;
	socklen_t len = sizeof(af);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &af, &len) < 0)
		return "unknown";
	return af == 46 ? "AF_BUS" : af == AF_UNIX ? "AF_UNIX" : "other";
}

static void open_bus(void)
{
	int r = sd_bus_open_system(&bus);

	if (r < 0)
		die("cannot connect to the system bus", r);
}

static int m_echo(sd_bus_message *m, void *data, sd_bus_error *error)
{
	const char *s;
	int r = sd_bus_message_read(m, "s", &s);

	(void)data; (void)error;
	return r < 0 ? r : sd_bus_reply_method_return(m, "s", s);
}

static int m_big(sd_bus_message *m, void *data, sd_bus_error *error)
{
	uint32_t n;
	char *s;
	int r = sd_bus_message_read(m, "u", &n);

	(void)data;
	if (r < 0)
		return r;
	if (n > 1024 * 1024)
		return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "at most 1 MiB");
	s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	memset(s, 'x', n);
	s[n] = 0;
	r = sd_bus_reply_method_return(m, "s", s);
	free(s);
	return r;
}

static int m_whoami(sd_bus_message *m, void *data, sd_bus_error *error)
{
	const char *u;

	(void)data; (void)error;
	sd_bus_get_unique_name(bus, &u);
	return sd_bus_reply_method_return(m, "s", u);
}

static int m_caller_uid(sd_bus_message *m, void *data, sd_bus_error *error)
{
	sd_bus_creds *c = NULL;
	char buf[32];
	uid_t uid;
	int r;

	(void)data; (void)error;
	r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &c);
	if (r < 0)
		return r;
	r = sd_bus_creds_get_euid(c, &uid);
	sd_bus_creds_unref(c);
	if (r < 0)
		return r;
	snprintf(buf, sizeof(buf), "uid %u", (unsigned)uid);
	return sd_bus_reply_method_return(m, "s", buf);
}

static int m_read_fd(sd_bus_message *m, void *data, sd_bus_error *error)
{
	char buf[256];
	ssize_t n;
	int fd, r = sd_bus_message_read(m, "h", &fd);

	(void)data; (void)error;
	if (r < 0)
		return r;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return sd_bus_reply_method_return(m, "s", buf);
}

static int m_hang(sd_bus_message *m, void *data, sd_bus_error *error)
{
	(void)m; (void)data; (void)error;
	return 1;
}

static int m_stall(sd_bus_message *m, void *data, sd_bus_error *error)
{
	uint32_t ms;
	int r = sd_bus_message_read(m, "u", &ms);

	(void)data; (void)error;
	if (r < 0)
		return r;
	usleep(ms * 1000U);
	return sd_bus_reply_method_return(m, "s", "stalled");
}

static int m_quit(sd_bus_message *m, void *data, sd_bus_error *error)
{
	(void)data; (void)error;
	quit = 1;
	return sd_bus_reply_method_return(m, "");
}

/* Anybody may call its methods (sd-bus lets only callers with
 * CAP_SYS_ADMIN call the others on the system bus: it asks the bus for
 * their credentials). */
static const sd_bus_vtable vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Echo", "s", "s", m_echo, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Big", "u", "s", m_big, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Whoami", "", "s", m_whoami, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("CallerUid", "", "s", m_caller_uid, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("ReadFd", "h", "s", m_read_fd, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Hang", "", "", m_hang, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Stall", "u", "s", m_stall, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Quit", "", "", m_quit, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

/* Dispatch the bus's messages until a signal handler sets quit. */
static void dispatch_until_quit(void)
{
	int r;

	while (!quit) {
		r = sd_bus_process(bus, NULL);
		if (r < 0)
			die("process", r);
		if (r > 0)
			continue;
		r = sd_bus_wait(bus, UINT64_MAX);
		if (r < 0 && r != -EINTR)
			die("wait", r);
	}
}

static int serve(const char *name)
{
	const char *unique;
	int r;

	open_bus();
	r = sd_bus_add_fallback_vtable(bus, NULL, "/", IFACE, vtable, NULL, NULL);
	if (r < 0)
		die("add vtable", r);
	r = sd_bus_request_name(bus, name, 0);
	if (r < 0)
		die("request name", r);
	sd_bus_get_unique_name(bus, &unique);
	printf("ready %s %s\n", unique, family());
	fflush(stdout);
	dispatch_until_quit();
	sd_bus_flush(bus);
	return 0;
}

static int call(const char *dest, long count, int wait_line)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	char first[512] = "", line[64];
	long i, ok = 0, errors = 0;
	const char *unique;

	open_bus();
	if (wait_line) {
		for (i = 0; i < 2; i++) {
			int r = sd_bus_call_method(bus, dest, "/", IFACE, "Echo", &error, NULL, "s", "warm-up");

			if (r < 0)
				die("warm-up call", r);
		}
		if (sd_bus_get_unique_name(bus, &unique) < 0)
			die("no Hello answer", EPROTO);
		printf("connected %s\n", unique);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	for (i = 0; i < count; i++) {
		sd_bus_message *reply = NULL;
		const char *s;
		char want[64];
		int r;

		snprintf(want, sizeof(want), "call-%ld", i);
		r = sd_bus_call_method(bus, dest, "/", IFACE, "Echo", &error, &reply, "s", want);
		if (r >= 0 && sd_bus_message_read(reply, "s", &s) >= 0 && strcmp(s, want) == 0)
			ok++;
		else {
			errors++;
			if (!*first)
				snprintf(first, sizeof(first), "%s: %s",
					 error.name ? error.name : "-",
					 error.message ? error.message : strerror(-r));
		}
		sd_bus_error_free(&error);
		sd_bus_message_unref(reply);
	}
	printf("calls=%ld ok=%ld errors=%ld %s%s%s\n", count, ok, errors, family(),
	       *first ? " first-error=" : "", first);
	return errors == 0 ? 0 : 1;
}

static int fd_call(const char *dest)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *s;
	int p[2], r;

	open_bus();
	if (pipe(p) < 0 || write(p[1], "fd-passed", 9) != 9)
		die("pipe", errno);
	close(p[1]);
	r = sd_bus_call_method(bus, dest, "/", IFACE, "ReadFd", &error, &reply, "h", p[0]);
	if (r < 0) {
		printf("error %s: %s\n", error.name, error.message);
		return 1;
	}
	if (sd_bus_message_read(reply, "s", &s) < 0)
		return 1;
	printf("reply %s\n", s);
	return 0;
}

static void print_outcome(int r, sd_bus_error *error, sd_bus_message *reply, uint64_t t0)
{
	const char *s = "";

	if (r < 0)
		printf("error %s: %s\n", error->name ? error->name : "-",
		       error->message ? error->message : strerror(-r));
	else {
		if (reply && sd_bus_message_peek_type(reply, NULL, NULL) > 0)
			sd_bus_message_read(reply, "s", &s);
		printf("reply %s\n", s);
	}
	printf("elapsed-ms %llu\n", (unsigned long long)(now_ms() - t0));
}

static int wait_call(const char *dest, const char *method, const char *arg, long timeout_ms)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	uint64_t t0;
	int r;

	open_bus();
	r = sd_bus_message_new_method_call(bus, &m, dest, "/", IFACE, method);
	if (r < 0)
		die("new call", r);
	if (arg)
		sd_bus_message_append(m, "u", (uint32_t)atol(arg));
	t0 = now_ms();
	r = sd_bus_call(bus, m, (uint64_t)timeout_ms * 1000, &error, &reply);
	print_outcome(r, &error, reply, t0);
	return 0;
}

static int answered;

static int on_answer(sd_bus_message *m, void *data, sd_bus_error *error)
{
	uint64_t *t0 = data;
	const sd_bus_error *e = sd_bus_message_get_error(m);

	(void)error;
	if (e)
		printf("error %s: %s\n", e->name, e->message);
	else {
		const char *s = "";

		sd_bus_message_read(m, "s", &s);
		printf("reply %s\n", s);
	}
	printf("elapsed-ms %llu\n", (unsigned long long)(now_ms() - *t0));
	answered = 1;
	return 1;
}

static int on_stray(sd_bus_message *m, void *data, sd_bus_error *error)
{
	uint8_t type;

	(void)data; (void)error;
	sd_bus_message_get_type(m, &type);
	printf("stray %u %s %s.%s\n", type, sd_bus_message_get_sender(m) ?: "-",
	       sd_bus_message_get_interface(m) ?: "-", sd_bus_message_get_member(m) ?: "-");
	fflush(stdout);
	return 0;
}

static int watch_stall(const char *dest, const char *ms)
{
	sd_bus_message *m = NULL;
	const char *unique;
	uint64_t t0, cookie;
	int r;

	open_bus();
	r = sd_bus_add_filter(bus, NULL, on_stray, NULL);
	if (r < 0)
		die("filter", r);
	r = sd_bus_message_new_method_call(bus, &m, dest, "/", IFACE, "Stall");
	if (r >= 0)
		r = sd_bus_message_append(m, "u", (uint32_t)atol(ms));
	t0 = now_ms();
	if (r >= 0)
		r = sd_bus_call_async(bus, NULL, m, on_answer, &t0, 0);
	if (r >= 0)
		r = sd_bus_message_get_cookie(m, &cookie);
	if (r < 0)
		die("call", r);
	sd_bus_get_unique_name(bus, &unique);
	printf("unique %s\nserial %llu\n", unique, (unsigned long long)cookie);
	fflush(stdout);
	while (!answered) {
		r = sd_bus_process(bus, NULL);
		if (r < 0)
			die("process", r);
		if (r == 0 && sd_bus_wait(bus, 60 * 1000000ULL) == 0)
			break;
	}
	return answered ? 0 : 1;
}

/* The string first argument of a signal, or "-". */
static const char *arg0(sd_bus_message *m)
{
	const char *s = NULL;

	if (sd_bus_message_peek_type(m, NULL, NULL) > 0 &&
	    sd_bus_message_read(m, "s", &s) < 0)
		s = NULL;
	sd_bus_message_rewind(m, 1);
	return s ?: "-";
}

static int on_any(sd_bus_message *m, void *data, sd_bus_error *error)
{
	(void)error;
	if (sd_bus_message_is_signal(m, NULL, NULL))
		printf("%s %s.%s %s\n", (const char *)data, sd_bus_message_get_interface(m) ?: "-",
		       sd_bus_message_get_member(m) ?: "-", arg0(m));
	return 0;
}

static int listen_rule(const char *rule)
{
	const char *unique;
	int r;

	open_bus();
	r = sd_bus_add_filter(bus, NULL, on_any, (void *)"recv");
	if (r < 0)
		die("filter", r);
	r = sd_bus_add_match(bus, NULL, rule, on_any, (void *)"match");
	if (r < 0)
		die("AddMatch", r);
	sd_bus_get_unique_name(bus, &unique);
	printf("ready %s %s\n", unique, family());
	dispatch_until_quit();
	return 0;
}

static int emit(const char *path, const char *iface, const char *member, const char *a0, long count)
{
	long i;
	int r;

	open_bus();
	for (i = 0; i < count; i++) {
		r = sd_bus_emit_signal(bus, path, iface, member, "su", a0, (uint32_t)i);
		if (r < 0)
			die("emit", r);
	}
	r = sd_bus_flush(bus);
	if (r < 0)
		die("flush", r);
	printf("emitted %ld %s\n", count, family());
	return 0;
}

int main(int argc, char **argv)
{
	const char *unique;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	if (argc == 2 && strcmp(argv[1], "info") == 0) {
		open_bus();
		sd_bus_get_unique_name(bus, &unique);
		printf("%s %s\n", unique, family());
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "call") == 0)
		return call(argv[2], atol(argv[3]), 0);
	if (argc == 5 && strcmp(argv[1], "call") == 0 && strcmp(argv[2], "--wait") == 0)
		return call(argv[3], atol(argv[4]), 1);
	if (argc == 3 && strcmp(argv[1], "fd") == 0)
		return fd_call(argv[2]);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "wait") == 0)
		return wait_call(argv[2], argv[3], argc == 6 ? argv[4] : NULL, atol(argv[argc - 1]));
	if (argc == 4 && strcmp(argv[1], "watch-stall") == 0)
		return watch_stall(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "listen") == 0)
		return listen_rule(argv[2]);
	if (argc == 7 && strcmp(argv[1], "emit") == 0)
		return emit(argv[2], argv[3], argv[4], argv[5], atol(argv[6]));
	fprintf(stderr, "usage: %s serve NAME | info | call [--wait] DEST COUNT | fd DEST |"
		" wait DEST METHOD [ARG] TIMEOUT-MS | watch-stall DEST MS | listen RULE |"
		" emit PATH INTERFACE MEMBER ARG0 COUNT\n", tool);
	return 2;
}
