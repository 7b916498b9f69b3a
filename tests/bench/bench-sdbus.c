// SPDX-License-Identifier: GPL-2.0
/*
 * The round-trip and signal benchmarks with sd-bus (systemd's libsystemd)
 * at both ends, for the sd-bus rows of `make bench`: the afbus: build of
 * libsystemd (systemd/), which this tool is linked with (its RUNPATH
 * names build/systemd-stage), on every bus: over AF_BUS on the afbus bus,
 * over unix: elsewhere.  The same interface and output as bench-gdbus.
 *
 *   bench-sdbus service --bus ADDRESS NAME | --listen ADDRESS
 *       answers org.afbus.Bench.Ping (ay) with the same bytes on
 *       /org/afbus/Bench, owning NAME on the bus (or, --listen, for direct
 *       peers on a unix socket, one after the other); prints "ready";
 *       exits on Quit.
 *   bench-sdbus rtt [-n CALLS] [-w WARMUP] [-s BYTES] --bus ADDRESS NAME | --peer ADDRESS
 *       synchronous calls (sd_bus_call()), one at a time; prints
 *       bench-roundtrip's result line.
 *   bench-sdbus signals [-N SUBSCRIBERS] [-m SIGNALS] --bus ADDRESS
 *       one emitter (sd_bus_emit_signal()), N subscriber processes
 *       (sd_bus_match_signal(): the bus gets their match rules); prints
 *       bench-signals' result line.  The emitter sends WINDOW (64)
 *       signals, then waits until every subscriber has read them (a byte
 *       from each on a pipe) before the next ones, on every bus alike:
 *       as fast as it can write, sd-bus outruns 4 subscribers on one CPU,
 *       and a bus that drops signals for a subscriber whose receive
 *       buffer is full (AF_BUS, BUS_SET_MCAST_DROP; dbus-daemon past
 *       max_outgoing_bytes) would measure the signals it dropped.  64
 *       small signals fit in any of these buses' buffers.  Waiting for a
 *       window ends after 10 s (a signal lost): the result line then
 *       counts what was missed.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bench-stats.h"

#define BENCH_IFACE "org.afbus.Bench"
#define BENCH_PATH "/org/afbus/Bench"
#define WINDOW 64

static const char *tool = "bench-sdbus";

static sd_bus *bus_connect(const char *address, int bus_client)
{
	sd_bus *b;
	int r;

	r = sd_bus_new(&b);
	if (r >= 0)
		r = sd_bus_set_address(b, address);
	if (r >= 0)
		r = sd_bus_set_bus_client(b, bus_client);
	if (r >= 0)
		r = sd_bus_start(b);
	if (r < 0)
		bench_die(tool, "cannot connect to %s: %s", address, strerror(-r));
	return b;
}

/* Processes until quit (or the peer left, for a direct connection). */
static void run(sd_bus *b, int *quit)
{
	int r;

	while (!*quit) {
		r = sd_bus_process(b, NULL);
		if (r < 0)
			return;
		if (r > 0)
			continue;
		r = sd_bus_wait(b, UINT64_MAX);
		if (r < 0 && r != -EINTR)
			return;
	}
	sd_bus_flush(b);
}

/* service */

static int quit;

static int m_ping(sd_bus_message *m, void *data, sd_bus_error *error)
{
	sd_bus_message *reply = NULL;
	const void *p;
	size_t n;
	int r;

	(void)data; (void)error;
	r = sd_bus_message_read_array(m, 'y', &p, &n);
	if (r >= 0)
		r = sd_bus_message_new_method_return(m, &reply);
	if (r >= 0)
		r = sd_bus_message_append_array(reply, 'y', p, n);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static int m_quit(sd_bus_message *m, void *data, sd_bus_error *error)
{
	(void)data; (void)error;
	quit = 1;
	return sd_bus_reply_method_return(m, "");
}

/* Unprivileged: sd-bus would otherwise ask the bus for every caller's
 * credentials (a round trip to the daemon per call) before it lets it in,
 * which bench-gdbus' service does not do either. */
static const sd_bus_vtable vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Ping", "ay", "ay", m_ping, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("Quit", "", "", m_quit, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

static int service(int argc, char **argv)
{
	sd_bus *b;
	int r;

	if (argc == 5 && strcmp(argv[2], "--bus") == 0) {
		b = bus_connect(argv[3], 1);
		r = sd_bus_add_object_vtable(b, NULL, BENCH_PATH, BENCH_IFACE, vtable, NULL);
		if (r < 0)
			bench_die(tool, "vtable: %s", strerror(-r));
		r = sd_bus_request_name(b, argv[4], SD_BUS_NAME_REPLACE_EXISTING);
		if (r < 0)
			bench_die(tool, "RequestName: %s", strerror(-r));
		printf("ready\n");
		fflush(stdout);
		run(b, &quit);
	} else if (argc == 4 && strcmp(argv[2], "--listen") == 0 &&
		   strncmp(argv[3], "unix:path=", 10) == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sd_id128_t id;

		strncpy(sa.sun_path, argv[3] + 10, sizeof(sa.sun_path) - 1);
		unlink(sa.sun_path);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
			bench_die(tool, "listen on %s: %s", argv[3], strerror(errno));
		sd_id128_randomize(&id);
		printf("ready\n");
		fflush(stdout);
		while (!quit) {
			int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

			if (c < 0)
				continue;
			r = sd_bus_new(&b);
			if (r >= 0)
				r = sd_bus_set_fd(b, c, c);
			if (r >= 0)
				r = sd_bus_set_server(b, 1, id);
			if (r >= 0)
				r = sd_bus_set_anonymous(b, 1);
			if (r >= 0)
				r = sd_bus_add_object_vtable(b, NULL, BENCH_PATH, BENCH_IFACE, vtable, NULL);
			if (r >= 0)
				r = sd_bus_start(b);
			if (r < 0)
				bench_die(tool, "peer: %s", strerror(-r));
			run(b, &quit);
			sd_bus_close_unref(b);
		}
	} else {
		fprintf(stderr, "usage: %s service --bus ADDRESS NAME | --listen unix:path=PATH\n", tool);
		return 2;
	}
	return 0;
}

/* rtt */

static double self_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static int ping(sd_bus *b, const char *dest, const uint8_t *payload, long size)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	const void *back = NULL;
	size_t n = 0;
	int r, ok;

	r = sd_bus_message_new_method_call(b, &m, dest, BENCH_PATH, BENCH_IFACE, "Ping");
	if (r >= 0)
		r = sd_bus_message_append_array(m, 'y', payload, size);
	if (r >= 0)
		r = sd_bus_call(b, m, 30 * 1000000ULL, &error, &reply);
	if (r >= 0)
		r = sd_bus_message_read_array(reply, 'y', &back, &n);
	ok = r >= 0 && (long)n == size && (size == 0 || memcmp(back, payload, size) == 0);
	if (r < 0)
		fprintf(stderr, "%s: %s\n", tool, error.message ? error.message : strerror(-r));
	sd_bus_error_free(&error);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	return ok;
}

static int rtt(int argc, char **argv)
{
	long calls = 10000, warmup = 1000, size = 0, i, ok = 0;
	struct bench_counters c0, c1;
	uint64_t *lat, t0, t1;
	const char *dest = NULL;
	double cpu0, cpu1;
	uint8_t *payload;
	sd_bus *b = NULL;
	int a;

	for (a = 2; a < argc; a++) {
		if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
			calls = bench_number(tool, "-n", argv[++a], 1);
		else if (strcmp(argv[a], "-w") == 0 && a + 1 < argc)
			warmup = bench_number(tool, "-w", argv[++a], 0);
		else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc)
			size = bench_number(tool, "-s", argv[++a], 0);
		else if (strcmp(argv[a], "--bus") == 0 && a + 2 < argc) {
			b = bus_connect(argv[a + 1], 1);
			dest = argv[a + 2];
			a += 2;
		} else if (strcmp(argv[a], "--peer") == 0 && a + 1 < argc)
			b = bus_connect(argv[++a], 0);
		else
			b = NULL, a = argc;
	}
	if (!b) {
		fprintf(stderr, "usage: %s rtt [-n CALLS] [-w WARMUP] [-s BYTES] "
			"--bus ADDRESS NAME | --peer ADDRESS\n", tool);
		return 2;
	}
	payload = malloc(size ? size : 1);
	lat = calloc(calls, sizeof(*lat));
	if (!payload || !lat)
		bench_die(tool, "out of memory");
	for (i = 0; i < size; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < warmup; i++)
		if (!ping(b, dest, payload, size))
			bench_die(tool, "warm-up call %ld failed", i);

	c0 = bench_counters_read();
	cpu0 = self_cpu_us();
	t0 = bench_now_ns();
	for (i = 0; i < calls; i++) {
		uint64_t s = bench_now_ns();

		ok += ping(b, dest, payload, size);
		lat[i] = bench_now_ns() - s;
	}
	t1 = bench_now_ns();
	cpu1 = self_cpu_us();
	c1 = bench_counters_read();

	printf("result calls=%ld ok=%ld calls_per_s=%.0f", calls, ok,
	       calls / ((t1 - t0) / 1e9));
	bench_print_latency(lat, calls);
	bench_print_counters(c0, c1, calls);
	printf(" client_cpu_us_per_op=%.1f\n", (cpu1 - cpu0) / calls);
	return ok == calls ? 0 : 1;
}

/* signals */

struct sub_state {
	long got, bad;
	int done, ack_fd;
};

static int on_tick(sd_bus_message *m, void *data, sd_bus_error *error)
{
	struct sub_state *st = data;
	uint32_t seq;

	(void)error;
	if (sd_bus_message_read(m, "u", &seq) < 0)
		st->bad++;
	else if ((long)seq == st->got)
		st->got++;
	else
		st->bad++;
	/* a window read: tell the emitter */
	if ((st->got + st->bad) % WINDOW == 0 && write(st->ack_fd, "a", 1) != 1)
		_exit(1);
	return 0;
}

static int on_done(sd_bus_message *m, void *data, sd_bus_error *error)
{
	struct sub_state *st = data;

	(void)m; (void)error;
	st->done = 1;
	return 0;
}

/* One subscriber, in its own process: prints "GOT BAD DONE_NS" on fd;
 * a byte on ack_fd for every WINDOW signals read. */
static void subscriber(const char *address, int ready_fd, int report_fd, int ack_fd)
{
	struct sub_state st = { 0, 0, 0, ack_fd };
	sd_bus *b = bus_connect(address, 1);
	char line[128];

	/* synchronous AddMatch: the rules are in once these return */
	if (sd_bus_match_signal(b, NULL, NULL, BENCH_PATH, BENCH_IFACE, "Tick", on_tick, &st) < 0 ||
	    sd_bus_match_signal(b, NULL, NULL, BENCH_PATH, BENCH_IFACE, "Done", on_done, &st) < 0)
		_exit(1);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	run(b, &st.done);
	snprintf(line, sizeof(line), "%ld %ld %llu\n", st.got, st.bad,
		 (unsigned long long)bench_now_ns());
	if (write(report_fd, line, strlen(line)) < 0)
		_exit(1);
	_exit(0);
}

/* The emitter's end of a window: everything written, then a byte from
 * each of the subs subscribers (10 s at most). */
static void wait_window(sd_bus *b, int ack_fd, long subs)
{
	struct pollfd p = { .fd = ack_fd, .events = POLLIN };
	long acks = 0;
	char buf[64];
	ssize_t n;
	int r;

	r = sd_bus_flush(b);
	if (r < 0)
		bench_die(tool, "flush: %s", strerror(-r));
	while (acks < subs) {
		if (poll(&p, 1, 10000) <= 0)
			return;
		n = read(ack_fd, buf, subs - acks < (long)sizeof(buf) ? (size_t)(subs - acks) : sizeof(buf));
		if (n <= 0)
			return;
		acks += n;
	}
}

static int signals(int argc, char **argv)
{
	long subs = 1, count = 1000, i, delivered = 0, bad = 0;
	const char *address = NULL;
	int ready[2], report[2], ack[2], a, r;
	struct bench_counters c0, c1;
	uint64_t t0, last = 0;
	sd_bus *b;
	FILE *rep;
	char buf[128];

	for (a = 2; a < argc; a++) {
		if (strcmp(argv[a], "-N") == 0 && a + 1 < argc)
			subs = bench_number(tool, "-N", argv[++a], 1);
		else if (strcmp(argv[a], "-m") == 0 && a + 1 < argc)
			count = bench_number(tool, "-m", argv[++a], 1);
		else if (strcmp(argv[a], "--bus") == 0 && a + 1 < argc)
			address = argv[++a];
		else
			address = NULL, a = argc;
	}
	if (!address) {
		fprintf(stderr, "usage: %s signals [-N SUBSCRIBERS] [-m SIGNALS] --bus ADDRESS\n", tool);
		return 2;
	}
	if (pipe(ready) < 0 || pipe(report) < 0 || pipe(ack) < 0)
		bench_die(tool, "pipe");
	for (i = 0; i < subs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			bench_die(tool, "fork");
		if (pid == 0) {
			close(ready[0]);
			close(report[0]);
			close(ack[0]);
			subscriber(address, ready[1], report[1], ack[1]);
		}
	}
	close(ready[1]);
	close(report[1]);
	close(ack[1]);
	for (i = 0; i < subs; i++)
		if (read(ready[0], buf, 1) != 1)
			bench_die(tool, "a subscriber did not start");

	b = bus_connect(address, 1);
	c0 = bench_counters_read();
	t0 = bench_now_ns();
	for (i = 0; i < count; i++) {
		r = sd_bus_emit_signal(b, BENCH_PATH, BENCH_IFACE, "Tick", "u", (uint32_t)i);
		if (r < 0)
			bench_die(tool, "emit: %s", strerror(-r));
		/* as an application's main loop would: write what the socket takes */
		while (sd_bus_process(b, NULL) > 0)
			;
		if ((i + 1) % WINDOW == 0)
			wait_window(b, ack[0], subs);
	}
	r = sd_bus_emit_signal(b, BENCH_PATH, BENCH_IFACE, "Done", "");
	if (r >= 0)
		r = sd_bus_flush(b);
	if (r < 0)
		bench_die(tool, "emit: %s", strerror(-r));

	rep = fdopen(report[0], "r");
	for (i = 0; i < subs && fgets(buf, sizeof(buf), rep); i++) {
		long got, bd;
		unsigned long long done;

		if (sscanf(buf, "%ld %ld %llu", &got, &bd, &done) != 3)
			continue;
		delivered += got;
		bad += bd + (got != count);
		if (done > last)
			last = done;
	}
	c1 = bench_counters_read();
	while (wait(NULL) > 0)
		;
	printf("result subscribers=%ld matching=%ld signals=%ld delivered=%ld expected=%ld bad=%ld"
	       " msgs_per_s=%.0f signals_per_s=%.0f", subs, subs, count, delivered, subs * count,
	       bad, delivered / ((last - t0) / 1e9), count / ((last - t0) / 1e9));
	bench_print_counters(c0, c1, delivered);
	printf("\n");
	return delivered == subs * count && bad == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "service") == 0)
		return service(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "rtt") == 0)
		return rtt(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "signals") == 0)
		return signals(argc, argv);
	fprintf(stderr, "usage: %s service|rtt|signals ...\n", tool);
	return 2;
}
