// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS netfilter hooks (af_bus.rst, "Netfilter hooks"), driven through
 * the af_bus_nf_test module (CONFIG_AF_BUS_NF_TEST): NF_BUS_SEND runs once
 * per message, NF_BUS_ROUTE once per recipient (eavesdroppers too),
 * NF_BUS_RECEIVE once per read or peek, each seeing the source and the
 * destination address; and NF_DROP at each hook does what the
 * documentation says: EPERM and nobody gets it at send, that recipient
 * only (and no flow control for it) at route, the next message instead
 * at receive.
 */
#include "af_bus_test.h"

#define PARAMS	"/sys/module/af_bus_nf_test/parameters/"
#define NONE	"18446744073709551615"

static void set_param(struct __test_metadata *_metadata, const char *name,
		      const char *val)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY);
	ASSERT_LE(0, fd) TH_LOG("%s: %s (CONFIG_AF_BUS_NF_TEST?)", path,
				strerror(errno));
	ASSERT_EQ((ssize_t)strlen(val), write(fd, val, strlen(val)))
		TH_LOG("%s = %s: %s", path, val, strerror(errno));
	close(fd);
}

static void set_addr(struct __test_metadata *_metadata, const char *name,
		     __u64 addr)
{
	char val[32];

	snprintf(val, sizeof(val), "%llu", (unsigned long long)addr);
	set_param(_metadata, name, val);
}

static __u64 get_param(struct __test_metadata *_metadata, const char *name)
{
	char path[128];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", path, strerror(errno));
	ASSERT_EQ(1, fscanf(f, "%llu", &v));
	fclose(f);
	return v;
}

static void reset(struct __test_metadata *_metadata)
{
	set_param(_metadata, "drop_send", NONE);
	set_param(_metadata, "drop_route", NONE);
	set_param(_metadata, "drop_receive", NONE);
	set_param(_metadata, "send_seen", "0");
	set_param(_metadata, "route_seen", "0");
	set_param(_metadata, "receive_seen", "0");
}

/* p[0..2] joined; the module watches this bus */
FIXTURE(nf) {
	struct bus_name bus;
	int m;
	struct bus_peer p[3];
};

FIXTURE_SETUP(nf)
{
	char name[BUS_PATH_MAX];

	bus_open_peers(_metadata, &self->bus, &self->m, self->p, 3, 3);
	snprintf(name, sizeof(name), "%.*s",
		 (int)(self->bus.len - BUS_SA_NOPATH - 1),
		 self->bus.sa.sbus_path + 1);
	reset(_metadata);
	set_param(_metadata, "bus", name);
}

FIXTURE_TEARDOWN(nf)
{
	set_param(_metadata, "bus", "");
	reset(_metadata);
	bus_close_peers(&self->m, self->p, 3);
}

TEST_F(nf, send_once_route_per_recipient)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "all");
	ASSERT_EQ(1ULL, get_param(_metadata, "send_seen"));
	ASSERT_EQ(3ULL, get_param(_metadata, "route_seen"));
	ASSERT_EQ(0ULL, get_param(_metadata, "receive_seen"));
	ASSERT_EQ(self->p[0].addr, get_param(_metadata, "send_src"));
	ASSERT_EQ(bus_mcast(0), get_param(_metadata, "send_dest"));
	ASSERT_EQ(bus_mcast(0), get_param(_metadata, "route_dest"));
}

TEST_F(nf, route_runs_for_eavesdroppers)
{
	ASSERT_OK(setsockopt(self->p[2].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "uni");
	ASSERT_EQ(1ULL, get_param(_metadata, "send_seen"));
	ASSERT_EQ(2ULL, get_param(_metadata, "route_seen"));
	ASSERT_EQ(self->p[1].addr, get_param(_metadata, "send_dest"));
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "uni");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "uni");
}

TEST_F(nf, receive_once_per_read_and_peek)
{
	char buf[8];

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "r");
	ASSERT_EQ(1, recv(self->p[1].cfd, buf, sizeof(buf), MSG_PEEK));
	ASSERT_EQ(1, recv(self->p[1].cfd, buf, sizeof(buf), MSG_PEEK));
	ASSERT_EQ(1, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(3ULL, get_param(_metadata, "receive_seen"));
	ASSERT_EQ(self->p[0].addr, get_param(_metadata, "receive_src"));
	ASSERT_EQ(self->p[1].addr, get_param(_metadata, "receive_dest"));
}

/* Without an address: dest is the other end of the pair. */
TEST_F(nf, dest_of_messages_without_address)
{
	bus_send_plain(_metadata, self->p[1].cfd, "up");
	ASSERT_EQ(self->p[1].addr, get_param(_metadata, "send_src"));
	ASSERT_EQ(BUS_MASTER_ADDR, get_param(_metadata, "send_dest"));
	bus_send_plain(_metadata, self->p[1].afd, "down");
	ASSERT_EQ(BUS_MASTER_ADDR, get_param(_metadata, "send_src"));
	ASSERT_EQ(self->p[1].addr, get_param(_metadata, "send_dest"));
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "up");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		   "down");
}

TEST_F(nf, send_drop_eperm_nobody_gets_it)
{
	set_addr(_metadata, "drop_send", self->p[0].addr);
	ASSERT_ERRNO(EPERM, bus_sendto(self->p[0].cfd, &self->bus,
				       self->p[1].addr, "x", 1, 0));
	ASSERT_ERRNO(EPERM, bus_sendto(self->p[0].cfd, &self->bus,
				       bus_mcast(0), "x", 1, 0));
	ASSERT_ERRNO(EPERM, send(self->p[0].cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(3ULL, get_param(_metadata, "send_seen"));
	ASSERT_EQ(0ULL, get_param(_metadata, "route_seen"));
	bus_expect_quiet(_metadata, self->p, 3);
	/* others still send */
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		     "ok");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "ok");
}

TEST_F(nf, route_drop_skips_that_recipient_only)
{
	set_addr(_metadata, "drop_route", self->p[1].addr);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "fan");
	/* once per member, though the copies are made after the hook ran */
	ASSERT_EQ(3ULL, get_param(_metadata, "route_seen"));
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "fan");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "fan");
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(nf, route_drop_unicast_goes_nowhere_send_succeeds)
{
	set_addr(_metadata, "drop_route", self->p[1].addr);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "lost");
	bus_expect_quiet(_metadata, self->p, 3);
	set_addr(_metadata, "drop_route", BUS_MASTER_ADDR);
	bus_send_plain(_metadata, self->p[0].cfd, "to master");
	bus_expect_quiet(_metadata, self->p, 3);
}

/* A recipient the route hook skips does not hold the sender up. */
TEST_F(nf, route_drop_full_recipient_does_not_block)
{
	int qlen = 1;

	ASSERT_OK(setsockopt(self->p[1].afd, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	bus_send_plain(_metadata, self->p[1].afd, "full");
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(0), "m", 1, MSG_DONTWAIT));
	set_addr(_metadata, "drop_route", self->p[1].addr);
	ASSERT_EQ(1, bus_sendto(self->p[0].cfd, &self->bus, bus_mcast(0),
				"m", 1, MSG_DONTWAIT));
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "m");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "m");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		   "full");
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(nf, receive_drop_goes_on_to_next_message)
{
	char buf[8];

	set_addr(_metadata, "drop_receive", self->p[0].addr);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "a");
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		     "b");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "c");
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		     "d");
	/* a peek drops "a" and shows "b", which stays */
	ASSERT_EQ(1, recv(self->p[1].cfd, buf, sizeof(buf), MSG_PEEK));
	ASSERT_EQ('b', buf[0]);
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		   "b");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		   "d");
	bus_expect_none(_metadata, self->p[1].cfd);
	/* a blocking read of dropped messages only times out */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "e");
	bus_set_timeouts(_metadata, self->p[1].cfd, 200);
	ASSERT_ERRNO(EAGAIN, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_HARNESS_MAIN
