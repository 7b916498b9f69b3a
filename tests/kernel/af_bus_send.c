// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS message delivery: unicast between clients and to the master,
 * the default route of unowned addresses (and BUS_NO_DEFAULT_ROUTE,
 * which refuses it), multicast per prefix, what the
 * master may send, msg_name, the path check of sendto, receive flags
 * (MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT), EMSGSIZE, zero-length messages,
 * ordering, and a full receive queue.
 */
#include "af_bus_test.h"

#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>

#define P1_A	bus_mkaddr(1, 0x10)
#define P1_B	bus_mkaddr(1, 0x20)
#define P1_C	bus_mkaddr(1, 0x30)
#define UNOWNED	bus_mkaddr(0, 0x999)

/*
 * A bus with four clients: p[0], p[1], p[2] joined (addresses 1, 2, 3)
 * and p[3] connected and accepted but not joined (address 4).
 */
BUS_PEERS_FIXTURE(bus, 4, 3)

/*
 * Raise fd's send and receive buffers far above what a test queues, so
 * that only the queue length limit can make a send wait.
 */
static void raise_buffers(struct __test_metadata *_metadata, int fd)
{
	int big = 32 << 20;

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)));
	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)));
}

static void add_addr(struct __test_metadata *_metadata, int afd, __u64 addr)
{
	ASSERT_OK(bus_addr_opt(afd, BUS_ADD_ADDR, addr));
}

TEST_F(bus, unicast_client_to_client)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "to p1");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "to p1");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, unicast_to_self)
{
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, self->p[2].addr,
		     "me");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[2].addr, "me");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, unicast_to_added_address_sender_is_prefix0)
{
	add_addr(_metadata, self->p[0].afd, P1_A);
	add_addr(_metadata, self->p[1].afd, P1_B);
	/* p0 owns P1_A too, yet the receiver sees p0's prefix-0 address. */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_B, "wkn");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "wkn");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, send_without_address_to_master)
{
	bus_send_plain(_metadata, self->p[1].cfd, "hello master");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "hello master");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, sendto_master_address)
{
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		     "to 0");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "to 0");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* addrlen == offsetof(sbus_path): no path at all means "my bus". */
TEST_F(bus, sendto_without_path_means_my_bus)
{
	struct sockaddr_bus sa = { .sbus_family = AF_BUS };
	int c = self->p[0].cfd;

	sa.sbus_addr.s_addr = self->p[1].addr;
	ASSERT_EQ(3, sendto(c, "abc", 3, MSG_NOSIGNAL,
			    (struct sockaddr *)&sa, BUS_SA_NOPATH));
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "abc");
	sa.sbus_addr.s_addr = BUS_MASTER_ADDR;
	ASSERT_EQ(3, sendto(c, "def", 3, MSG_NOSIGNAL,
			    (struct sockaddr *)&sa, BUS_SA_NOPATH));
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "def");
	sa.sbus_addr.s_addr = self->p[2].addr;
	ASSERT_EQ(3, sendto(self->p[0].afd, "ghi", 3, MSG_NOSIGNAL,
			    (struct sockaddr *)&sa, BUS_SA_NOPATH));
	bus_expect(_metadata, self->p[2].cfd, &self->bus, BUS_MASTER_ADDR,
		   "ghi");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* Unowned addresses go to the master, on the sender's own accepted socket. */
TEST_F(bus, unowned_address_routes_to_senders_master_socket)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, UNOWNED, "u0");
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, P1_C, "u1");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "u0");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr, "u1");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, unjoined_owner_routes_to_master)
{
	add_addr(_metadata, self->p[3].afd, P1_C);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[3].addr,
		     "a");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_C, "b");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "a");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "b");
	bus_expect_quiet(_metadata, self->p, 4);
}

static int no_default_route(int fd, int val)
{
	return setsockopt(fd, SOL_BUS, BUS_NO_DEFAULT_ROUTE, &val, sizeof(val));
}

/*
 * BUS_NO_DEFAULT_ROUTE: a client's unicast to an address nobody owns, or
 * whose owner has not joined, fails with EHOSTUNREACH and reaches nobody;
 * owned addresses, the master and multicasts are reached as before, and
 * 0 turns the default route back on.
 */
TEST_F(bus, no_default_route_unowned_ehostunreach)
{
	ASSERT_OK(no_default_route(self->p[0].cfd, 1));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &self->bus,
					      UNOWNED, "u", 1, 0));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &self->bus,
					      P1_C, "n", 1, 0));
	add_addr(_metadata, self->p[3].afd, P1_C);
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &self->bus,
					      self->p[3].addr, "j", 1, 0));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &self->bus,
					      P1_C, "k", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);

	add_addr(_metadata, self->p[1].afd, P1_A);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_A, "named");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[2].addr,
		     "unique");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		     "master");
	bus_send_plain(_metadata, self->p[0].cfd, "plain");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "named");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "unique");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "master");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "plain");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus,
		     bus_mcast(0), "all");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr, "all");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "all");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr, "all");

	/* Only its own sends: another client still takes the default route. */
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, UNOWNED, "other");
	bus_expect(_metadata, self->p[1].afd, &self->bus, self->p[1].addr,
		   "other");

	ASSERT_OK(no_default_route(self->p[0].cfd, 0));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, UNOWNED, "again");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "again");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* A name's address that loses its owner: refused, then, once another
 * client owns it, delivered there. */
TEST_F(bus, no_default_route_follows_address_moves)
{
	ASSERT_OK(no_default_route(self->p[0].cfd, 1));
	add_addr(_metadata, self->p[1].afd, P1_B);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_B, "1");
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_DEL_ADDR, P1_B));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &self->bus,
					      P1_B, "2", 1, 0));
	add_addr(_metadata, self->p[2].afd, P1_B);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_B, "3");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "1");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr, "3");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* Only a connected client may set it, to 0 or 1, as an int. */
TEST_F(bus, no_default_route_bad_input)
{
	int s = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_NONE);
	char c = 1;
	long l = 1;

	ASSERT_GE(s, 0);
	ASSERT_ERRNO(EPERM, no_default_route(s, 1));
	close(s);
	ASSERT_ERRNO(EPERM, no_default_route(self->m, 1));
	ASSERT_ERRNO(EPERM, no_default_route(self->p[0].afd, 1));
	ASSERT_ERRNO(EINVAL, no_default_route(self->p[0].cfd, 2));
	ASSERT_ERRNO(EINVAL, no_default_route(self->p[0].cfd, -1));
	ASSERT_ERRNO(EINVAL, setsockopt(self->p[0].cfd, SOL_BUS,
					BUS_NO_DEFAULT_ROUTE, &c, sizeof(c)));
	ASSERT_ERRNO(EINVAL, setsockopt(self->p[0].cfd, SOL_BUS,
					BUS_NO_DEFAULT_ROUTE, &l, sizeof(l)));
	ASSERT_ERRNO(EFAULT, setsockopt(self->p[0].cfd, SOL_BUS,
					BUS_NO_DEFAULT_ROUTE, NULL, sizeof(int)));

	/* Nothing was set: the default route still works. */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, UNOWNED, "u");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "u");
}

TEST_F(bus, multicast_prefix0_every_joined_client)
{
	int i;

	bus_send_str(_metadata, self->p[1].cfd, &self->bus, bus_mcast(0), "all");
	for (i = 0; i < 3; i++)
		bus_expect(_metadata, self->p[i].cfd, &self->bus,
			   self->p[1].addr, "all");
	/* Not p[3] (not joined), not the master. */
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, multicast_prefix1_members_only)
{
	add_addr(_metadata, self->p[1].afd, P1_A);
	add_addr(_metadata, self->p[2].afd, P1_B);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(1), "sig");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "sig");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr, "sig");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, multicast_includes_sender_member)
{
	add_addr(_metadata, self->p[1].afd, P1_A);
	add_addr(_metadata, self->p[2].afd, P1_B);
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, bus_mcast(1), "sig");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[1].addr, "sig");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr, "sig");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, multicast_one_copy_per_client)
{
	add_addr(_metadata, self->p[1].afd, P1_A);
	add_addr(_metadata, self->p[1].afd, P1_B);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(1), "once");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "once");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, multicast_skips_unjoined_member)
{
	add_addr(_metadata, self->p[3].afd, P1_A);
	add_addr(_metadata, self->p[2].afd, P1_B);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(1), "sig");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr, "sig");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, multicast_zero_recipients_succeeds)
{
	add_addr(_metadata, self->p[1].afd, P1_A);
	ASSERT_EQ(4, bus_sendto(self->p[0].cfd, &self->bus, bus_mcast(7),
				"none", 4, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_send_without_address)
{
	bus_send_plain(_metadata, self->p[3].afd, "welcome");
	bus_expect(_metadata, self->p[3].cfd, &self->bus, BUS_MASTER_ADDR,
		   "welcome");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* Any accepted socket may send to any client-owned address. */
TEST_F(bus, master_sendto_other_client)
{
	bus_send_str(_metadata, self->p[0].afd, &self->bus, self->p[1].addr,
		     "from master");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		   "from master");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_sendto_added_address)
{
	add_addr(_metadata, self->p[2].afd, P1_B);
	bus_send_str(_metadata, self->p[0].afd, &self->bus, P1_B, "wkn");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, BUS_MASTER_ADDR, "wkn");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_sendto_unjoined_client)
{
	add_addr(_metadata, self->p[3].afd, P1_C);
	bus_send_str(_metadata, self->p[0].afd, &self->bus, self->p[3].addr, "x");
	bus_send_str(_metadata, self->p[1].afd, &self->bus, P1_C, "y");
	bus_expect(_metadata, self->p[3].cfd, &self->bus, BUS_MASTER_ADDR, "x");
	bus_expect(_metadata, self->p[3].cfd, &self->bus, BUS_MASTER_ADDR, "y");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_multicast_prefix0)
{
	int i;

	bus_send_str(_metadata, self->p[3].afd, &self->bus, bus_mcast(0),
		     "broadcast");
	for (i = 0; i < 3; i++)
		bus_expect(_metadata, self->p[i].cfd, &self->bus,
			   BUS_MASTER_ADDR, "broadcast");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_multicast_prefix1_members)
{
	add_addr(_metadata, self->p[0].afd, P1_A);
	add_addr(_metadata, self->p[3].afd, P1_C);
	bus_send_str(_metadata, self->p[1].afd, &self->bus, bus_mcast(1), "sig");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR, "sig");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_sendto_unowned_ehostunreach)
{
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].afd, &self->bus,
					      UNOWNED, "x", 1, 0));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].afd, &self->bus,
					      P1_C, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, master_sendto_master_address_ehostunreach)
{
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].afd, &self->bus,
					      BUS_MASTER_ADDR, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, sendto_other_bus_ehostunreach)
{
	struct bus_name bus2 = bus_name_abstract();
	int m2 = bus_master(_metadata, &bus2);
	struct bus_peer r;

	bus_peer_open(_metadata, &r, m2, &bus2, true);
	ASSERT_EQ(1ULL, r.addr);
	/* Address 1 exists on both buses: the path decides, and it is wrong. */
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[1].cfd, &bus2, r.addr,
					      "x", 1, 0));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[1].cfd, &bus2,
					      bus_mcast(0), "x", 1, 0));
	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[1].afd, &bus2, r.addr,
					      "x", 1, 0));
	bus_expect_none(_metadata, r.cfd);
	bus_expect_none(_metadata, r.afd);
	bus_expect_quiet(_metadata, self->p, 4);
	bus_peer_close(&r);
	close(m2);
}

TEST_F(bus, sendto_unbound_path_ehostunreach)
{
	struct bus_name nobus = bus_name_abstract();

	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &nobus,
					      self->p[1].addr, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

/* The abstract name padded to full length is another name. */
TEST_F(bus, sendto_abstract_path_length_must_match)
{
	struct bus_name padded = bus_name_full_length(&self->bus);

	ASSERT_ERRNO(EHOSTUNREACH, bus_sendto(self->p[0].cfd, &padded,
					      self->p[1].addr, "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST(fs_bus_msg_name_and_full_length_sendto)
{
	struct bus_name bus = bus_name_tmp();
	struct bus_name full = bus_name_full_length(&bus);
	int m = bus_master(_metadata, &bus);
	struct bus_peer p0, p1;

	bus_peer_open(_metadata, &p0, m, &bus, true);
	bus_peer_open(_metadata, &p1, m, &bus, true);
	bus_send_str(_metadata, p0.cfd, &bus, p1.addr, "fs");
	/* msg_namelen is offsetof(sbus_path) + strlen(path) + 1. */
	bus_expect(_metadata, p1.cfd, &bus, p0.addr, "fs");
	/* Bytes after the NUL of a filesystem path do not matter. */
	bus_send_str(_metadata, p0.cfd, &full, p1.addr, "full");
	bus_expect(_metadata, p1.cfd, &bus, p0.addr, "full");
	bus_expect_none(_metadata, p1.cfd);
	bus_peer_close(&p0);
	bus_peer_close(&p1);
	close(m);
	unlink(bus.sa.sbus_path);
}

TEST_F(bus, msg_peek_leaves_message_queued)
{
	char buf[16];
	struct sockaddr_bus from;
	socklen_t len = sizeof(from);
	int c = self->p[1].cfd;

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "peek");
	memset(&from, 0, sizeof(from));
	ASSERT_EQ(4, recvfrom(c, buf, sizeof(buf), MSG_PEEK,
			      (struct sockaddr *)&from, &len));
	ASSERT_EQ(0, memcmp(buf, "peek", 4));
	ASSERT_EQ(self->p[0].addr, from.sbus_addr.s_addr);
	ASSERT_EQ(self->bus.len, len);
	ASSERT_EQ(4, recv(c, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT));
	bus_expect(_metadata, c, &self->bus, self->p[0].addr, "peek");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, short_buffer_truncates)
{
	char buf[3];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	int c = self->p[1].cfd;

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "abcdef");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "next");
	ASSERT_EQ(3, recvmsg(c, &msg, 0));
	ASSERT_EQ(0, memcmp(buf, "abc", 3));
	ASSERT_EQ(MSG_TRUNC, msg.msg_flags & MSG_TRUNC);
	/* The rest of the message is gone; the next one is whole. */
	bus_expect(_metadata, c, &self->bus, self->p[0].addr, "next");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, recv_msg_trunc_returns_full_length)
{
	char buf[2];
	int c = self->p[1].cfd;

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "abcdef");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "next");
	ASSERT_EQ(6, recv(c, buf, sizeof(buf), MSG_TRUNC));
	ASSERT_EQ(0, memcmp(buf, "ab", 2));
	bus_expect(_metadata, c, &self->bus, self->p[0].addr, "next");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, msg_dontwait_empty_eagain)
{
	char b;

	ASSERT_ERRNO(EAGAIN, recv(self->p[0].cfd, &b, 1, MSG_DONTWAIT));
	ASSERT_ERRNO(EAGAIN, recv(self->p[0].afd, &b, 1, MSG_DONTWAIT));
}

TEST_F(bus, blocking_recv_times_out)
{
	struct timespec start;
	char b;

	bus_set_timeouts(_metadata, self->p[0].cfd, 300);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EAGAIN, recv(self->p[0].cfd, &b, 1, 0));
	ASSERT_LE(250, bus_elapsed_ms(&start));
}

struct recv_arg {
	int fd;
	char buf[16];
};

static long recv_call(void *p)
{
	struct recv_arg *a = p;

	return recv(a->fd, a->buf, sizeof(a->buf), 0);
}

TEST_F(bus, blocking_recv_woken_by_send)
{
	struct recv_arg arg = { .fd = self->p[1].cfd };
	struct bus_call call = { .fn = recv_call, .arg = &arg };

	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0), "wake");
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("recv: %s", strerror(call.err));
	ASSERT_EQ(0, memcmp(arg.buf, "wake", 4));
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "wake");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "wake");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, message_boundaries_kept)
{
	int c = self->p[0].cfd;

	bus_send_str(_metadata, c, &self->bus, self->p[1].addr, "a");
	bus_send_str(_metadata, c, &self->bus, self->p[1].addr, "bc");
	bus_send_str(_metadata, c, &self->bus, self->p[1].addr, "def");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "a");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "bc");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "def");
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, iovec_is_one_message)
{
	struct iovec out[3] = {
		{ .iov_base = "ab", .iov_len = 2 },
		{ .iov_base = "", .iov_len = 0 },
		{ .iov_base = "cde", .iov_len = 3 },
	};
	struct bus_name dest = bus_dest(&self->bus, self->p[1].addr);
	struct msghdr msg = {
		.msg_name = &dest.sa, .msg_namelen = dest.len,
		.msg_iov = out, .msg_iovlen = 3,
	};
	char b1[1], b2[8];
	struct iovec in[2] = {
		{ .iov_base = b1, .iov_len = sizeof(b1) },
		{ .iov_base = b2, .iov_len = sizeof(b2) },
	};
	struct msghdr rmsg = { .msg_iov = in, .msg_iovlen = 2 };

	ASSERT_EQ(5, sendmsg(self->p[0].cfd, &msg, MSG_NOSIGNAL));
	ASSERT_EQ(5, recvmsg(self->p[1].cfd, &rmsg, 0));
	ASSERT_EQ('a', b1[0]);
	ASSERT_EQ(0, memcmp(b2, "bcde", 4));
	ASSERT_EQ(0, rmsg.msg_flags & MSG_TRUNC);
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, zero_length_message)
{
	char buf[8];
	struct sockaddr_bus from;
	socklen_t len = sizeof(from);

	ASSERT_EQ(0, bus_sendto(self->p[0].cfd, &self->bus, self->p[1].addr,
				"", 0, 0));
	ASSERT_EQ(0, send(self->p[0].cfd, "", 0, MSG_NOSIGNAL));
	memset(&from, 0, sizeof(from));
	ASSERT_EQ(0, recvfrom(self->p[1].cfd, buf, sizeof(buf), MSG_DONTWAIT,
			      (struct sockaddr *)&from, &len));
	/* A message, not end of file: it has a sender. */
	ASSERT_EQ(AF_BUS, from.sbus_family);
	ASSERT_EQ(self->p[0].addr, from.sbus_addr.s_addr);
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "");
	/* Still connected. */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "after");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "after");
	bus_expect_quiet(_metadata, self->p, 4);
}

/* Messages from one sender reach each receiver in send order. */
TEST_F(bus, order_per_sender_receiver_pair)
{
	char s[32];
	int i;

	for (i = 0; i < 3; i++)
		raise_buffers(_metadata, self->p[i].cfd);
	for (i = 0; i < 300; i++) {
		snprintf(s, sizeof(s), "%s %d", i % 3 ? "uni" : "multi", i);
		bus_send_str(_metadata, self->p[0].cfd, &self->bus,
			     i % 3 ? self->p[1].addr : bus_mcast(0), s);
	}
	for (i = 0; i < 300; i++) {
		snprintf(s, sizeof(s), "%s %d", i % 3 ? "uni" : "multi", i);
		bus_expect(_metadata, self->p[1].cfd, &self->bus,
			   self->p[0].addr, s);
		if (i % 3)
			continue;
		bus_expect(_metadata, self->p[0].cfd, &self->bus,
			   self->p[0].addr, s);
		bus_expect(_metadata, self->p[2].cfd, &self->bus,
			   self->p[0].addr, s);
	}
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, order_master_and_client)
{
	char s[32];
	int i;

	raise_buffers(_metadata, self->p[2].cfd);
	raise_buffers(_metadata, self->p[2].afd);
	for (i = 0; i < 200; i++) {
		snprintf(s, sizeof(s), "down %d", i);
		bus_send_plain(_metadata, self->p[2].afd, s);
		snprintf(s, sizeof(s), "up %d", i);
		bus_send_plain(_metadata, self->p[2].cfd, s);
	}
	for (i = 0; i < 200; i++) {
		snprintf(s, sizeof(s), "down %d", i);
		bus_expect(_metadata, self->p[2].cfd, &self->bus,
			   BUS_MASTER_ADDR, s);
		snprintf(s, sizeof(s), "up %d", i);
		bus_expect(_metadata, self->p[2].afd, &self->bus,
			   self->p[2].addr, s);
	}
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, message_larger_than_sndbuf_emsgsize)
{
	int c = self->p[0].cfd, sndbuf = 32768;
	socklen_t len = sizeof(sndbuf);
	size_t big;
	char *buf, *in;

	ASSERT_OK(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
	ASSERT_OK(getsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len));
	big = sndbuf - 32;
	buf = malloc(big + 1);
	in = malloc(big + 1);
	ASSERT_TRUE(buf && in);
	for (size_t i = 0; i <= big; i++)
		buf[i] = (char)(i * 7);
	ASSERT_ERRNO(EMSGSIZE, bus_sendto(c, &self->bus, self->p[1].addr,
					  buf, big + 1, 0));
	ASSERT_EQ((ssize_t)big, bus_sendto(c, &self->bus, self->p[1].addr,
					   buf, big, 0))
		TH_LOG("sendto %zu bytes: %s", big, strerror(errno));
	ASSERT_EQ((ssize_t)big, recv(self->p[1].cfd, in, big + 1, 0));
	ASSERT_EQ(0, memcmp(buf, in, big));
	free(buf);
	free(in);
	bus_expect_quiet(_metadata, self->p, 4);
}

/* Fill p[to]'s receive queue from p[from] with messages 0, 1, 2, ... */
static void fill_queue(struct __test_metadata *_metadata,
		       FIXTURE_DATA(bus) *self, int from, int to)
{
	uint32_t i;

	raise_buffers(_metadata, self->p[from].cfd);
	raise_buffers(_metadata, self->p[to].cfd);
	for (i = 0; i < BUS_QLEN_MAX + 16; i++)
		if (bus_sendto(self->p[from].cfd, &self->bus, self->p[to].addr,
			       &i, sizeof(i), MSG_DONTWAIT) != (ssize_t)sizeof(i))
			break;
	ASSERT_EQ(EAGAIN, errno) TH_LOG("send %u: %s", i, strerror(errno));
	ASSERT_EQ(BUS_QLEN_MAX, i);
}

/* fd holds exactly messages first .. first + count - 1, in order. */
static void drain_numbered(struct __test_metadata *_metadata, int fd,
			   uint32_t first, uint32_t count)
{
	uint32_t i, v;

	for (i = 0; i < count; i++) {
		ASSERT_EQ((ssize_t)sizeof(v), recv(fd, &v, sizeof(v), MSG_DONTWAIT))
			TH_LOG("message %u: %s", i, strerror(errno));
		ASSERT_EQ(first + i, v);
	}
	bus_expect_none(_metadata, fd);
}

TEST_F(bus, full_queue_nonblocking_eagain)
{
	uint32_t x = 0xdead;

	fill_queue(_metadata, self, 0, 1);
	/* Only p1's queue is full: p0 still reaches p2 and the master. */
	ASSERT_EQ(4, bus_sendto(self->p[0].cfd, &self->bus, self->p[2].addr,
				&x, 4, MSG_DONTWAIT));
	ASSERT_EQ(4, send(self->p[0].cfd, &x, 4, MSG_DONTWAIT | MSG_NOSIGNAL));
	drain_numbered(_metadata, self->p[1].cfd, 0, BUS_QLEN_MAX);
	drain_numbered(_metadata, self->p[2].cfd, 0xdead, 1);
	drain_numbered(_metadata, self->p[0].afd, 0xdead, 1);
	/* Room again. */
	ASSERT_EQ(4, bus_sendto(self->p[0].cfd, &self->bus, self->p[1].addr,
				&x, 4, MSG_DONTWAIT));
	drain_numbered(_metadata, self->p[1].cfd, 0xdead, 1);
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, full_queue_blocking_sndtimeo_eagain)
{
	uint32_t x = BUS_QLEN_MAX;
	struct timespec start;

	fill_queue(_metadata, self, 0, 1);
	bus_set_timeouts(_metadata, self->p[0].cfd, 300);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, &x, 4, 0));
	ASSERT_LE(250, bus_elapsed_ms(&start));
	drain_numbered(_metadata, self->p[1].cfd, 0, BUS_QLEN_MAX);
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_F(bus, full_queue_blocked_sender_woken_by_recv)
{
	struct bus_send_arg arg = { .fd = self->p[0].cfd, .bus = &self->bus,
				.to = self->p[1].addr, .val = BUS_QLEN_MAX };
	struct bus_call call = { .fn = bus_send_call, .arg = &arg };
	uint32_t v;

	fill_queue(_metadata, self, 0, 1);
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	ASSERT_EQ(4, recv(self->p[1].cfd, &v, 4, 0));
	ASSERT_EQ(0U, v);
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	drain_numbered(_metadata, self->p[1].cfd, 1, BUS_QLEN_MAX);
	bus_expect_quiet(_metadata, self->p, 4);
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(bus, full_queue_blocked_sender_eintr)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	uint32_t x = BUS_QLEN_MAX;
	struct timespec start;

	fill_queue(_metadata, self, 0, 1);
	bus_set_timeouts(_metadata, self->p[0].cfd, 10000);
	ASSERT_OK(sigaction(SIGALRM, &sa, NULL));
	ASSERT_OK(setitimer(ITIMER_REAL, &it, NULL));
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EINTR, bus_sendto(self->p[0].cfd, &self->bus,
				       self->p[1].addr, &x, 4, 0));
	ASSERT_GT(5000, bus_elapsed_ms(&start));
	drain_numbered(_metadata, self->p[1].cfd, 0, BUS_QLEN_MAX);
	bus_expect_quiet(_metadata, self->p, 4);
}

/* A multicast that one recipient cannot take reaches no recipient. */
TEST_F(bus, full_queue_multicast_nobody_gets_it)
{
	uint32_t x = BUS_QLEN_MAX;

	add_addr(_metadata, self->p[1].afd, P1_A);
	add_addr(_metadata, self->p[2].afd, P1_B);
	fill_queue(_metadata, self, 0, 1);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(1), &x, 4, MSG_DONTWAIT));
	drain_numbered(_metadata, self->p[1].cfd, 0, BUS_QLEN_MAX);
	bus_expect_quiet(_metadata, self->p, 4);
}

TEST_HARNESS_MAIN
