// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS connect() and accept(): reaching a bus by abstract or filesystem
 * name, the errors of connecting to what is not a listening bus, address
 * assignment, getsockname/getpeername on both ends, accept4 flags,
 * protocol mismatch, and a full listen backlog.
 */
#include "af_bus_test.h"

static int nonblocking_socket(struct __test_metadata *_metadata)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_OK(fcntl(fd, F_SETFL, O_NONBLOCK));
	return fd;
}

/* A master on a bus whose listen backlog is full of unaccepted clients. */
struct full_backlog {
	int m;
	int fds[8];	/* the clients */
	int n;		/* how many there are */
};

/*
 * Make a master listening on bus with backlog, and connect non-blocking
 * clients until one fails; it must fail with EAGAIN after backlog (or
 * backlog + 1, as unix counts) successes.
 */
static void full_backlog_open(struct __test_metadata *_metadata,
			      struct full_backlog *b,
			      const struct bus_name *bus, int backlog)
{
	int fd;

	b->m = bus_socket(_metadata, 0);
	ASSERT_OK(bus_bind_name(b->m, bus));
	ASSERT_OK(listen(b->m, backlog));
	for (b->n = 0; b->n < (int)ARRAY_SIZE(b->fds); b->n++) {
		fd = nonblocking_socket(_metadata);
		if (bus_connect_name(fd, bus) < 0) {
			ASSERT_EQ(EAGAIN, errno)
				TH_LOG("connect %d: %s", b->n, strerror(errno));
			close(fd);
			break;
		}
		b->fds[b->n] = fd;
	}
	ASSERT_LE(backlog, b->n);
	ASSERT_GE(backlog + 1, b->n);
}

static void full_backlog_close(struct full_backlog *b)
{
	int i;

	for (i = 0; i < b->n; i++)
		close(b->fds[i]);
	close(b->m);
}

TEST(connect_abstract_accept_fills_address)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	int a;

	memset(&sa, 0xa5, sizeof(sa));
	a = accept(m, (struct sockaddr *)&sa, &len);
	ASSERT_LE(0, a) TH_LOG("accept: %s", strerror(errno));
	bus_expect_sockaddr(_metadata, &sa, len, &bus, 1);
	close(a);
	close(c);
	close(m);
}

TEST(addresses_assigned_in_connect_order)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c[4], i;

	for (i = 0; i < 4; i++)
		c[i] = bus_connect(_metadata, &bus);
	for (i = 0; i < 4; i++)
		EXPECT_EQ((__u64)i + 1, bus_local_addr(_metadata, c[i]));
	for (i = 0; i < 4; i++)
		close(c[i]);
	close(m);
}

TEST(addresses_not_reused_after_close)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p1, p2, p3;
	int c4;

	bus_peer_open(_metadata, &p1, m, &bus, false);
	bus_peer_open(_metadata, &p2, m, &bus, false);
	ASSERT_EQ(1ULL, p1.addr);
	ASSERT_EQ(2ULL, p2.addr);
	bus_peer_close(&p1);
	bus_peer_open(_metadata, &p3, m, &bus, false);
	ASSERT_EQ(3ULL, p3.addr);
	/* Client 4 closes before it is accepted: 4 is not reused either. */
	close(p3.cfd);
	c4 = bus_connect(_metadata, &bus);
	ASSERT_EQ(4ULL, bus_local_addr(_metadata, c4));
	close(c4);
	c4 = bus_connect(_metadata, &bus);
	ASSERT_EQ(5ULL, bus_local_addr(_metadata, c4));
	close(c4);
	bus_peer_close(&p2);
	close(p3.afd);
	close(m);
}

TEST(names_of_both_ends)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p0, p;

	bus_peer_open(_metadata, &p0, m, &bus, false);
	bus_peer_open(_metadata, &p, m, &bus, false);
	ASSERT_EQ(2ULL, p.addr);
	bus_expect_name(_metadata, p.cfd, false, &bus, 2);
	bus_expect_name(_metadata, p.afd, true, &bus, 2);
	bus_expect_name(_metadata, p.cfd, true, &bus, 0);
	bus_peer_close(&p);
	bus_peer_close(&p0);
	close(m);
}

TEST(getpeername_listening_enotconn)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	ASSERT_ERRNO(ENOTCONN, getpeername(m, (struct sockaddr *)&sa, &len));
	close(m);
}

TEST(connect_fs_path)
{
	struct bus_name bus = bus_name_tmp();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p;

	bus_peer_open(_metadata, &p, m, &bus, false);
	ASSERT_EQ(1ULL, p.addr);
	bus_expect_name(_metadata, p.cfd, false, &bus, 1);
	bus_expect_name(_metadata, p.cfd, true, &bus, 0);
	bus_expect_name(_metadata, p.afd, true, &bus, 1);
	bus_peer_close(&p);
	close(m);
	unlink(bus.sa.sbus_path);
}

/* Connecting with addrlen sizeof(sockaddr_bus) finds the same fs bus. */
TEST(connect_fs_path_full_length)
{
	struct bus_name bus = bus_name_tmp();
	struct bus_name full = bus_name_full_length(&bus);
	int m = bus_master(_metadata, &bus);
	int c = bus_socket(_metadata, 0);

	ASSERT_OK(bus_connect_name(c, &full));
	bus_expect_name(_metadata, c, false, &bus, 1);
	close(c);
	close(m);
	unlink(bus.sa.sbus_path);
}

TEST(connect_missing_path_enoent)
{
	struct bus_name bus = bus_name_tmp();
	int c = bus_socket(_metadata, 0);

	ASSERT_ERRNO(ENOENT, bus_connect_name(c, &bus));
	close(c);
}

TEST(connect_regular_file_econnrefused)
{
	struct bus_name bus = bus_name_tmp();
	int c = bus_socket(_metadata, 0);

	bus_make_file(_metadata, bus.sa.sbus_path);
	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c, &bus));
	close(c);
	unlink(bus.sa.sbus_path);
}

TEST(connect_unix_socket_path_econnrefused)
{
	struct bus_name bus = bus_name_tmp();
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int u = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	int c = bus_socket(_metadata, 0);

	ASSERT_LE(0, u);
	strcpy(un.sun_path, bus.sa.sbus_path);
	ASSERT_OK(bind(u, (struct sockaddr *)&un, sizeof(un)));
	ASSERT_OK(listen(u, 8));
	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c, &bus));
	close(c);
	close(u);
	unlink(bus.sa.sbus_path);
}

TEST(connect_abstract_no_bus_econnrefused)
{
	struct bus_name bus = bus_name_abstract();
	int c = bus_socket(_metadata, 0);

	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c, &bus));
	close(c);
}

/* Connecting to bus, bound by a socket that does not listen, is refused. */
static void expect_not_listening_refused(struct __test_metadata *_metadata,
					 const struct bus_name *bus)
{
	int m = bus_socket(_metadata, 0);
	int c = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(m, bus));
	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c, bus));
	close(c);
	close(m);
}

TEST(connect_bound_not_listening_econnrefused)
{
	struct bus_name bus = bus_name_abstract();

	expect_not_listening_refused(_metadata, &bus);
}

TEST(connect_fs_bound_not_listening_econnrefused)
{
	struct bus_name bus = bus_name_tmp();

	expect_not_listening_refused(_metadata, &bus);
	unlink(bus.sa.sbus_path);
}

TEST(connect_nonzero_address_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name addr = bus_dest(&bus, 1);
	int m = bus_master(_metadata, &bus);

	bus_expect_connect_fails(_metadata, BUS_PROTO_NONE, &addr, EINVAL, m);
	close(m);
}

TEST(connect_twice_eisconn)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);

	ASSERT_ERRNO(EISCONN, bus_connect_name(c, &bus));
	close(bus_accept(_metadata, m));
	bus_expect_no_pending(_metadata, m);
	close(c);
	close(m);
}

TEST(connect_listening_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name other = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int m2 = bus_master(_metadata, &other);

	ASSERT_ERRNO(EINVAL, bus_connect_name(m, &other));
	ASSERT_ERRNO(EINVAL, bus_connect_name(m, &bus));
	close(m2);
	close(m);
}

TEST(connect_bound_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name mine = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int fd = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(fd, &mine));
	ASSERT_ERRNO(EINVAL, bus_connect_name(fd, &bus));
	close(fd);
	close(m);
}

TEST(protocol_dbus_matches)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master_proto(_metadata, &bus, BUS_PROTO_DBUS);
	int c = bus_socket(_metadata, BUS_PROTO_DBUS);

	ASSERT_OK(bus_connect_name(c, &bus));
	close(bus_accept(_metadata, m));
	close(c);
	close(m);
}

/* A client of protocol proto connecting to a bus of bus_proto: EPROTOTYPE. */
static void expect_protocol_mismatch(struct __test_metadata *_metadata,
				     int bus_proto, int proto)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master_proto(_metadata, &bus, bus_proto);

	bus_expect_connect_fails(_metadata, proto, &bus, EPROTOTYPE, m);
	close(m);
}

TEST(protocol_none_to_dbus_bus_eprototype)
{
	expect_protocol_mismatch(_metadata, BUS_PROTO_DBUS, BUS_PROTO_NONE);
}

TEST(protocol_dbus_to_none_bus_eprototype)
{
	expect_protocol_mismatch(_metadata, BUS_PROTO_NONE, BUS_PROTO_DBUS);
}

TEST(accept_nonblocking_nothing_pending_eagain)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);

	ASSERT_OK(fcntl(m, F_SETFL, O_NONBLOCK));
	ASSERT_ERRNO(EAGAIN, accept(m, NULL, NULL));
	close(m);
}

TEST(accept4_flags)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);
	int a = accept4(m, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	char b;

	ASSERT_LE(0, a) TH_LOG("accept4: %s", strerror(errno));
	EXPECT_EQ(O_NONBLOCK, fcntl(a, F_GETFL) & O_NONBLOCK);
	EXPECT_EQ(FD_CLOEXEC, fcntl(a, F_GETFD) & FD_CLOEXEC);
	/* Non-blocking for real: no MSG_DONTWAIT needed. */
	ASSERT_ERRNO(EAGAIN, recv(a, &b, 1, 0));
	close(a);
	close(c);
	close(m);
}

TEST(accept_unconnected_einval)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, accept(fd, NULL, NULL));
	close(fd);
}

TEST(accept_bound_not_listening_einval)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(fd, &bus));
	ASSERT_ERRNO(EINVAL, accept(fd, NULL, NULL));
	close(fd);
}

TEST(accept_connected_einval)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p;

	bus_peer_open(_metadata, &p, m, &bus, false);
	ASSERT_ERRNO(EINVAL, accept(p.cfd, NULL, NULL));
	ASSERT_ERRNO(EINVAL, accept(p.afd, NULL, NULL));
	bus_peer_close(&p);
	close(m);
}

TEST(backlog_full_nonblocking_eagain)
{
	struct bus_name bus = bus_name_abstract();
	struct full_backlog b;
	int c;

	full_backlog_open(_metadata, &b, &bus, 2);
	/* Accepting one makes room for exactly one more. */
	close(bus_accept(_metadata, b.m));
	c = nonblocking_socket(_metadata);
	ASSERT_OK(bus_connect_name(c, &bus));
	close(c);
	c = nonblocking_socket(_metadata);
	ASSERT_ERRNO(EAGAIN, bus_connect_name(c, &bus));
	close(c);
	full_backlog_close(&b);
}

TEST(backlog_full_blocking_sndtimeo)
{
	struct bus_name bus = bus_name_abstract();
	struct full_backlog b;
	struct timespec start;
	int c;

	full_backlog_open(_metadata, &b, &bus, 1);
	c = bus_socket(_metadata, 0);
	bus_set_timeouts(_metadata, c, 300);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EAGAIN, bus_connect_name(c, &bus));
	/* It waited for SO_SNDTIMEO rather than failing at once. */
	ASSERT_LE(250, bus_elapsed_ms(&start));
	close(c);
	full_backlog_close(&b);
}

struct connect_arg {
	int fd;
	const struct bus_name *bus;
};

static long connect_call(void *p)
{
	struct connect_arg *a = p;

	return bus_connect_name(a->fd, a->bus);
}

TEST(backlog_full_blocking_connect_woken_by_accept)
{
	struct bus_name bus = bus_name_abstract();
	struct full_backlog b;
	struct connect_arg arg = { .bus = &bus };
	struct bus_call call = { .fn = connect_call, .arg = &arg };

	full_backlog_open(_metadata, &b, &bus, 1);
	arg.fd = bus_socket(_metadata, 0);
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	close(bus_accept(_metadata, b.m));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(0, call.ret) TH_LOG("connect: %s", strerror(call.err));
	/* A new address, after those of the clients already queued. */
	ASSERT_LT((__u64)b.n, bus_local_addr(_metadata, arg.fd));
	close(arg.fd);
	full_backlog_close(&b);
}

/*
 * While one thread waits in connect() for room in the backlog, another
 * connect() of the same socket fails with EALREADY and bind() with
 * EINVAL; the first connects once there is room, exactly once.
 */
TEST(connect_in_progress_ealready)
{
	struct bus_name bus = bus_name_abstract(), other = bus_name_abstract();
	struct full_backlog b;
	struct connect_arg arg = { .bus = &bus };
	struct bus_call call = { .fn = connect_call, .arg = &arg };
	int a;

	full_backlog_open(_metadata, &b, &bus, 1);
	arg.fd = bus_socket(_metadata, 0);
	bus_set_timeouts(_metadata, arg.fd, 10000);
	bus_call_start_blocked(_metadata, &call);
	ASSERT_ERRNO(EALREADY, bus_connect_name(arg.fd, &bus));
	ASSERT_ERRNO(EINVAL, bus_bind_name(arg.fd, &other));
	ASSERT_ERRNO(ENOTCONN, send(arg.fd, "x", 1, MSG_NOSIGNAL));
	close(bus_accept(_metadata, b.m));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(0, call.ret) TH_LOG("connect: %s", strerror(call.err));
	ASSERT_ERRNO(EISCONN, bus_connect_name(arg.fd, &bus));
	/* one connection: accept it, and nothing else is pending */
	for (a = 1; a < b.n; a++)
		close(bus_accept(_metadata, b.m));
	a = bus_accept(_metadata, b.m);
	bus_expect_no_pending(_metadata, b.m);
	bus_send_plain(_metadata, arg.fd, "once");
	ASSERT_EQ(4, recv(a, (char [8]){ 0 }, 8, 0));
	close(a);
	close(arg.fd);
	full_backlog_close(&b);
}

TEST_HARNESS_MAIN
