// SPDX-License-Identifier: GPL-2.0
/*
 * The round-trip and signal benchmarks with GDBus (GLib's libgio) at
 * both ends, for the GDBus rows of `make bench`: on the AF_BUS bus the
 * afbus: build of libgio (glib/), which this tool is linked with (its
 * RUNPATH names build/glib-stage), elsewhere the same library over unix:.
 *
 *   bench-gdbus service --bus ADDRESS NAME | --listen ADDRESS
 *       answers org.afbus.Bench.Ping (ay) with the same bytes on
 *       /org/afbus/Bench, owning NAME on the bus (or, --listen, as a
 *       GDBusServer for direct peers); prints "ready"; exits on Quit.
 *   bench-gdbus rtt [-n CALLS] [-w WARMUP] [-s BYTES] --bus ADDRESS NAME | --peer ADDRESS
 *       synchronous calls (g_dbus_connection_call_sync()), one at a time;
 *       prints bench-roundtrip's result line.
 *   bench-gdbus signals [-N SUBSCRIBERS] [-m SIGNALS] --bus ADDRESS
 *       one emitter (g_dbus_connection_emit_signal()), N subscriber
 *       processes (g_dbus_connection_signal_subscribe(): the bus gets
 *       their match rules); prints bench-signals' result line.
 */
#define _GNU_SOURCE
#include <gio/gio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-stats.h"

#define BENCH_IFACE "org.afbus.Bench"
#define BENCH_PATH "/org/afbus/Bench"

static const char *tool = "bench-gdbus";

static const char xml[] =
	"<node><interface name='" BENCH_IFACE "'>"
	"<method name='Ping'><arg type='ay' direction='in'/><arg type='ay' direction='out'/></method>"
	"<method name='Quit'/>"
	"</interface></node>";

static GDBusConnection *bus_connect(const char *address)
{
	GError *error = NULL;
	GDBusConnection *c;

	c = g_dbus_connection_new_for_address_sync(address,
		G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
		G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
	if (!c)
		bench_die(tool, "cannot connect to %s: %s", address, error->message);
	return c;
}

static GDBusConnection *peer_connect(const char *address)
{
	GError *error = NULL;
	GDBusConnection *c;

	c = g_dbus_connection_new_for_address_sync(address,
		G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL, &error);
	if (!c)
		bench_die(tool, "cannot connect to %s: %s", address, error->message);
	return c;
}

/* service */

static GMainLoop *loop;

static void on_call(GDBusConnection *c, const char *sender, const char *path,
		    const char *iface, const char *method, GVariant *params,
		    GDBusMethodInvocation *invocation, gpointer data)
{
	(void)c; (void)sender; (void)path; (void)iface; (void)data;
	if (strcmp(method, "Ping") == 0) {
		g_dbus_method_invocation_return_value(invocation,
			g_variant_new_tuple(&(GVariant *){ g_variant_get_child_value(params, 0) }, 1));
	} else {
		g_dbus_method_invocation_return_value(invocation, NULL);
		g_main_loop_quit(loop);
	}
}

static const GDBusInterfaceVTable vtable = { on_call, NULL, NULL, { 0 } };

static void serve_on(GDBusConnection *c)
{
	GDBusNodeInfo *node = g_dbus_node_info_new_for_xml(xml, NULL);
	GError *error = NULL;

	if (!g_dbus_connection_register_object(c, BENCH_PATH, node->interfaces[0],
					       &vtable, NULL, NULL, &error))
		bench_die(tool, "register: %s", error->message);
	g_dbus_node_info_unref(node);
}

static gboolean on_new_connection(GDBusServer *server, GDBusConnection *c,
				  gpointer data)
{
	(void)server; (void)data;
	serve_on(c);
	g_object_ref(c);
	return TRUE;
}

static int service(int argc, char **argv)
{
	GError *error = NULL;

	loop = g_main_loop_new(NULL, FALSE);
	if (argc == 5 && strcmp(argv[2], "--bus") == 0) {
		GDBusConnection *c = bus_connect(argv[3]);
		GVariant *r;

		serve_on(c);
		r = g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus",
			"org.freedesktop.DBus", "RequestName", g_variant_new("(su)", argv[4], 4),
			G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
		if (!r)
			bench_die(tool, "RequestName: %s", error->message);
		g_variant_unref(r);
	} else if (argc == 4 && strcmp(argv[2], "--listen") == 0) {
		char *guid = g_dbus_generate_guid();
		GDBusServer *server;

		server = g_dbus_server_new_sync(argv[3], G_DBUS_SERVER_FLAGS_NONE, guid,
						NULL, NULL, &error);
		if (!server)
			bench_die(tool, "listen on %s: %s", argv[3], error->message);
		g_signal_connect(server, "new-connection", G_CALLBACK(on_new_connection), NULL);
		g_dbus_server_start(server);
	} else {
		fprintf(stderr, "usage: %s service --bus ADDRESS NAME | --listen ADDRESS\n", tool);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	g_main_loop_run(loop);
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

static gboolean ping(GDBusConnection *c, const char *dest, const guchar *payload, long size)
{
	GError *error = NULL;
	GVariant *r, *back;
	gboolean ok;

	r = g_dbus_connection_call_sync(c, dest, BENCH_PATH, BENCH_IFACE, "Ping",
		g_variant_new("(@ay)", g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, payload, size, 1)),
		G_VARIANT_TYPE("(ay)"), G_DBUS_CALL_FLAGS_NONE, 30000, NULL, &error);
	if (!r) {
		fprintf(stderr, "%s: %s\n", tool, error->message);
		g_error_free(error);
		return FALSE;
	}
	back = g_variant_get_child_value(r, 0);
	ok = (long)g_variant_get_size(back) == size &&
	     memcmp(g_variant_get_data(back) ? g_variant_get_data(back) : "", payload, size) == 0;
	g_variant_unref(back);
	g_variant_unref(r);
	return ok;
}

static int rtt(int argc, char **argv)
{
	long calls = 10000, warmup = 1000, size = 0, i, ok = 0;
	GDBusConnection *c = NULL;
	const char *dest = NULL;
	struct bench_counters c0, c1;
	uint64_t *lat, t0, t1;
	guchar *payload;
	double cpu0, cpu1;
	int a;

	for (a = 2; a < argc; a++) {
		if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
			calls = bench_number(tool, "-n", argv[++a], 1);
		else if (strcmp(argv[a], "-w") == 0 && a + 1 < argc)
			warmup = bench_number(tool, "-w", argv[++a], 0);
		else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc)
			size = bench_number(tool, "-s", argv[++a], 0);
		else if (strcmp(argv[a], "--bus") == 0 && a + 2 < argc) {
			c = bus_connect(argv[a + 1]);
			dest = argv[a + 2];
			a += 2;
		} else if (strcmp(argv[a], "--peer") == 0 && a + 1 < argc)
			c = peer_connect(argv[++a]);
		else
			c = NULL, a = argc;
	}
	if (!c) {
		fprintf(stderr, "usage: %s rtt [-n CALLS] [-w WARMUP] [-s BYTES] "
			"--bus ADDRESS NAME | --peer ADDRESS\n", tool);
		return 2;
	}
	payload = g_malloc(size ? size : 1);
	lat = g_new0(uint64_t, calls);
	for (i = 0; i < size; i++)
		payload[i] = (guchar)(i * 7 + 1);
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
	long got, bad, expect;
	gboolean done;
};

static void on_signal(GDBusConnection *c, const char *sender, const char *path,
		      const char *iface, const char *member, GVariant *params,
		      gpointer data)
{
	struct sub_state *st = data;

	(void)c; (void)sender; (void)path; (void)iface;
	if (strcmp(member, "Done") == 0) {
		st->done = TRUE;
		return;
	}
	if (g_variant_is_of_type(params, G_VARIANT_TYPE("(u)"))) {
		guint32 seq;

		g_variant_get(params, "(u)", &seq);
		if ((long)seq == st->got)
			st->got++;
		else
			st->bad++;
	}
}

/* One subscriber, in its own process: prints "GOT BAD DONE_NS" on fd. */
static void subscriber(const char *address, int ready_fd, int report_fd)
{
	struct sub_state st = { 0, 0, 0, FALSE };
	GDBusConnection *c = bus_connect(address);
	GMainContext *ctx = g_main_context_default();
	char line[128];

	g_dbus_connection_signal_subscribe(c, NULL, BENCH_IFACE, "Tick", BENCH_PATH, NULL,
					   G_DBUS_SIGNAL_FLAGS_NONE, on_signal, &st, NULL);
	g_dbus_connection_signal_subscribe(c, NULL, BENCH_IFACE, "Done", BENCH_PATH, NULL,
					   G_DBUS_SIGNAL_FLAGS_NONE, on_signal, &st, NULL);
	/* the AddMatch calls are written before this one: the rules are in */
	g_variant_unref(g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus",
		"org.freedesktop.DBus", "GetId", NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL));
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	while (!st.done)
		g_main_context_iteration(ctx, TRUE);
	snprintf(line, sizeof(line), "%ld %ld %llu\n", st.got, st.bad,
		 (unsigned long long)bench_now_ns());
	if (write(report_fd, line, strlen(line)) < 0)
		_exit(1);
	_exit(0);
}

static int signals(int argc, char **argv)
{
	long subs = 1, count = 1000, i, delivered = 0, bad = 0;
	const char *address = NULL;
	int ready[2], report[2], a;
	struct bench_counters c0, c1;
	uint64_t t0, last = 0;
	GDBusConnection *c;
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
	if (pipe(ready) < 0 || pipe(report) < 0)
		bench_die(tool, "pipe");
	/* the subscribers first, before this process touches GDBus */
	for (i = 0; i < subs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			bench_die(tool, "fork");
		if (pid == 0) {
			close(ready[0]);
			close(report[0]);
			subscriber(address, ready[1], report[1]);
		}
	}
	close(ready[1]);
	close(report[1]);
	for (i = 0; i < subs; i++)
		if (read(ready[0], buf, 1) != 1)
			bench_die(tool, "a subscriber did not start");

	c = bus_connect(address);
	c0 = bench_counters_read();
	t0 = bench_now_ns();
	for (i = 0; i < count; i++)
		g_dbus_connection_emit_signal(c, NULL, BENCH_PATH, BENCH_IFACE, "Tick",
					      g_variant_new("(u)", (guint32)i), NULL);
	g_dbus_connection_emit_signal(c, NULL, BENCH_PATH, BENCH_IFACE, "Done", NULL, NULL);
	g_dbus_connection_flush_sync(c, NULL, NULL);

	rep = fdopen(report[0], "r");
	for (i = 0; i < subs && fgets(buf, sizeof(buf), rep); i++) {
		long got, b;
		unsigned long long done;

		if (sscanf(buf, "%ld %ld %llu", &got, &b, &done) != 3)
			continue;
		delivered += got;
		bad += b + (got != count);
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
