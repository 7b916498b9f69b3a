// SPDX-License-Identifier: GPL-2.0
/*
 * Method-call round trip: calls org.afbus.Bench.Ping (ay) on
 * bench-echo-service, one call at a time (send, block for the reply),
 * and times every call.
 *
 *   bench-roundtrip [-n CALLS] [-w WARMUP] [-s BYTES] --bus ADDRESS NAME
 *   bench-roundtrip [-n CALLS] [-w WARMUP] [-s BYTES] --peer ADDRESS
 *
 * --bus calls the service by its well-known NAME on the bus at ADDRESS,
 * --peer over a direct connection to its --listen ADDRESS.  WARMUP calls
 * (default 1000) come first and are not counted; then CALLS (default
 * 10000) calls with a BYTES-long payload (default 0) are timed.  Every
 * reply must carry the payload back.  It prints
 *   result calls=N ok=N calls_per_s=X median_us=X p99_us=X max_us=X
 *          ctxt_per_op=X cpu_us_per_op=X
 *          client_cpu_us_per_op=X
 * (ctxt and cpu: context switches and busy CPU time of the whole guest per
 * call; client_cpu: this process's own user and system time per call)
 * and exits 0 if every call got its payload back.
 */
#include <sys/resource.h>

#include "bench-conn.h"

static const char *tool = "bench-roundtrip";

/* One call; TRUE if the reply carries payload back. */
static dbus_bool_t ping(DBusConnection *c, const char *dest,
			const unsigned char *payload, int size)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessage *m, *r;
	const unsigned char *back;
	int n;
	dbus_bool_t ok;

	m = dbus_message_new_method_call(dest, BENCH_PATH, BENCH_IFACE, "Ping");
	if (!m || !dbus_message_append_args(m, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE,
					    &payload, size, DBUS_TYPE_INVALID))
		bench_die(tool, "out of memory");
	r = dbus_connection_send_with_reply_and_block(c, m, 30000, &error);
	dbus_message_unref(m);
	if (!r) {
		fprintf(stderr, "%s: %s\n", tool, error.message);
		dbus_error_free(&error);
		return FALSE;
	}
	ok = dbus_message_get_args(r, NULL, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE,
				   &back, &n, DBUS_TYPE_INVALID) &&
	     n == size && memcmp(back, payload, size) == 0;
	dbus_message_unref(r);
	return ok;
}

/* User + system time this process has used, in microseconds. */
static double self_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-n CALLS] [-w WARMUP] [-s BYTES] "
		"--bus ADDRESS NAME | --peer ADDRESS\n", tool);
	exit(2);
}

int main(int argc, char **argv)
{
	long calls = 10000, warmup = 1000, size = 0, i, ok = 0;
	const char *dest = NULL;
	struct bench_counters c0, c1;
	DBusConnection *c = NULL;
	unsigned char *payload;
	uint64_t *lat, t0, t1;
	double cpu0, cpu1;
	int a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
			calls = bench_number(tool, "-n", argv[++a], 1);
		else if (strcmp(argv[a], "-w") == 0 && a + 1 < argc)
			warmup = bench_number(tool, "-w", argv[++a], 0);
		else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc)
			size = bench_number(tool, "-s", argv[++a], 0);
		else if (strcmp(argv[a], "--bus") == 0 && a + 2 < argc) {
			c = bench_bus_connect(tool, argv[a + 1]);
			dest = argv[a + 2];
			a += 2;
		} else if (strcmp(argv[a], "--peer") == 0 && a + 1 < argc)
			c = bench_peer_connect(tool, argv[++a]);
		else
			usage();
	}
	if (!c)
		usage();

	payload = malloc(size ? size : 1);
	lat = calloc(calls, sizeof(*lat));
	if (!payload || !lat)
		bench_die(tool, "out of memory");
	for (i = 0; i < size; i++)
		payload[i] = (unsigned char)(i * 7 + 1);

	for (i = 0; i < warmup; i++)
		if (!ping(c, dest, payload, size))
			bench_die(tool, "warm-up call %ld failed", i);

	c0 = bench_counters_read();
	cpu0 = self_cpu_us();
	t0 = bench_now_ns();
	for (i = 0; i < calls; i++) {
		uint64_t s = bench_now_ns();

		ok += ping(c, dest, payload, size);
		lat[i] = bench_now_ns() - s;
		bench_jitter();
	}
	t1 = bench_now_ns();
	cpu1 = self_cpu_us();
	c1 = bench_counters_read();

	printf("result calls=%ld ok=%ld calls_per_s=%.1f", calls, ok,
	       calls / ((t1 - t0) / 1e9));
	bench_print_latency(lat, calls);
	bench_print_counters(c0, c1, calls);
	printf(" client_cpu_us_per_op=%.1f\n", (cpu1 - cpu0) / calls);

	dbus_connection_close(c);
	dbus_connection_unref(c);
	return ok == calls ? 0 : 1;
}
