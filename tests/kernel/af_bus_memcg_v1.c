// SPDX-License-Identifier: GPL-2.0
/*
 * Memory cgroups of cgroup v1 (Documentation/networking/af_bus.rst,
 * "Socket memory and memory cgroups"): there, sockets are charged only
 * in a cgroup whose memory.kmem.tcp.limit_in_bytes was set, and a
 * cgroup at that limit refuses the charge.  A send whose sender's
 * cgroup refuses the message, and a unicast whose recipient's cgroup
 * refuses its copy, fail with ENOBUFS and deliver nothing; a multicast
 * copy that a recipient's cgroup refuses is dropped for that recipient
 * alone and counted in its drops (SO_RXQ_OVFL), the others get theirs.
 *
 * The memory controller moves to a v1 hierarchy only while no v2
 * cgroup uses it, and af_bus_memory's tests use it on v2 (leaving
 * offline cgroups behind): these tests run in a boot of their own,
 * which run-qemu.sh makes with afbus.cgroup_v1=1 on the kernel's
 * command line, and skip in any other.
 */
#include "af_bus_test.h"
#include <sched.h>
#include <sys/mount.h>

#define KIB		1024L
#define V1_ROOT		"/tmp/afbus-cg1"
#define V1_LIMIT	(128 * KIB)	/* memory.kmem.tcp.limit_in_bytes */
#define V1_MSG		(64 * KIB)	/* two do not fit in V1_LIMIT */
#define V1_PFX		0x79

/* p[0]: a client of the root cgroup, which v1 charges for nothing */
BUS_PEERS_FIXTURE(memcg_v1, 1, 1)

static bool v1_boot(void)
{
	char line[1024] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return strstr(line, "afbus.cgroup_v1=1");
}

static long v1_read(const char *cg, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return bus_read_long(path);
}

/* write "v" to cg/file: 0 or the errno */
static int v1_write(const char *cg, const char *file, long v)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return bus_write_long(path, v);
}

/*
 * The v1 memory hierarchy, in a mount namespace of the calling test's
 * own, and its cgroup cg with a socket memory limit of V1_LIMIT.
 */
static void v1_setup(struct __test_metadata *_metadata, const char *cg)
{
	ASSERT_OK(unshare(CLONE_NEWNS));
	ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	mkdir(V1_ROOT, 0755);
	ASSERT_EQ(0, mount("none", V1_ROOT, "cgroup", 0, "memory"))
		TH_LOG("cgroup v1 memory: %s", strerror(errno));
	rmdir(cg);
	ASSERT_OK(mkdir(cg, 0755));
	ASSERT_EQ(0, v1_write(cg, "memory.kmem.tcp.limit_in_bytes", V1_LIMIT));
	ASSERT_EQ(V1_LIMIT, v1_read(cg, "memory.kmem.tcp.limit_in_bytes"));
}

/* move the calling process into cg */
static void v1_enter(struct __test_metadata *_metadata, const char *cg)
{
	ASSERT_EQ(0, v1_write(cg, "cgroup.procs", getpid()));
}

/*
 * A client made in cgroup cg, joined, with address V1_PFX:client;
 * returns its socket, its accepted socket in *afd.
 */
static int v1_client(struct __test_metadata *_metadata,
		     FIXTURE_DATA(memcg_v1) *self, const char *cg,
		     __u64 client, int *afd)
{
	int fd;

	v1_enter(_metadata, cg);
	fd = bus_connect(_metadata, &self->bus);
	*afd = bus_accept(_metadata, self->m);
	bus_join(_metadata, *afd);
	ASSERT_OK(bus_addr_opt(*afd, BUS_ADD_ADDR, bus_mkaddr(V1_PFX, client)));
	v1_enter(_metadata, V1_ROOT);
	return fd;
}

TEST_F(memcg_v1, unicast_refused_by_recipient_cgroup)
{
	static char buf[V1_MSG], rbuf[V1_MSG];
	const char *cg = V1_ROOT "/rcpt";
	int r, ra, n, i;
	long fails;
	ssize_t ret;

	if (!v1_boot())
		SKIP(return, "cgroup v1 runs in a boot of its own (afbus.cgroup_v1=1)");
	v1_setup(_metadata, cg);
	r = v1_client(_metadata, self, cg, 1, &ra);
	fails = v1_read(cg, "memory.kmem.tcp.failcnt");
	ASSERT_LE(0, fails);

	/* p[0], of the root cgroup, sends to r until r's cgroup refuses */
	for (n = 0; n < 8; n++) {
		buf[0] = n;
		ret = bus_sendto(self->p[0].cfd, &self->bus,
				 bus_mkaddr(V1_PFX, 1), buf, V1_MSG,
				 MSG_DONTWAIT);
		if (ret != V1_MSG)
			break;
	}
	ASSERT_EQ(-1, ret);
	ASSERT_EQ(ENOBUFS, errno) TH_LOG("after %d: %s", n, strerror(errno));
	TH_LOG("%d message(s) of %ld bytes queued, then ENOBUFS; usage %ld",
	       n, V1_MSG, v1_read(cg, "memory.kmem.tcp.usage_in_bytes"));
	ASSERT_LE(1, n);
	ASSERT_GE(V1_LIMIT / V1_MSG, n);
	ASSERT_LT(fails, v1_read(cg, "memory.kmem.tcp.failcnt"));
	ASSERT_LE((long)n * V1_MSG, v1_read(cg, "memory.kmem.tcp.usage_in_bytes"));

	/* r has what was sent before, whole and in order, nothing more */
	for (i = 0; i < n; i++) {
		ASSERT_EQ(V1_MSG, recv(r, rbuf, sizeof(rbuf), MSG_DONTWAIT));
		ASSERT_EQ(i, rbuf[0]);
	}
	ASSERT_EQ(-1, recv(r, rbuf, sizeof(rbuf), MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);

	/* what r read was given back: the next one goes */
	ASSERT_EQ(V1_MSG, bus_sendto(self->p[0].cfd, &self->bus,
				     bus_mkaddr(V1_PFX, 1), buf, V1_MSG,
				     MSG_DONTWAIT));
	ASSERT_EQ(V1_MSG, recv(r, rbuf, sizeof(rbuf), MSG_DONTWAIT));

	close(r);
	close(ra);
	rmdir(cg);
}

TEST_F(memcg_v1, send_refused_by_sender_cgroup)
{
	static char big[2 * V1_LIMIT], rbuf[2 * V1_LIMIT];
	const char *cg = V1_ROOT "/sndr";
	int y, ya, val = 2 * V1_LIMIT;

	if (!v1_boot())
		SKIP(return, "cgroup v1 runs in a boot of its own (afbus.cgroup_v1=1)");
	ASSERT_OK(setsockopt(self->m, SOL_BUS, BUS_SET_MSG_MAX, &val,
			     sizeof(val)));
	v1_setup(_metadata, cg);
	y = v1_client(_metadata, self, cg, 2, &ya);

	/* y is charged for a message while sending it: more than it may */
	ASSERT_EQ(-1, bus_sendto(y, &self->bus, self->p[0].addr, big,
				 sizeof(big), MSG_DONTWAIT));
	ASSERT_EQ(ENOBUFS, errno) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(-1, recv(self->p[0].cfd, rbuf, sizeof(rbuf), MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);

	/* within its limit, y sends */
	big[0] = 'y';
	ASSERT_EQ(V1_MSG, bus_sendto(y, &self->bus, self->p[0].addr, big,
				     V1_MSG, MSG_DONTWAIT));
	ASSERT_EQ(V1_MSG, recv(self->p[0].cfd, rbuf, sizeof(rbuf),
			       MSG_DONTWAIT));
	ASSERT_EQ('y', rbuf[0]);

	close(y);
	close(ya);
	rmdir(cg);
}

TEST_F(memcg_v1, multicast_copy_dropped_for_refusing_cgroup)
{
	static char buf[V1_MSG], rbuf[V1_MSG];
	const char *cg = V1_ROOT "/mcast";
	int r, ra, z, za, drops, one = 1, i;

	if (!v1_boot())
		SKIP(return, "cgroup v1 runs in a boot of its own (afbus.cgroup_v1=1)");
	v1_setup(_metadata, cg);
	r = v1_client(_metadata, self, cg, 1, &ra);
	ASSERT_OK(setsockopt(r, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)));
	/* p[0], of the root cgroup, is the other member of the prefix */
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR,
			       bus_mkaddr(V1_PFX, 2)));

	/* z, of the root cgroup too, multicasts 0, 1 (r's cgroup refuses
	 * r's copy), and, once r read 0, 2
	 */
	z = bus_connect(_metadata, &self->bus);
	za = bus_accept(_metadata, self->m);
	bus_join(_metadata, za);
	for (i = 0; i < 2; i++) {
		buf[0] = i;
		ASSERT_EQ(V1_MSG, bus_sendto(z, &self->bus,
					     bus_mcast(V1_PFX), buf, V1_MSG,
					     MSG_DONTWAIT));
	}
	ASSERT_EQ(V1_MSG, bus_recv_ovfl(r, rbuf, sizeof(rbuf), &drops));
	ASSERT_EQ(0, rbuf[0]);
	ASSERT_EQ(-1, recv(r, rbuf, sizeof(rbuf), MSG_DONTWAIT));
	ASSERT_EQ(EAGAIN, errno);
	buf[0] = 2;
	ASSERT_EQ(V1_MSG, bus_sendto(z, &self->bus, bus_mcast(V1_PFX), buf,
				     V1_MSG, MSG_DONTWAIT));
	ASSERT_EQ(V1_MSG, bus_recv_ovfl(r, rbuf, sizeof(rbuf), &drops));
	ASSERT_EQ(2, rbuf[0]);
	ASSERT_EQ(1, drops) TH_LOG("r's drops: %d", drops);

	/* p[0] got all three, in order */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(V1_MSG, recv(self->p[0].cfd, rbuf, sizeof(rbuf),
				       MSG_DONTWAIT));
		ASSERT_EQ(i, rbuf[0]);
	}

	close(z);
	close(za);
	close(r);
	close(ra);
	rmdir(cg);
}

TEST_HARNESS_MAIN
