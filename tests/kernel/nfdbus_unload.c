// SPDX-License-Identifier: GPL-2.0
/*
 * nfdbus as a module: `rmmod nfdbus` while buses with nfdbus state (bus
 * flags, a client's match rule, an awaited reply) come and go.  The
 * module frees the state of every bus still there before it stops being
 * told that buses go away; a bus that went away in between would leave
 * its state behind, pointing to the freed bus (a use-after-free that
 * KASAN reports in the debug kernel's log, which fails the run).  After
 * the unload the buses work on without nfdbus (a forged reply is
 * delivered: nothing tracks replies any more); the module loads again
 * and tracks replies on new buses.
 *
 * Needs nfdbus built as a module (the debug kernel: kernel-patches/
 * debug.config), loaded at boot (the guest's init loads the modules
 * run-qemu.sh adds to the initramfs), as
 * /lib/modules/RELEASE/kernel/net/bus/netfilter/nfdbus.ko; skipped, and
 * counted as skipped, where nfdbus is built in (the test kernel).  Leaves
 * the module loaded.
 */
#include "nfdbus_test.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#define UNLOAD_CYCLES	6
#define UNLOAD_THREADS	2
/* buses with state each thread keeps open, closing and replacing them */
#define UNLOAD_POOL	12

/* Is nfdbus in /proc/modules (loaded as a module)? */
static bool nfdbus_module_loaded(void)
{
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/modules", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "nfdbus ", 7);
	fclose(f);
	return found;
}

static void nfdbus_ko_path(char *path, size_t size)
{
	struct utsname u;

	uname(&u);
	snprintf(path, size, "/lib/modules/%s/kernel/net/bus/netfilter/nfdbus.ko",
		 u.release);
}

static int nfdbus_load(void)
{
	char path[256];
	int fd, ret;

	nfdbus_ko_path(path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(__NR_finit_module, fd, "", 0);
	close(fd);
	return ret;
}

/* rmmod: delete_module(O_NONBLOCK), retried while something holds a
 * reference for a moment (EAGAIN/EBUSY); 0 or the errno.
 */
static int nfdbus_unload(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i;

	for (i = 0; i < 300; i++) {
		if (!syscall(__NR_delete_module, "nfdbus", O_NONBLOCK))
			return 0;
		if (errno != EAGAIN && errno != EBUSY)
			return errno;
		nanosleep(&ts, NULL);
	}
	return errno;
}

/* A bus of a worker thread: master, two joined clients (addresses 1, 2). */
struct ubus {
	int m;
	int c[2];
	int a[2];
};

struct worker {
	pthread_t thread;
	int id;
	unsigned int made;	/* buses opened */
	unsigned int with_state;	/* of those, with nfdbus state set */
	char err[160];		/* the first failure, empty if none */
};

static atomic_int unload_ready, unload_go, unload_stop, unload_unloading;
static struct nfd_blob unload_call;

static void worker_fail(struct worker *w, const char *what)
{
	if (!w->err[0])
		snprintf(w->err, sizeof(w->err), "thread %d: %s: %s", w->id,
			 what, strerror(errno));
}

static void ubus_close(struct ubus *u)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (u->c[i] >= 0)
			close(u->c[i]);
		if (u->a[i] >= 0)
			close(u->a[i]);
		u->c[i] = u->a[i] = -1;
	}
	if (u->m >= 0)
		close(u->m);
	u->m = -1;
}

/*
 * Open a bus and, with h, give it nfdbus state: reply tracking, a match
 * rule of client 1, and a call from 1 to 2 that 2 owes an answer to.
 * While the module is being unloaded the netlink requests may fail.
 */
static void ubus_open(struct worker *w, struct ubus *u, struct nfdbus *h)
{
	static atomic_uint counter;
	struct bus_name bus;
	struct nfdbus_bus nb;
	bool state = false;
	int i, len;

	u->m = u->c[0] = u->c[1] = u->a[0] = u->a[1] = -1;
	memset(&bus, 0, sizeof(bus));
	bus.sa.sbus_family = AF_BUS;
	len = snprintf(bus.sa.sbus_path + 1, sizeof(bus.sa.sbus_path) - 1,
		       "nfdbus-unload-%d-%u", (int)getpid(),
		       atomic_fetch_add(&counter, 1));
	bus.len = BUS_SA_NOPATH + 1 + len;
	u->m = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
	if (u->m < 0 || bus_bind_name(u->m, &bus) || listen(u->m, 4)) {
		worker_fail(w, "master");
		return;
	}
	for (i = 0; i < 2; i++) {
		u->c[i] = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
		if (u->c[i] < 0 || bus_connect_name(u->c[i], &bus)) {
			worker_fail(w, "client");
			return;
		}
		u->a[i] = accept(u->m, NULL, NULL);
		if (u->a[i] < 0 ||
		    setsockopt(u->a[i], SOL_BUS, BUS_JOIN_BUS, NULL, 0)) {
			worker_fail(w, "join");
			return;
		}
	}
	w->made++;
	if (!h)
		return;
	nb = nfd_name(&bus);
	if (!nfdbus_set_bus(h, &nb, NFDBUS_BUS_REPLIES, 0, 0) &&
	    !nfdbus_add_match(h, &nb, 1, "type='signal'", NULL))
		state = true;
	else if (!atomic_load(&unload_unloading))
		worker_fail(w, "nfdbus state");
	/* the call is delivered, with nfdbus or without */
	if (bus_sendto(u->c[0], &bus, 2, unload_call.data, unload_call.len,
		       MSG_DONTWAIT) != (ssize_t)unload_call.len) {
		worker_fail(w, "call");
		return;
	}
	w->with_state += state;
}

static void *worker_run(void *arg)
{
	struct timespec ts = { 0, 500 * 1000 };
	struct ubus pool[UNLOAD_POOL];
	struct worker *w = arg;
	struct nfdbus *h = nfdbus_open();
	int i;

	if (!h)
		worker_fail(w, "nfdbus_open");
	for (i = 0; i < UNLOAD_POOL; i++)
		ubus_open(w, &pool[i], h);
	atomic_fetch_add(&unload_ready, 1);
	while (!atomic_load(&unload_go))
		nanosleep(&ts, NULL);
	/* bus after bus goes away, and a new one takes its place */
	for (i = 0; !atomic_load(&unload_stop); i = (i + 1) % UNLOAD_POOL) {
		ubus_close(&pool[i]);
		ubus_open(w, &pool[i], h);
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < UNLOAD_POOL; i++)
		ubus_close(&pool[i]);
	if (h)
		nfdbus_close(h);
	return NULL;
}

FIXTURE(unload) {
	struct nfd_bus probe;
};

FIXTURE_SETUP(unload)
{
	self->probe.h = NULL;
	self->probe.n = 0;
	self->probe.m = -1;
}

FIXTURE_TEARDOWN(unload)
{
	nfd_teardown(&self->probe);
	/* whatever failed, the tests after this one find nfdbus loaded */
	if (!nfdbus_module_loaded())
		nfdbus_load();
}

/* Client 1 of the probe bus answers a call nobody made: 0 or the errno;
 * when delivered, client 0 gets it.
 */
static int probe_forged_reply(struct __test_metadata *_metadata,
			      struct nfd_bus *b)
{
	/* from the first client (":0.1") of a fresh bus */
	struct nfd_blob r = nfd_call_msg(_metadata, ":0.1", NULL,
					 DBUS_MESSAGE_TYPE_METHOD_RETURN, 9, 99,
					 false);
	char buf[512];
	int err;

	err = bus_errno_of(bus_sendto(b->p[1].cfd, &b->bus, b->p[0].addr,
				      r.data, r.len, 0));
	if (!err)
		EXPECT_EQ((ssize_t)r.len, recv(b->p[0].cfd, buf, sizeof(buf),
					       MSG_DONTWAIT));
	free(r.data);
	return err;
}

TEST_F_TIMEOUT(unload, while_buses_go_away, 900)
{
	struct worker w[UNLOAD_THREADS];
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	unsigned int with_state = 0;
	char path[256];
	int cycle, i;

	if (!nfdbus_module_loaded()) {
		struct nfdbus *h = nfdbus_open();

		/* answered, but not by a module: built in */
		ASSERT_NE(NULL, h) TH_LOG("nfdbus is neither built in nor loaded");
		nfdbus_close(h);
		SKIP(return, "nfdbus is built into this kernel (a module only in the debug kernel)");
	}
	nfdbus_ko_path(path, sizeof(path));
	ASSERT_EQ(0, access(path, R_OK)) TH_LOG("%s: %s", path, strerror(errno));
	unload_call = nfd_call_msg(_metadata, ":0.1", NULL,
				   DBUS_MESSAGE_TYPE_METHOD_CALL, 5, 0, false);

	for (cycle = 0; cycle < UNLOAD_CYCLES; cycle++) {
		/* a probe bus with reply tracking, kept across the unload */
		nfd_teardown(&self->probe);
		nfd_setup(_metadata, &self->probe, 2);
		ASSERT_EQ(1, self->probe.p[0].addr);
		ASSERT_OK(nfdbus_set_bus(self->probe.h, &self->probe.nb,
					 NFDBUS_BUS_REPLIES, 0, 0));
		ASSERT_EQ(EPERM, probe_forged_reply(_metadata, &self->probe));

		atomic_store(&unload_ready, 0);
		atomic_store(&unload_go, 0);
		atomic_store(&unload_stop, 0);
		atomic_store(&unload_unloading, 0);
		memset(w, 0, sizeof(w));
		for (i = 0; i < UNLOAD_THREADS; i++) {
			w[i].id = i;
			ASSERT_OK(pthread_create(&w[i].thread, NULL,
						 worker_run, &w[i]));
		}
		while (atomic_load(&unload_ready) < UNLOAD_THREADS)
			nanosleep(&ts, NULL);
		for (i = 0; i < UNLOAD_THREADS; i++)
			ASSERT_EQ(0, w[i].err[0]) TH_LOG("%s", w[i].err);

		atomic_store(&unload_unloading, 1);
		atomic_store(&unload_go, 1);
		nanosleep(&ts, NULL);
		ASSERT_EQ(0, nfdbus_unload())
			TH_LOG("cycle %d: delete_module(nfdbus)", cycle);
		/* buses with state of before go on going away */
		nanosleep(&ts, NULL);
		atomic_store(&unload_stop, 1);
		for (i = 0; i < UNLOAD_THREADS; i++) {
			ASSERT_OK(pthread_join(w[i].thread, NULL));
			ASSERT_EQ(0, w[i].err[0]) TH_LOG("%s", w[i].err);
			with_state += w[i].with_state;
			TH_LOG("cycle %d thread %d: %u buses, %u with state",
			       cycle, i, w[i].made, w[i].with_state);
		}
		ASSERT_FALSE(nfdbus_module_loaded());

		/* the probe bus lost its state, and works on without it */
		ASSERT_EQ(0, probe_forged_reply(_metadata, &self->probe));

		ASSERT_EQ(0, nfdbus_load()) TH_LOG("cycle %d: finit_module: %s",
						cycle, strerror(errno));
		ASSERT_TRUE(nfdbus_module_loaded());
		/* the old bus stays without state; a new one gets it */
		ASSERT_EQ(0, probe_forged_reply(_metadata, &self->probe));
	}
	/* and the module loaded last works */
	nfd_teardown(&self->probe);
	nfd_setup(_metadata, &self->probe, 2);
	ASSERT_OK(nfdbus_set_bus(self->probe.h, &self->probe.nb,
				 NFDBUS_BUS_REPLIES, 0, 0));
	ASSERT_EQ(EPERM, probe_forged_reply(_metadata, &self->probe));
	/* buses with state went away while each unload ran */
	ASSERT_LE(UNLOAD_CYCLES * UNLOAD_THREADS * UNLOAD_POOL, with_state);
}

TEST_HARNESS_MAIN
