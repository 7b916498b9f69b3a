// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS limits the master sets (af_bus.rst, "Limits"): BUS_SET_MAXQLEN,
 * BUS_SET_SENDBUF and BUS_SET_RCVBUF on the bound socket (both sockets of every later
 * connection) and on an accepted socket (its client, at once), their
 * bounds, who may use them, and what a client sees: how many messages
 * its queue takes, its SO_SNDBUF, and the largest message it can send;
 * BUS_SET_MCAST_DROP, which lets multicasts skip a full queue; and
 * BUS_SET_MSG_MAX, the bus' largest message, held to net.bus.msg_max
 * without CAP_NET_ADMIN.
 */
#include "af_bus_test.h"

#include <sched.h>
#include <sys/wait.h>

/* setsockopt(fd, SOL_BUS, opt, &val, sizeof(int)) */
static int set_int(int fd, int opt, int val)
{
	return setsockopt(fd, SOL_BUS, opt, &val, sizeof(val));
}

static int get_sndbuf(struct __test_metadata *_metadata, int fd)
{
	int val = -1;
	socklen_t len = sizeof(val);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &val, &len));
	return val;
}

/* A send buffer large enough that a queue limit, not it, stops fill(). */
static void big_sndbuf(struct __test_metadata *_metadata, int fd)
{
	int big = 32 << 20;

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big,
			     sizeof(big)));
}

/*
 * Send 4-byte messages 0, 1, ... from `from` to addr without waiting until
 * one fails; the failure must be EAGAIN. Returns how many went.
 */
static unsigned int fill(struct __test_metadata *_metadata, int from,
			 const struct bus_name *bus, __u64 addr)
{
	unsigned int i;

	big_sndbuf(_metadata, from);
	for (i = 0; i < 4096; i++)
		if (bus_sendto(from, bus, addr, &i, sizeof(i), MSG_DONTWAIT) !=
		    (ssize_t)sizeof(i))
			break;
	ASSERT_EQ(EAGAIN, errno) TH_LOG("send %u: %s", i, strerror(errno));
	return i;
}

/* Same as fill(), to the other end of the pair (no address). */
static unsigned int fill_peer(struct __test_metadata *_metadata, int from)
{
	unsigned int i;

	big_sndbuf(_metadata, from);
	for (i = 0; i < 4096; i++)
		if (send(from, &i, sizeof(i), MSG_DONTWAIT | MSG_NOSIGNAL) !=
		    (ssize_t)sizeof(i))
			break;
	ASSERT_EQ(EAGAIN, errno) TH_LOG("send %u: %s", i, strerror(errno));
	return i;
}

/* fd holds messages 0 .. count - 1 and nothing else. */
static void drain(struct __test_metadata *_metadata, int fd,
		  unsigned int count)
{
	unsigned int i, v;

	for (i = 0; i < count; i++) {
		ASSERT_EQ((ssize_t)sizeof(v),
			  recv(fd, &v, sizeof(v), MSG_DONTWAIT))
			TH_LOG("message %u: %s", i, strerror(errno));
		ASSERT_EQ(i, v);
	}
	bus_expect_none(_metadata, fd);
}

/* A master, and two joined clients that connected after it set limits. */
FIXTURE(limits) {
	struct bus_name bus;
	int m;
	struct bus_peer p[2];
};

FIXTURE_SETUP(limits)
{
	self->p[0].cfd = self->p[0].afd = -1;
	self->p[1].cfd = self->p[1].afd = -1;
	self->bus = bus_name_abstract();
	self->m = bus_master(_metadata, &self->bus);
}

FIXTURE_TEARDOWN(limits)
{
	bus_close_peers(&self->m, self->p, 2);
}

/* A receive buffer large enough that a queue limit, not it, stops fill():
 * queued messages are charged to their recipient (af_bus.rst, "Memory").
 */
static void big_rcvbuf(struct __test_metadata *_metadata, int fd)
{
	int big = 32 << 20;

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big,
			     sizeof(big)));
}

static void open_two(struct __test_metadata *_metadata,
		     FIXTURE_DATA(limits) *self)
{
	int i;

	bus_peer_open(_metadata, &self->p[0], self->m, &self->bus, true);
	bus_peer_open(_metadata, &self->p[1], self->m, &self->bus, true);
	for (i = 0; i < 2; i++) {
		big_rcvbuf(_metadata, self->p[i].cfd);
		big_rcvbuf(_metadata, self->p[i].afd);
	}
}

TEST_F(limits, maxqlen_on_master_limits_later_clients)
{
	ASSERT_OK(set_int(self->m, BUS_SET_MAXQLEN, 3));
	open_two(_metadata, self);
	ASSERT_EQ(3U, fill(_metadata, self->p[0].cfd, &self->bus,
			   self->p[1].addr));
	drain(_metadata, self->p[1].cfd, 3);
	/* and the accepted socket: what the client sends the master */
	ASSERT_EQ(3U, fill_peer(_metadata, self->p[0].cfd));
	drain(_metadata, self->p[0].afd, 3);
}

TEST_F(limits, maxqlen_on_master_keeps_earlier_clients)
{
	open_two(_metadata, self);
	ASSERT_OK(set_int(self->m, BUS_SET_MAXQLEN, 3));
	ASSERT_EQ(BUS_QLEN_MAX, fill(_metadata, self->p[0].cfd, &self->bus,
				     self->p[1].addr));
	drain(_metadata, self->p[1].cfd, BUS_QLEN_MAX);
}

TEST_F(limits, maxqlen_on_accepted_applies_to_its_client_now)
{
	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 2));
	ASSERT_EQ(2U, fill(_metadata, self->p[0].cfd, &self->bus,
			   self->p[1].addr));
	/* p0's queue is not affected */
	ASSERT_EQ(BUS_QLEN_MAX, fill(_metadata, self->p[1].cfd, &self->bus,
				     self->p[0].addr));
	drain(_metadata, self->p[1].cfd, 2);
	drain(_metadata, self->p[0].cfd, BUS_QLEN_MAX);
}

TEST_F(limits, maxqlen_the_accepted_socket_keeps_its_own)
{
	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[0].afd, BUS_SET_MAXQLEN, 2));
	ASSERT_EQ(BUS_QLEN_MAX, fill_peer(_metadata, self->p[0].cfd));
	drain(_metadata, self->p[0].afd, BUS_QLEN_MAX);
}

TEST_F(limits, maxqlen_raised_wakes_waiting_sender)
{
	struct bus_send_arg arg;
	struct bus_call call = { .fn = bus_send_call, .arg = &arg };

	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 1));
	ASSERT_EQ(1U, fill(_metadata, self->p[0].cfd, &self->bus,
			   self->p[1].addr));
	arg = (struct bus_send_arg){ self->p[0].cfd, &self->bus, self->p[1].addr,
				 1 };
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 2));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	drain(_metadata, self->p[1].cfd, 2);
}

TEST_F(limits, maxqlen_bounds)
{
	const int bad[] = { 0, -1, 1048577, 0x7fffffff };
	unsigned int i;

	open_two(_metadata, self);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_MAXQLEN, bad[i]))
			TH_LOG("value %d", bad[i]);
		ASSERT_ERRNO(EINVAL, set_int(self->p[0].afd, BUS_SET_MAXQLEN,
					     bad[i]))
			TH_LOG("value %d", bad[i]);
	}
	ASSERT_OK(set_int(self->m, BUS_SET_MAXQLEN, 1048576));
	ASSERT_OK(set_int(self->p[0].afd, BUS_SET_MAXQLEN, 1));
	/* the failed calls changed nothing */
	ASSERT_EQ(1U, fill(_metadata, self->p[1].cfd, &self->bus,
			   self->p[0].addr));
	ASSERT_EQ(BUS_QLEN_MAX, fill(_metadata, self->p[0].cfd, &self->bus,
				     self->p[1].addr));
	drain(_metadata, self->p[0].cfd, 1);
	drain(_metadata, self->p[1].cfd, BUS_QLEN_MAX);
}

TEST_F(limits, wrong_optlen_einval)
{
	const socklen_t lens[] = { 0, 1, 2, 3, 5, 8 };
	long long val = 8;
	unsigned int i;

	open_two(_metadata, self);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		ASSERT_ERRNO(EINVAL, setsockopt(self->m, SOL_BUS,
						BUS_SET_MAXQLEN, &val,
						lens[i]))
			TH_LOG("optlen %u", lens[i]);
		ASSERT_ERRNO(EINVAL, setsockopt(self->p[0].afd, SOL_BUS,
						BUS_SET_SENDBUF, &val,
						lens[i]))
			TH_LOG("optlen %u", lens[i]);
	}
}

TEST_F(limits, bad_pointer_efault)
{
	open_two(_metadata, self);
	ASSERT_ERRNO(EFAULT, setsockopt(self->m, SOL_BUS, BUS_SET_MAXQLEN,
					(void *)8, sizeof(int)));
	ASSERT_ERRNO(EFAULT, setsockopt(self->p[0].afd, SOL_BUS,
					BUS_SET_SENDBUF, (void *)8,
					sizeof(int)));
}

TEST_F(limits, client_and_fresh_socket_eperm)
{
	int fresh = bus_socket(_metadata, BUS_PROTO_NONE);
	const int opts[] = { BUS_SET_MAXQLEN, BUS_SET_SENDBUF };
	unsigned int i;

	open_two(_metadata, self);
	for (i = 0; i < ARRAY_SIZE(opts); i++) {
		ASSERT_ERRNO(EPERM, set_int(self->p[0].cfd, opts[i], 8));
		ASSERT_ERRNO(EPERM, set_int(fresh, opts[i], 8));
	}
	close(fresh);
	/* the client could not raise its own queue limit */
	ASSERT_EQ(BUS_QLEN_MAX, fill(_metadata, self->p[1].cfd, &self->bus,
				     self->p[0].addr));
	drain(_metadata, self->p[0].cfd, BUS_QLEN_MAX);
}

TEST_F(limits, accepted_of_gone_client_enotconn)
{
	open_two(_metadata, self);
	close(self->p[1].cfd);
	self->p[1].cfd = -1;
	ASSERT_ERRNO(ENOTCONN, set_int(self->p[1].afd, BUS_SET_MAXQLEN, 8));
	ASSERT_ERRNO(ENOTCONN, set_int(self->p[1].afd, BUS_SET_SENDBUF,
				       8192));
}

TEST_F(limits, sendbuf_on_master_doubles_like_so_sndbuf)
{
	int before;

	bus_peer_open(_metadata, &self->p[0], self->m, &self->bus, true);
	before = get_sndbuf(_metadata, self->p[0].cfd);
	ASSERT_OK(set_int(self->m, BUS_SET_SENDBUF, 65536));
	bus_peer_open(_metadata, &self->p[1], self->m, &self->bus, true);
	ASSERT_EQ(131072, get_sndbuf(_metadata, self->p[1].cfd));
	ASSERT_EQ(131072, get_sndbuf(_metadata, self->p[1].afd));
	/* earlier connections keep theirs */
	ASSERT_EQ(before, get_sndbuf(_metadata, self->p[0].cfd));
	ASSERT_NE(131072, before);
}

TEST_F(limits, sendbuf_small_value_is_sock_min_sndbuf)
{
	int u = socket(AF_UNIX, SOCK_SEQPACKET, 0), one = 1, min;

	ASSERT_LE(0, u);
	ASSERT_OK(setsockopt(u, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)));
	min = get_sndbuf(_metadata, u);
	close(u);
	ASSERT_OK(set_int(self->m, BUS_SET_SENDBUF, 1));
	open_two(_metadata, self);
	ASSERT_EQ(min, get_sndbuf(_metadata, self->p[0].cfd));
}

TEST_F(limits, sendbuf_zero_or_negative_einval)
{
	open_two(_metadata, self);
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_SENDBUF, 0));
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_SENDBUF, -4096));
	ASSERT_ERRNO(EINVAL, set_int(self->p[0].afd, BUS_SET_SENDBUF, 0));
}

TEST_F(limits, sendbuf_on_accepted_applies_now)
{
	char *buf;
	const int size = 16384;

	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[0].afd, BUS_SET_SENDBUF, size / 2));
	ASSERT_EQ(size, get_sndbuf(_metadata, self->p[0].cfd));
	buf = calloc(1, size);
	ASSERT_NE(NULL, buf);
	ASSERT_ERRNO(EMSGSIZE, bus_sendto(self->p[0].cfd, &self->bus,
					  self->p[1].addr, buf, size, 0));
	ASSERT_EQ(size - 64, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, buf, size - 64, 0));
	ASSERT_EQ(size - 64, recv(self->p[1].cfd, buf, size, 0));
	free(buf);
	bus_expect_quiet(_metadata, self->p, 2);
}

/* net.core.wmem_max, read without sysctl: SO_SNDBUF (unlike
 * SO_SNDBUFFORCE) is held to it even for root, then doubled.
 */
static long read_wmem_max(struct __test_metadata *_metadata)
{
	int u = socket(AF_UNIX, SOCK_SEQPACKET, 0), huge = 0x7fffffff, v;

	ASSERT_LE(0, u);
	ASSERT_OK(setsockopt(u, SOL_SOCKET, SO_SNDBUF, &huge, sizeof(huge)));
	v = get_sndbuf(_metadata, u);
	close(u);
	return v / 2;
}

/* A buffer of @size bytes that differ from one page to the next */
static unsigned char *pattern(size_t size, unsigned int seed)
{
	unsigned char *buf = malloc(size);
	size_t i;

	for (i = 0; buf && i < size; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 12) + seed);
	return buf;
}

/* @fd's next message is the @size bytes of @out (read into @in, which
 * has room for one more)
 */
static void expect_whole(struct __test_metadata *_metadata, int fd,
			 const unsigned char *out, unsigned char *in,
			 size_t size)
{
	ASSERT_EQ((ssize_t)size, recv(fd, in, size + 1, 0));
	ASSERT_EQ(0, memcmp(out, in, size));
}

/* Past wmem_max with CAP_NET_ADMIN (the tests run as root), a message of
 * several MiB goes through whole.
 */
TEST_F(limits, sendbuf_past_wmem_max_with_cap_net_admin)
{
	const size_t size = 3 << 20;
	unsigned char *out, *in;

	ASSERT_GT(4L << 20, read_wmem_max(_metadata));
	ASSERT_OK(set_int(self->m, BUS_SET_SENDBUF, 4 << 20));
	open_two(_metadata, self);
	ASSERT_EQ(8 << 20, get_sndbuf(_metadata, self->p[0].cfd));
	out = pattern(size, 0);
	in = malloc(size + 1);
	ASSERT_NE(NULL, out);
	ASSERT_NE(NULL, in);
	ASSERT_EQ((ssize_t)size, bus_sendto(self->p[0].cfd, &self->bus,
					    self->p[1].addr, out, size, 0))
		TH_LOG("send: %s", strerror(errno));
	expect_whole(_metadata, self->p[1].cfd, out, in, size);
	free(out);
	free(in);
}

/* set_int() in a child as nobody (no capabilities): 0 or its errno */
static int set_int_as_nobody(struct __test_metadata *_metadata, int fd,
			     int opt, int val)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(255);
		_exit(set_int(fd, opt, val) ? errno : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_NE(255, WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

/* A master process without CAP_NET_ADMIN is held to wmem_max. */
TEST_F(limits, sendbuf_clamped_to_wmem_max_without_cap)
{
	long wmem_max = read_wmem_max(_metadata);

	ASSERT_EQ(0, set_int_as_nobody(_metadata, self->m, BUS_SET_SENDBUF,
				       64 << 20));
	open_two(_metadata, self);
	ASSERT_EQ(2 * wmem_max, get_sndbuf(_metadata, self->p[0].cfd));
}

/* SO_RCVBUF of fd */
static int get_rcvbuf(struct __test_metadata *_metadata, int fd)
{
	socklen_t len = sizeof(int);
	int val;

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &val, &len));
	return val;
}

/* Two joined clients with the buffers the master gave them (open_two
 * raises them).
 */
static void open_two_plain(struct __test_metadata *_metadata,
			   FIXTURE_DATA(limits) *self)
{
	bus_peer_open(_metadata, &self->p[0], self->m, &self->bus, true);
	bus_peer_open(_metadata, &self->p[1], self->m, &self->bus, true);
}

TEST_F(limits, rcvbuf_on_master_doubles_like_so_rcvbuf)
{
	int before;

	bus_peer_open(_metadata, &self->p[0], self->m, &self->bus, true);
	before = get_rcvbuf(_metadata, self->p[0].cfd);
	ASSERT_OK(set_int(self->m, BUS_SET_RCVBUF, 65536));
	bus_peer_open(_metadata, &self->p[1], self->m, &self->bus, true);
	ASSERT_EQ(131072, get_rcvbuf(_metadata, self->p[1].cfd));
	ASSERT_EQ(131072, get_rcvbuf(_metadata, self->p[1].afd));
	/* connections made before keep theirs */
	ASSERT_EQ(before, get_rcvbuf(_metadata, self->p[0].cfd));
	ASSERT_EQ(before, get_rcvbuf(_metadata, self->p[0].afd));
}

TEST_F(limits, rcvbuf_on_accepted_applies_to_its_client_now)
{
	int before;

	open_two_plain(_metadata, self);
	before = get_rcvbuf(_metadata, self->p[0].afd);
	ASSERT_OK(set_int(self->p[0].afd, BUS_SET_RCVBUF, 4096));
	ASSERT_EQ(8192, get_rcvbuf(_metadata, self->p[0].cfd));
	/* the accepted socket keeps its own, and the other client too */
	ASSERT_EQ(before, get_rcvbuf(_metadata, self->p[0].afd));
	ASSERT_EQ(before, get_rcvbuf(_metadata, self->p[1].cfd));
}

TEST_F(limits, rcvbuf_bad_values_and_callers)
{
	int fresh = bus_socket(_metadata, BUS_PROTO_NONE);

	open_two_plain(_metadata, self);
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_RCVBUF, 0));
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_RCVBUF, -4096));
	ASSERT_ERRNO(EINVAL, set_int(self->p[0].afd, BUS_SET_RCVBUF, 0));
	ASSERT_ERRNO(EINVAL, setsockopt(self->m, SOL_BUS, BUS_SET_RCVBUF,
					"x", 1));
	ASSERT_ERRNO(EPERM, set_int(self->p[0].cfd, BUS_SET_RCVBUF, 1 << 20));
	ASSERT_ERRNO(EPERM, set_int(fresh, BUS_SET_RCVBUF, 1 << 20));
	close(fresh);
}

/* net.core.rmem_max, read as read_wmem_max() reads wmem_max */
static long read_rmem_max(struct __test_metadata *_metadata)
{
	int u = socket(AF_UNIX, SOCK_SEQPACKET, 0), huge = 0x7fffffff, v;

	ASSERT_LE(0, u);
	ASSERT_OK(setsockopt(u, SOL_SOCKET, SO_RCVBUF, &huge, sizeof(huge)));
	v = get_rcvbuf(_metadata, u);
	close(u);
	return v / 2;
}

/* A master without CAP_NET_ADMIN is held to rmem_max; root is not. */
TEST_F(limits, rcvbuf_clamped_to_rmem_max_without_cap)
{
	long rmem_max = read_rmem_max(_metadata);

	ASSERT_GT(32L << 20, rmem_max);
	ASSERT_EQ(0, set_int_as_nobody(_metadata, self->m, BUS_SET_RCVBUF,
				       64 << 20));
	bus_peer_open(_metadata, &self->p[0], self->m, &self->bus, true);
	ASSERT_EQ(2 * rmem_max, get_rcvbuf(_metadata, self->p[0].cfd));
	ASSERT_OK(set_int(self->m, BUS_SET_RCVBUF, 32 << 20));
	bus_peer_open(_metadata, &self->p[1], self->m, &self->bus, true);
	ASSERT_EQ(64 << 20, get_rcvbuf(_metadata, self->p[1].cfd));
}

/* A larger receive buffer lets a sender waiting for room go on. */
TEST_F(limits, rcvbuf_raised_wakes_waiting_sender)
{
	struct bus_send_arg arg;
	struct bus_call call = { .fn = bus_send_call, .arg = &arg };
	unsigned int n;

	open_two_plain(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_RCVBUF, 1));
	n = fill(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr);
	ASSERT_LT(0U, n);
	ASSERT_GT(BUS_QLEN_MAX, n);
	arg = (struct bus_send_arg){ self->p[0].cfd, &self->bus,
				     self->p[1].addr, n };
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_RCVBUF, 1 << 20));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	drain(_metadata, self->p[1].cfd, n + 1);
}

/* Multicasts 4-byte values first .. first + n - 1 from fd to prefix 0,
 * none of them waiting.
 */
static void mcast_values(struct __test_metadata *_metadata, int fd,
			 const struct bus_name *bus, unsigned int first,
			 unsigned int n)
{
	unsigned int v;

	for (v = first; v < first + n; v++)
		ASSERT_EQ((ssize_t)sizeof(v),
			  bus_sendto(fd, bus, bus_mcast(0), &v, sizeof(v),
				     MSG_DONTWAIT))
			TH_LOG("multicast %u: %s", v, strerror(errno));
}

/* fd's next message is value want, with SO_RXQ_OVFL drops (-1: none) */
static void expect_value(struct __test_metadata *_metadata, int fd,
			 unsigned int want, int want_drops)
{
	unsigned int v;
	int drops;

	ASSERT_EQ((ssize_t)sizeof(v),
		  bus_recv_ovfl(fd, (char *)&v, sizeof(v), &drops))
		TH_LOG("value %u: %s", want, strerror(errno));
	ASSERT_EQ(want, v);
	ASSERT_EQ(want_drops, drops);
}

TEST_F(limits, mcast_waits_for_a_full_client_by_default)
{
	unsigned int v = 2;

	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 2));
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 2);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(0), &v, sizeof(v),
					MSG_DONTWAIT));
	/* all or none: the sender, a member too, did not get it either */
	drain(_metadata, self->p[0].cfd, 2);
	drain(_metadata, self->p[1].cfd, 2);
}

TEST_F(limits, mcast_drop_skips_a_full_client_and_counts)
{
	int one = 1;
	unsigned int v;

	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 2));
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MCAST_DROP, 1));
	ASSERT_OK(setsockopt(self->p[1].cfd, SOL_SOCKET, SO_RXQ_OVFL, &one,
			     sizeof(one)));
	/* 5 multicasts go at once; the full client misses 2, 3 and 4 */
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 5);
	drain(_metadata, self->p[0].cfd, 5);
	expect_value(_metadata, self->p[1].cfd, 0, -1);
	expect_value(_metadata, self->p[1].cfd, 1, -1);
	bus_expect_none(_metadata, self->p[1].cfd);
	/* with room again it gets the next one, and the count of misses */
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 5, 1);
	expect_value(_metadata, self->p[1].cfd, 5, 3);
	bus_expect_none(_metadata, self->p[1].cfd);
	expect_value(_metadata, self->p[0].cfd, 5, -1);
	/* unicasts to it still wait for room */
	ASSERT_EQ(2U, fill(_metadata, self->p[0].cfd, &self->bus,
			   self->p[1].addr));
	for (v = 0; v < 2; v++)
		expect_value(_metadata, self->p[1].cfd, v, 3);
}

TEST_F(limits, mcast_drop_on_master_applies_to_later_clients)
{
	ASSERT_OK(set_int(self->m, BUS_SET_MAXQLEN, 1));
	ASSERT_OK(set_int(self->m, BUS_SET_MCAST_DROP, 1));
	open_two(_metadata, self);
	/* both members (the sender is one) have room for 1 of the 3 */
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 3);
	drain(_metadata, self->p[0].cfd, 1);
	drain(_metadata, self->p[1].cfd, 1);
	/* switched off for one client: multicasts wait for it again */
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MCAST_DROP, 0));
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 1);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(0), "x", 1, MSG_DONTWAIT));
}

TEST_F(limits, mcast_drop_set_wakes_waiting_sender)
{
	struct bus_send_arg arg;
	struct bus_call call = { .fn = bus_send_call, .arg = &arg };

	open_two(_metadata, self);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 1));
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 1);
	arg = (struct bus_send_arg){ self->p[0].cfd, &self->bus, bus_mcast(0),
				     1 };
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MCAST_DROP, 1));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	drain(_metadata, self->p[1].cfd, 1);
}

TEST_F(limits, mcast_drop_bounds_and_who)
{
	const int bad[] = { 2, -1, 0x7fffffff };
	unsigned int i;
	char c = 1;

	open_two(_metadata, self);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_MCAST_DROP,
					     bad[i]))
			TH_LOG("value %d", bad[i]);
		ASSERT_ERRNO(EINVAL, set_int(self->p[0].afd,
					     BUS_SET_MCAST_DROP, bad[i]))
			TH_LOG("value %d", bad[i]);
	}
	ASSERT_ERRNO(EINVAL, setsockopt(self->p[0].afd, SOL_BUS,
					BUS_SET_MCAST_DROP, &c, sizeof(c)));
	ASSERT_ERRNO(EPERM, set_int(self->p[0].cfd, BUS_SET_MCAST_DROP, 1));
	/* the failed calls changed nothing: multicasts still wait */
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 1));
	mcast_values(_metadata, self->p[0].cfd, &self->bus, 0, 1);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(0), "x", 1, MSG_DONTWAIT));
}

#define MSG_MAX_SYSCTL "/proc/sys/net/bus/msg_max"

static long read_msg_max_sysctl(struct __test_metadata *_metadata)
{
	long val = -1;
	FILE *f = fopen(MSG_MAX_SYSCTL, "r");

	ASSERT_NE(NULL, f) TH_LOG("%s: %s", MSG_MAX_SYSCTL, strerror(errno));
	ASSERT_EQ(1, fscanf(f, "%ld", &val));
	fclose(f);
	return val;
}

/* Write @text to net.bus.msg_max: 0 or the errno of the write */
static int write_msg_max_sysctl(const char *text)
{
	int fd = open(MSG_MAX_SYSCTL, O_WRONLY), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		err = errno;
	close(fd);
	return err;
}

/* An unprivileged master sets the bus' largest message to the most it
 * may, net.bus.msg_max (twice net.core.rmem_max): clients with the
 * default send and receive buffers send messages that large, whole, and
 * one byte more fails.
 */
TEST_F(limits, msg_max_lets_messages_past_the_send_buffer)
{
	const size_t size = read_msg_max_sysctl(_metadata);
	unsigned char *out, *in;

	ASSERT_EQ(0, set_int_as_nobody(_metadata, self->m, BUS_SET_MSG_MAX,
				       size));
	open_two_plain(_metadata, self);
	ASSERT_GT((int)size, get_sndbuf(_metadata, self->p[0].cfd));
	ASSERT_GT((int)size, get_rcvbuf(_metadata, self->p[1].cfd));
	out = pattern(size + 1, 1);
	in = malloc(size + 1);
	ASSERT_NE(NULL, out);
	ASSERT_NE(NULL, in);

	ASSERT_ERRNO(EMSGSIZE, bus_sendto(self->p[0].cfd, &self->bus,
					  self->p[1].addr, out, size + 1, 0));
	ASSERT_EQ((ssize_t)size, bus_sendto(self->p[0].cfd, &self->bus,
					    self->p[1].addr, out, size, 0))
		TH_LOG("send: %s", strerror(errno));
	expect_whole(_metadata, self->p[1].cfd, out, in, size);
	/* the accepted sockets (the master's ends) are held to it too */
	ASSERT_ERRNO(EMSGSIZE, send(self->p[1].afd, out, size + 1, 0));
	ASSERT_EQ((ssize_t)size, send(self->p[1].afd, out, size, 0));
	expect_whole(_metadata, self->p[1].cfd, out, in, size);
	free(out);
	free(in);
	bus_expect_quiet(_metadata, self->p, 2);
}

/* A recipient whose queue holds one such message is full: the next large
 * message to it waits (EAGAIN without waiting), while the sender's
 * messages to others go on; once read, the next one goes.
 */
TEST_F(limits, msg_max_one_large_message_fills_a_recipient_only)
{
	const size_t size = 2 << 20;
	unsigned char *out, *in;
	char c = 'x';

	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, size));
	open_two_plain(_metadata, self);
	out = pattern(size, 2);
	in = malloc(size + 1);
	ASSERT_NE(NULL, out);
	ASSERT_NE(NULL, in);

	ASSERT_EQ((ssize_t)size, bus_sendto(self->p[0].cfd, &self->bus,
					    self->p[1].addr, out, size,
					    MSG_DONTWAIT));
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, out, size,
					MSG_DONTWAIT));
	/* to the master, at once */
	ASSERT_EQ(1, send(self->p[0].cfd, &c, 1, MSG_DONTWAIT));
	ASSERT_EQ(1, recv(self->p[0].afd, in, size, MSG_DONTWAIT));
	expect_whole(_metadata, self->p[1].cfd, out, in, size);
	ASSERT_EQ((ssize_t)size, bus_sendto(self->p[0].cfd, &self->bus,
					    self->p[1].addr, out, size,
					    MSG_DONTWAIT));
	expect_whole(_metadata, self->p[1].cfd, out, in, size);
	free(out);
	free(in);
	bus_expect_quiet(_metadata, self->p, 2);
}

/* Below the send buffer it is the limit too, for clients connected
 * before it was set as well.
 */
TEST_F(limits, msg_max_lowers_the_limit_at_once)
{
	char buf[1001] = "";

	open_two_plain(_metadata, self);
	ASSERT_EQ(1001, bus_sendto(self->p[0].cfd, &self->bus,
				   self->p[1].addr, buf, 1001, 0));
	ASSERT_EQ(1001, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, 1000));
	ASSERT_ERRNO(EMSGSIZE, bus_sendto(self->p[0].cfd, &self->bus,
					  self->p[1].addr, buf, 1001, 0));
	ASSERT_EQ(1000, bus_sendto(self->p[0].cfd, &self->bus,
				   self->p[1].addr, buf, 1000, 0));
	ASSERT_EQ(1000, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	bus_expect_quiet(_metadata, self->p, 2);
}

/* Past net.bus.msg_max only with CAP_NET_ADMIN; the sysctl bounds what
 * an unprivileged master may set from then on.
 */
TEST_F(limits, msg_max_held_to_the_sysctl_without_cap)
{
	long max = read_msg_max_sysctl(_metadata);
	char was[32];

	snprintf(was, sizeof(was), "%ld", max);
	ASSERT_EQ(EPERM, set_int_as_nobody(_metadata, self->m,
					   BUS_SET_MSG_MAX, max + 1));
	ASSERT_EQ(0, set_int_as_nobody(_metadata, self->m, BUS_SET_MSG_MAX,
				       max));
	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, max + 1));

	ASSERT_EQ(0, write_msg_max_sysctl("1048576"));
	ASSERT_EQ(EPERM, set_int_as_nobody(_metadata, self->m,
					   BUS_SET_MSG_MAX, 2 << 20));
	ASSERT_EQ(0, set_int_as_nobody(_metadata, self->m, BUS_SET_MSG_MAX,
				       1 << 20));
	ASSERT_EQ(EINVAL, write_msg_max_sysctl("-1"));
	ASSERT_EQ(1 << 20, read_msg_max_sysctl(_metadata));
	ASSERT_EQ(0, write_msg_max_sysctl(was));
}

/* What msg_max_held_in_a_user_namespace()'s child found: 0, or the step
 * that went wrong.
 */
enum userns_step {
	USERNS_OK,
	USERNS_UNSHARE,		/* unshare(CLONE_NEWUSER | CLONE_NEWNET) */
	USERNS_WRITABLE,	/* the sysctl opened for writing */
	USERNS_VALUE,		/* the sysctl not the initial namespace's */
	USERNS_MASTER,		/* no master on an abstract name */
	USERNS_ABOVE,		/* past the sysctl: not EPERM */
	USERNS_WITHIN,		/* within it: refused */
};

static int userns_child(long expect)
{
	struct bus_name bus = bus_name_abstract();
	char buf[32] = "";
	int fd, val;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return USERNS_UNSHARE;
	/* root of its own user and network namespaces, all capabilities
	 * there: still not the memory's owner
	 */
	fd = open(MSG_MAX_SYSCTL, O_WRONLY);
	if (fd >= 0 || errno != EACCES)
		return USERNS_WRITABLE;
	fd = open(MSG_MAX_SYSCTL, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 ||
	    atol(buf) != expect)
		return USERNS_VALUE;
	close(fd);
	fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_NONE);
	if (fd < 0 || bus_bind_name(fd, &bus) || listen(fd, 1))
		return USERNS_MASTER;
	val = expect + 1;
	if (!setsockopt(fd, SOL_BUS, BUS_SET_MSG_MAX, &val, sizeof(val)) ||
	    errno != EPERM)
		return USERNS_ABOVE;
	val = expect;
	if (setsockopt(fd, SOL_BUS, BUS_SET_MSG_MAX, &val, sizeof(val)))
		return USERNS_WITHIN;
	return USERNS_OK;
}

/* A user namespace's root owns a network namespace of its own, but not
 * the memory net.bus.msg_max bounds: there the sysctl starts with the
 * initial namespace's value and is read-only, and a master past it gets
 * EPERM as one without CAP_NET_ADMIN does.
 */
TEST(msg_max_held_in_a_user_namespace)
{
	long max = read_msg_max_sysctl(_metadata);
	char was[32];
	int status;
	pid_t pid;

	snprintf(was, sizeof(was), "%ld", max);
	ASSERT_EQ(0, write_msg_max_sysctl("2097152"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(userns_child(2 << 20));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, write_msg_max_sysctl(was));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(USERNS_OK, WEXITSTATUS(status))
		TH_LOG("the child failed at step %d (enum userns_step)",
		       WEXITSTATUS(status));
}

TEST_F(limits, msg_max_bad_values_and_callers)
{
	int fresh, val = 4096;

	open_two_plain(_metadata, self);
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_MSG_MAX, 0));
	ASSERT_ERRNO(EINVAL, set_int(self->m, BUS_SET_MSG_MAX, -1));
	ASSERT_ERRNO(EINVAL, setsockopt(self->m, SOL_BUS, BUS_SET_MSG_MAX,
					&val, sizeof(val) - 1));
	ASSERT_ERRNO(EFAULT, setsockopt(self->m, SOL_BUS, BUS_SET_MSG_MAX,
					NULL, sizeof(val)));
	ASSERT_ERRNO(EPERM, set_int(self->p[0].afd, BUS_SET_MSG_MAX, 4096));
	ASSERT_ERRNO(EPERM, set_int(self->p[0].cfd, BUS_SET_MSG_MAX, 4096));
	fresh = bus_socket(_metadata, BUS_PROTO_NONE);
	ASSERT_ERRNO(EPERM, set_int(fresh, BUS_SET_MSG_MAX, 4096));
	close(fresh);
}

/*
 * The options that read a socket's bus race with bind(), listen() and
 * connect() in other threads: they see the socket as it was before or
 * after, never half made (run it under KCSAN: the debug kernel).
 */
struct role_race {
	int fd;
	struct bus_name bus;
	volatile int stop;
};

static void *role_race_setopt(void *p)
{
	struct role_race *r = p;
	int v = 16, a;

	while (!r->stop) {
		setsockopt(r->fd, SOL_BUS, BUS_SET_MAXQLEN, &v, sizeof(v));
		setsockopt(r->fd, SOL_BUS, BUS_JOIN_BUS, NULL, 0);
		setsockopt(r->fd, SOL_BUS, BUS_SET_MSG_MAX, &v, sizeof(v));
		a = accept4(r->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (a >= 0)
			close(a);
	}
	return NULL;
}

TEST(role_race)
{
	struct role_race r;
	struct timespec start;
	pthread_t t;
	int i, err, c;

	/* 200 rounds, or as many as 10 s allow on a slow (debug) kernel:
	 * within the harness's 30 s
	 */
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < 200 && (i == 0 || bus_elapsed_ms(&start) < 10000); i++) {
		r.stop = 0;
		r.bus = bus_name_abstract();
		/* non-blocking, so that the other thread's accept4() cannot
		 * wait for a connection that never comes once it took the
		 * one of this round (SOCK_NONBLOCK in accept4()'s flags is
		 * the new socket's, not the call's)
		 */
		r.fd = socket(AF_BUS, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
		ASSERT_LE(0, r.fd);
		ASSERT_EQ(0, pthread_create(&t, NULL, role_race_setopt, &r));
		ASSERT_OK(bus_bind_name(r.fd, &r.bus));
		ASSERT_OK(listen(r.fd, 4));
		c = socket(AF_BUS, SOCK_SEQPACKET, 0);
		ASSERT_LE(0, c);
		err = bus_connect_name(c, &r.bus);
		ASSERT_EQ(0, err);
		r.stop = 1;
		ASSERT_EQ(0, pthread_join(t, NULL));
		close(c);
		close(r.fd);
	}
}

TEST_HARNESS_MAIN
