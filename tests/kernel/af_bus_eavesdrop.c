// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS eavesdropping (af_bus.rst, "Eavesdropping"): BUS_SET_EAVESDROP
 * and BUS_UNSET_EAVESDROP on an accepted socket, who may use them and
 * their errors; what an eavesdropper gets (a copy of every unicast and
 * multicast on the bus, to and from the master included, none of its own
 * messages, no second copy, in the bus' order); and that a full
 * eavesdropper drops and counts copies instead of holding up the bus.
 */
#include "af_bus_test.h"

/* p[0..2] joined, p[3] not */
BUS_PEERS_FIXTURE(eav, 4, 3)

#define PFX	5

static int eavesdrop(int afd, bool on)
{
	return setsockopt(afd, SOL_BUS,
			  on ? BUS_SET_EAVESDROP : BUS_UNSET_EAVESDROP,
			  NULL, 0);
}

TEST_F(eav, client_and_fresh_socket_eperm)
{
	int fresh = bus_socket(_metadata, BUS_PROTO_NONE);

	ASSERT_ERRNO(EPERM, eavesdrop(self->p[0].cfd, true));
	ASSERT_ERRNO(EPERM, eavesdrop(self->p[0].cfd, false));
	ASSERT_ERRNO(EPERM, eavesdrop(fresh, true));
	close(fresh);
	/* and p0 is no eavesdropper */
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "x");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "x");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, listener_einval)
{
	ASSERT_ERRNO(EINVAL, eavesdrop(self->m, true));
	ASSERT_ERRNO(EINVAL, eavesdrop(self->m, false));
}

TEST_F(eav, twice_ealready)
{
	ASSERT_ERRNO(EALREADY, eavesdrop(self->p[0].afd, false));
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	ASSERT_ERRNO(EALREADY, eavesdrop(self->p[0].afd, true));
	ASSERT_OK(eavesdrop(self->p[0].afd, false));
	ASSERT_ERRNO(EALREADY, eavesdrop(self->p[0].afd, false));
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
}

TEST_F(eav, gone_client_enotconn)
{
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	ASSERT_ERRNO(ENOTCONN, eavesdrop(self->p[0].afd, true));
}

TEST_F(eav, sees_unicast_between_others)
{
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "one to two");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "one to two");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "one to two");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, sees_traffic_to_and_from_the_master)
{
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	bus_send_plain(_metadata, self->p[1].cfd, "up");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "up");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "up");
	bus_send_plain(_metadata, self->p[2].afd, "down");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, BUS_MASTER_ADDR,
		   "down");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		   "down");
	/* an unowned address takes the default route, and is seen too */
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, 0x7777, "lost");
	bus_expect(_metadata, self->p[2].afd, &self->bus, self->p[2].addr,
		   "lost");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[2].addr,
		   "lost");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, multicast_once_member_or_not)
{
	ASSERT_OK(bus_addr_opt(self->p[2].afd, BUS_ADD_ADDR,
			       bus_mkaddr(PFX, 2)));
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	/* p0 is in prefix 0: one copy, as a member */
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, bus_mcast(0),
		     "all");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "all");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[1].addr,
		   "all");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "all");
	/* p0 is not in PFX: still one copy */
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, bus_mcast(PFX),
		     "some");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "some");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "some");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, no_copy_of_own_messages_nor_second_copy)
{
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "mine");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "mine");
	bus_send_plain(_metadata, self->p[0].cfd, "to master");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "to master");
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		     "for you");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "for you");
	bus_send_plain(_metadata, self->p[0].afd, "from master");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		   "from master");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, unset_stops_copies)
{
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	ASSERT_OK(eavesdrop(self->p[0].afd, false));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "private");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "private");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, unjoined_client_can_eavesdrop)
{
	ASSERT_OK(eavesdrop(self->p[3].afd, true));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "psst");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "psst");
	bus_expect(_metadata, self->p[3].cfd, &self->bus, self->p[1].addr,
		   "psst");
	/* it still cannot talk to the bus itself */
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[3].cfd, &self->bus,
					      self->p[1].addr, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, shut_down_reading_gets_nothing)
{
	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	ASSERT_OK(shutdown(self->p[0].cfd, SHUT_RD));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "still works");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "still works");
	bus_expect_quiet(_metadata, self->p + 1, 3);
}

/* Sends from several sockets, one after the other: the eavesdropper
 * sees them in exactly that order.
 */
TEST_F(eav, copies_in_bus_order)
{
	static const struct { int from; int to; bool master; } seq[] = {
		{ 1, 2, false }, { 2, 1, false }, { 1, -1, false },
		{ 2, -1, true }, { 2, 1, false }, { 1, 0, false },
		{ 1, -2, false }, { 2, 2, false },
	};
	char s[32];
	unsigned int i;
	__u64 src;

	ASSERT_OK(eavesdrop(self->p[3].afd, true));
	for (i = 0; i < ARRAY_SIZE(seq); i++) {
		snprintf(s, sizeof(s), "m%u", i);
		if (seq[i].master)
			bus_send_plain(_metadata, self->p[seq[i].from].afd, s);
		else if (seq[i].to == -1)
			bus_send_plain(_metadata, self->p[seq[i].from].cfd, s);
		else if (seq[i].to == -2)
			bus_send_str(_metadata, self->p[seq[i].from].cfd,
				     &self->bus, bus_mcast(0), s);
		else
			bus_send_str(_metadata, self->p[seq[i].from].cfd,
				     &self->bus, self->p[seq[i].to].addr, s);
	}
	for (i = 0; i < ARRAY_SIZE(seq); i++) {
		snprintf(s, sizeof(s), "m%u", i);
		src = seq[i].master ? BUS_MASTER_ADDR :
				      self->p[seq[i].from].addr;
		bus_expect(_metadata, self->p[3].cfd, &self->bus, src, s);
	}
	bus_expect_none(_metadata, self->p[3].cfd);
}

TEST_F(eav, full_eavesdropper_drops_and_counts)
{
	int one = 1, qlen = 2, drops, i;
	char buf[16], s[16];

	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	ASSERT_OK(setsockopt(self->p[0].afd, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	ASSERT_OK(setsockopt(self->p[0].cfd, SOL_SOCKET, SO_RXQ_OVFL, &one,
			     sizeof(one)));
	/* none of the five waits for the full eavesdropper */
	for (i = 0; i < 5; i++) {
		snprintf(s, sizeof(s), "n%d", i);
		ASSERT_EQ((ssize_t)strlen(s),
			  bus_sendto(self->p[1].cfd, &self->bus,
				     self->p[2].addr, s, strlen(s),
				     MSG_DONTWAIT));
	}
	for (i = 0; i < 5; i++) {
		snprintf(s, sizeof(s), "n%d", i);
		bus_expect(_metadata, self->p[2].cfd, &self->bus,
			   self->p[1].addr, s);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(2, bus_recv_ovfl(self->p[0].cfd, buf, sizeof(buf),
				       &drops));
		ASSERT_EQ(0, memcmp(buf, i ? "n1" : "n0", 2));
		ASSERT_EQ(-1, drops);
	}
	bus_expect_none(_metadata, self->p[0].cfd);
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "n5");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "n5");
	ASSERT_EQ(2, bus_recv_ovfl(self->p[0].cfd, buf, sizeof(buf), &drops));
	ASSERT_EQ(0, memcmp(buf, "n5", 2));
	ASSERT_EQ(3, drops);
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(eav, ends_when_client_leaves)
{
	struct bus_peer q;

	ASSERT_OK(eavesdrop(self->p[0].afd, true));
	bus_peer_close(&self->p[0]);
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "after");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "after");
	/* a new client does not inherit it */
	bus_peer_open(_metadata, &q, self->m, &self->bus, true);
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[2].addr,
		     "again");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "again");
	bus_expect_none(_metadata, q.cfd);
	bus_peer_close(&q);
	bus_expect_quiet(_metadata, self->p + 1, 3);
}

TEST_HARNESS_MAIN
