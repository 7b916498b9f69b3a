// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS SOL_BUS socket options on the master's accepted sockets:
 * BUS_JOIN_BUS (what a client may reach before and after it), BUS_ADD_ADDR
 * and BUS_DEL_ADDR with each of their errors, which sockets may use them,
 * and unknown options; the limit and eavesdrop options are tested in
 * af_bus_limits.c and af_bus_eavesdrop.c.  Bad optval/optlen: af_bus_badinput.c.
 */
#include "af_bus_test.h"

#define ADDR_P1	bus_mkaddr(1, 0x1234)

/* A bus with two connected and accepted clients, neither joined. */
BUS_PEERS_FIXTURE(join, 2, 0)

/* c0 sending "x" to addr must fail with EHOSTUNREACH and reach nobody. */
static void expect_unreachable(struct __test_metadata *_metadata,
			       FIXTURE_DATA(join) *self, __u64 addr)
{
	ASSERT_ERRNO(EHOSTUNREACH,
		     bus_sendto(self->p[0].cfd, &self->bus, addr, "x", 1, 0))
		TH_LOG("destination %#llx", (unsigned long long)addr);
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, before_join_send_reaches_master)
{
	bus_send_plain(_metadata, self->p[0].cfd, "hello");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "hello");
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, before_join_sendto_master_address)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		     "hello");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "hello");
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, before_join_to_joined_client_ehostunreach)
{
	bus_join(_metadata, self->p[1].afd);
	expect_unreachable(_metadata, self, self->p[1].addr);
}

TEST_F(join, before_join_to_unjoined_client_ehostunreach)
{
	expect_unreachable(_metadata, self, self->p[1].addr);
}

TEST_F(join, before_join_to_self_ehostunreach)
{
	expect_unreachable(_metadata, self, self->p[0].addr);
}

TEST_F(join, before_join_to_own_added_address_ehostunreach)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	expect_unreachable(_metadata, self, ADDR_P1);
}

TEST_F(join, before_join_multicast_prefix0_ehostunreach)
{
	bus_join(_metadata, self->p[1].afd);
	expect_unreachable(_metadata, self, bus_mcast(0));
}

TEST_F(join, before_join_multicast_prefix1_ehostunreach)
{
	bus_join(_metadata, self->p[1].afd);
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, ADDR_P1));
	expect_unreachable(_metadata, self, bus_mcast(1));
}

/* Before join an unowned address is not routed to the master. */
TEST_F(join, before_join_unowned_ehostunreach)
{
	expect_unreachable(_metadata, self, bus_mkaddr(0, 0x777));
	expect_unreachable(_metadata, self, bus_mkaddr(5, 1));
}

TEST_F(join, join_enables_unicast)
{
	bus_join(_metadata, self->p[0].afd);
	bus_join(_metadata, self->p[1].afd);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "hi");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "hi");
	bus_expect_quiet(_metadata, self->p, 2);
}

/* Joining p0 lets p0 send; p1, not joined, still cannot reach p0. */
TEST_F(join, join_is_per_client)
{
	bus_join(_metadata, self->p[0].afd);
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[1].cfd, &self->bus,
					      self->p[0].addr, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, join_twice_ealready)
{
	bus_join(_metadata, self->p[0].afd);
	ASSERT_ERRNO(EALREADY,
		     setsockopt(self->p[0].afd, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
	/* Still joined. */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		     "me");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr, "me");
}

TEST_F(join, client_socket_options_eperm)
{
	int c = self->p[0].cfd;

	ASSERT_ERRNO(EPERM, setsockopt(c, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
	ASSERT_ERRNO(EPERM, bus_addr_opt(c, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_ERRNO(EPERM, bus_addr_opt(c, BUS_DEL_ADDR, ADDR_P1));
	/* The client did not join itself. */
	expect_unreachable(_metadata, self, self->p[1].addr);
}

TEST_F(join, unconnected_socket_options_eperm)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EPERM, setsockopt(fd, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
	ASSERT_ERRNO(EPERM, bus_addr_opt(fd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_ERRNO(EPERM, bus_addr_opt(fd, BUS_DEL_ADDR, ADDR_P1));
	close(fd);
}

TEST_F(join, listening_socket_options_einval)
{
	int m = self->m;

	ASSERT_ERRNO(EINVAL, setsockopt(m, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(m, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(m, BUS_DEL_ADDR, ADDR_P1));
}

TEST_F(join, client_gone_options_enotconn)
{
	int a = self->p[0].afd;

	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR, ADDR_P1));
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	ASSERT_ERRNO(ENOTCONN, setsockopt(a, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
	ASSERT_ERRNO(ENOTCONN, bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(1, 9)));
	ASSERT_ERRNO(ENOTCONN, bus_addr_opt(a, BUS_DEL_ADDR, ADDR_P1));
}

TEST_F(join, add_addr_unjoined_client)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
}

TEST_F(join, add_addr_makes_address_reachable)
{
	bus_join(_metadata, self->p[0].afd);
	bus_join(_metadata, self->p[1].afd);
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, ADDR_P1, "wkn");
	/* Seen as coming from p1's prefix-0 address. */
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr, "wkn");
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, add_addr_several_prefixes)
{
	int a = self->p[0].afd;

	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(1, 1)));
	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(1, 2)));
	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(2, 1)));
	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(0xffff, 1)));
	ASSERT_OK(bus_addr_opt(a, BUS_ADD_ADDR,
			       bus_mkaddr(0xffff, BUS_CLIENT_MASK - 1)));
}

TEST_F(join, add_addr_prefix0_einval)
{
	int a = self->p[0].afd;

	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, bus_mkaddr(0, 0x77)));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, self->p[1].addr));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, BUS_MASTER_ADDR));
}

TEST_F(join, add_addr_multicast_einval)
{
	int a = self->p[0].afd;

	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, bus_mcast(1)));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, bus_mcast(0)));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_ADD_ADDR, bus_mcast(0xffff)));
}

TEST_F(join, add_addr_owned_by_other_eaddrinuse)
{
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_ERRNO(EADDRINUSE,
		     bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	/* p1 still owns it: its deletion works, p0's fails. */
	ASSERT_ERRNO(EADDRNOTAVAIL,
		     bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_DEL_ADDR, ADDR_P1));
}

TEST_F(join, add_addr_owned_by_self_eaddrinuse)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_ERRNO(EADDRINUSE,
		     bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
}

TEST_F(join, del_addr_not_owned_eaddrnotavail)
{
	ASSERT_ERRNO(EADDRNOTAVAIL,
		     bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
}

TEST_F(join, del_addr_prefix0_einval)
{
	int a = self->p[0].afd;

	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_DEL_ADDR, self->p[0].addr));
	ASSERT_ERRNO(EINVAL, bus_addr_opt(a, BUS_DEL_ADDR, bus_mkaddr(0, 0x77)));
	/* The client kept its address: the master still reaches it. */
	bus_send_str(_metadata, self->p[1].afd, &self->bus, self->p[0].addr,
		     "still");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		   "still");
}

TEST_F(join, del_addr_twice_eaddrnotavail)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
	ASSERT_ERRNO(EADDRNOTAVAIL,
		     bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
}

/* A deleted address is unowned: sends to it go to the master. */
TEST_F(join, del_addr_routes_to_master)
{
	bus_join(_metadata, self->p[0].afd);
	bus_join(_metadata, self->p[1].afd);
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, ADDR_P1, "gone");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "gone");
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, del_addr_then_add_to_other_client)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, ADDR_P1));
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, ADDR_P1));
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, ADDR_P1));
	bus_send_str(_metadata, self->p[0].afd, &self->bus, ADDR_P1, "moved");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		   "moved");
	bus_expect_quiet(_metadata, self->p, 2);
}

/* setsockopt(fd, SOL_BUS) of each of the n opts with val gives ENOPROTOOPT. */
static void expect_no_such_options(struct __test_metadata *_metadata, int fd,
				   const int *opts, size_t n,
				   const void *val, socklen_t len)
{
	size_t i;

	for (i = 0; i < n; i++) {
		ASSERT_ERRNO(ENOPROTOOPT,
			     setsockopt(fd, SOL_BUS, opts[i], val, len))
			TH_LOG("option %d", opts[i]);
	}
}

TEST_F(join, unknown_options_enoprotoopt)
{
	const int opts[] = { 0, 13, 255, 0x10000, -1 };
	struct bus_addr addr = { .s_addr = ADDR_P1 };

	expect_no_such_options(_metadata, self->p[0].afd, opts,
			       ARRAY_SIZE(opts), &addr, sizeof(addr));
}

TEST_F(join, getsockopt_enoprotoopt)
{
	int fds[] = { self->p[0].afd, self->p[0].cfd, self->m };
	int opts[] = { BUS_ADD_ADDR, BUS_JOIN_BUS, BUS_DEL_ADDR,
		       BUS_SET_MAXQLEN, BUS_SET_MCAST_DROP, BUS_SET_RCVBUF,
		       BUS_SET_MSG_MAX, BUS_NO_DEFAULT_ROUTE, 12 };
	char buf[64];
	socklen_t len;
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(fds); i++) {
		for (j = 0; j < ARRAY_SIZE(opts); j++) {
			int opt = opts[j];

			len = sizeof(buf);
			ASSERT_ERRNO(ENOPROTOOPT, getsockopt(fds[i], SOL_BUS,
							     opt, buf, &len))
				TH_LOG("socket %u option %d", i, opt);
		}
	}
}

/*
 * A sender waiting for room on the default route (its message to an
 * address nobody owns goes to its own full accepted socket) is woken
 * when the master gives a client that address, or joins the client that
 * owns it, and the message goes to that client; before, it waited until
 * its SO_SNDTIMEO ran out.
 */
static void default_route_woken(struct __test_metadata *_metadata,
				FIXTURE_DATA(join) *self, bool by_join)
{
	struct bus_send_arg arg = {
		.fd = self->p[0].cfd, .bus = &self->bus, .to = ADDR_P1,
		.val = 0x1234,
	};
	struct bus_call call = { .fn = bus_send_call, .arg = &arg };
	unsigned int n = 0;
	char buf[8];
	__u32 v;

	bus_join(_metadata, self->p[0].afd);
	if (by_join)
		ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, ADDR_P1));
	else
		bus_join(_metadata, self->p[1].afd);
	/* fill the master's queue for c0 */
	while (bus_sendto(self->p[0].cfd, &self->bus, BUS_MASTER_ADDR, "x", 1,
			  MSG_DONTWAIT) == 1)
		ASSERT_GT(100000U, ++n);
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_LT(0U, n);
	bus_call_start_blocked(_metadata, &call);
	if (by_join)
		bus_join(_metadata, self->p[1].afd);
	else
		ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, ADDR_P1));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	ASSERT_EQ(4, recv(self->p[1].cfd, &v, sizeof(v), MSG_DONTWAIT));
	ASSERT_EQ(0x1234U, v);
	while (n--)
		ASSERT_EQ(1, recv(self->p[0].afd, buf, sizeof(buf),
				  MSG_DONTWAIT));
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(join, add_addr_wakes_default_route_sender)
{
	default_route_woken(_metadata, self, false);
}

TEST_F(join, join_wakes_default_route_sender)
{
	default_route_woken(_metadata, self, true);
}

TEST_HARNESS_MAIN
