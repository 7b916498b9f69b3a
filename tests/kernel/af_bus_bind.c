// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS bind(), listen() and the master's getsockname(): abstract and
 * filesystem names, EADDRINUSE, binding again after close, and the
 * EINVAL cases of binding or listening in the wrong state; the padding
 * a binder leaves between sbus_family and sbus_addr is never shown to
 * anybody (every address the kernel reports has it zeroed).
 */
#include "af_bus_test.h"

static bool is_socket_inode(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * A master bound to bus with addrlen sizeof(struct sockaddr_bus): its
 * getsockname() must be the name of bus with length want_len.
 */
static void expect_full_length_bound(struct __test_metadata *_metadata,
				     const struct bus_name *bus,
				     socklen_t want_len)
{
	struct bus_name full = bus_name_full_length(bus);
	struct bus_name want = *bus;
	int fd = bus_socket(_metadata, 0);

	want.len = want_len;
	ASSERT_OK(bus_bind_name(fd, &full));
	ASSERT_OK(listen(fd, 8));
	bus_expect_name(_metadata, fd, false, &want, 0);
	close(fd);
}

/* With a master on bus, binding another socket to bus gives EADDRINUSE. */
static void expect_in_use(struct __test_metadata *_metadata,
			  const struct bus_name *bus)
{
	int m = bus_master(_metadata, bus);
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EADDRINUSE, bus_bind_name(fd, bus));
	close(fd);
	close(m);
}

TEST(bind_abstract_and_listen)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(fd, &bus));
	ASSERT_OK(listen(fd, 8));
	close(fd);
}

TEST(getsockname_abstract_as_bound)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_master(_metadata, &bus);

	bus_expect_name(_metadata, fd, false, &bus, 0);
	close(fd);
}

TEST(getsockname_before_listen)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(fd, &bus));
	bus_expect_name(_metadata, fd, false, &bus, 0);
	close(fd);
}

/*
 * With addrlen == sizeof(struct sockaddr_bus) the whole 107-byte tail is
 * the name; getsockname() gives it without the structure's tail padding.
 */
TEST(abstract_full_length_name)
{
	struct bus_name bus = bus_name_abstract();

	expect_full_length_bound(_metadata, &bus, BUS_SA_MAXLEN);
}

/* "\0name" of the exact length and "\0name\0\0..." of full length differ. */
TEST(abstract_name_length_is_significant)
{
	struct bus_name shrt = bus_name_abstract();
	struct bus_name full = bus_name_full_length(&shrt);
	int m1, m2, c;

	m1 = bus_master(_metadata, &shrt);
	m2 = bus_master(_metadata, &full);

	c = bus_connect(_metadata, &full);
	bus_expect_no_pending(_metadata, m1);
	close(bus_accept(_metadata, m2));
	close(c);
	close(m1);
	close(m2);
}

TEST(abstract_in_use_eaddrinuse)
{
	struct bus_name bus = bus_name_abstract();

	expect_in_use(_metadata, &bus);
}

TEST(abstract_bound_not_listening_in_use)
{
	struct bus_name bus = bus_name_abstract();
	int a = bus_socket(_metadata, 0);
	int b = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(a, &bus));
	ASSERT_ERRNO(EADDRINUSE, bus_bind_name(b, &bus));
	close(a);
	close(b);
}

TEST(abstract_rebind_after_close)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int fd;

	close(m);
	fd = bus_socket(_metadata, 0);
	ASSERT_OK(bus_bind_name(fd, &bus));
	ASSERT_OK(listen(fd, 8));
	close(fd);
}

TEST(fs_path_creates_socket_inode)
{
	struct bus_name bus = bus_name_tmp();
	int fd = bus_socket(_metadata, 0);

	ASSERT_FALSE(is_socket_inode(bus.sa.sbus_path));
	ASSERT_OK(bus_bind_name(fd, &bus));
	ASSERT_TRUE(is_socket_inode(bus.sa.sbus_path));
	close(fd);
	unlink(bus.sa.sbus_path);
}

TEST(getsockname_fs_path)
{
	struct bus_name bus = bus_name_tmp();
	int fd = bus_master(_metadata, &bus);

	bus_expect_name(_metadata, fd, false, &bus, 0);
	close(fd);
	unlink(bus.sa.sbus_path);
}

/* Bound with sizeof(struct sockaddr_bus): getsockname is still path + NUL. */
TEST(getsockname_fs_path_bound_full_length)
{
	struct bus_name bus = bus_name_tmp();

	expect_full_length_bound(_metadata, &bus, bus.len);
	unlink(bus.sa.sbus_path);
}

TEST(fs_path_existing_file_eaddrinuse)
{
	struct bus_name bus = bus_name_tmp();
	int fd = bus_socket(_metadata, 0);

	bus_make_file(_metadata, bus.sa.sbus_path);
	ASSERT_ERRNO(EADDRINUSE, bus_bind_name(fd, &bus));
	close(fd);
	unlink(bus.sa.sbus_path);
}

TEST(fs_path_bound_by_other_bus_eaddrinuse)
{
	struct bus_name bus = bus_name_tmp();

	expect_in_use(_metadata, &bus);
	unlink(bus.sa.sbus_path);
}

/* Like unix: the inode stays after close and must be unlinked to reuse. */
TEST(fs_path_rebind_after_close_needs_unlink)
{
	struct bus_name bus = bus_name_tmp();
	int m = bus_master(_metadata, &bus);
	int fd;

	close(m);
	ASSERT_TRUE(is_socket_inode(bus.sa.sbus_path));
	fd = bus_socket(_metadata, 0);
	ASSERT_ERRNO(EADDRINUSE, bus_bind_name(fd, &bus));
	ASSERT_OK(unlink(bus.sa.sbus_path));
	ASSERT_OK(bus_bind_name(fd, &bus));
	ASSERT_OK(listen(fd, 8));
	close(fd);
	unlink(bus.sa.sbus_path);
}

TEST(bind_nonzero_address_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name addr1 = bus_dest(&bus, 1);
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &addr1));
	/* The failed bind left the name free. */
	ASSERT_OK(bus_bind_name(fd, &bus));
	close(fd);
}

TEST(bind_nonzero_prefix_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name addr = bus_dest(&bus, bus_mkaddr(1, 0));
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &addr));
	close(fd);
}

TEST(bind_twice_einval)
{
	struct bus_name bus1 = bus_name_abstract();
	struct bus_name bus2 = bus_name_abstract();
	int fd = bus_socket(_metadata, 0);
	int other = bus_socket(_metadata, 0);

	ASSERT_OK(bus_bind_name(fd, &bus1));
	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &bus2));
	/* bus2 was not taken by the failed bind. */
	ASSERT_OK(bus_bind_name(other, &bus2));
	close(fd);
	close(other);
}

TEST(bind_listening_einval)
{
	struct bus_name bus1 = bus_name_abstract();
	struct bus_name bus2 = bus_name_abstract();
	int m = bus_master(_metadata, &bus1);

	ASSERT_ERRNO(EINVAL, bus_bind_name(m, &bus2));
	close(m);
}

TEST(bind_connected_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name other = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);

	ASSERT_ERRNO(EINVAL, bus_bind_name(c, &other));
	close(c);
	close(m);
}

TEST(listen_unbound_einval)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, listen(fd, 8));
	close(fd);
}

TEST(listen_connected_einval)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);
	int a = bus_accept(_metadata, m);

	ASSERT_ERRNO(EINVAL, listen(c, 8));
	ASSERT_ERRNO(EINVAL, listen(a, 8));
	close(a);
	close(c);
	close(m);
}

/* ---------------------------------------------------------------------
 * The padding between sbus_family and sbus_addr (af_bus.rst, "Addresses":
 * ignored on input; every address the kernel reports has it zeroed)
 */

#define PAD_OFF	(offsetof(struct sockaddr_bus, sbus_family) + \
		 sizeof(((struct sockaddr_bus *)0)->sbus_family))
#define PAD_LEN	(offsetof(struct sockaddr_bus, sbus_addr) - PAD_OFF)
#define PAD_IN	0xa5	/* what the binder leaves in the padding */
#define PAD_OUT	0x5a	/* in an output buffer before the call */

_Static_assert(PAD_OFF == 2 && PAD_LEN == 6,
	       "struct sockaddr_bus: 6 bytes of padding after sbus_family");

/*
 * The bytes of an address, so that the padding is part of what a call
 * is given: a struct assignment need not copy padding.
 */
union padded_name {
	struct sockaddr_bus sa;
	unsigned char b[sizeof(struct sockaddr_bus)];
};

/* bus, addr as its sbus_addr, with PAD_IN in every byte of padding. */
static void padded_name(struct __test_metadata *_metadata,
			union padded_name *u, const struct bus_name *bus,
			__u64 addr)
{
	size_t i;

	memset(u->b, 0, sizeof(u->b));
	memcpy(u->b, &bus->sa, bus->len);
	memcpy(u->b + offsetof(struct sockaddr_bus, sbus_addr), &addr,
	       sizeof(addr));
	memset(u->b + PAD_OFF, PAD_IN, PAD_LEN);
	/* what the kernel is given */
	for (i = 0; i < PAD_LEN; i++)
		ASSERT_EQ(PAD_IN, u->b[PAD_OFF + i]);
	ASSERT_EQ(AF_BUS, u->sa.sbus_family);
	ASSERT_EQ(addr, u->sa.sbus_addr.s_addr);
}

/*
 * u, of length len as a call returned it, is {AF_BUS, addr, bus} with
 * every byte of padding 0.
 */
static void expect_padded_out(struct __test_metadata *_metadata,
			      const union padded_name *u, socklen_t len,
			      const struct bus_name *bus, __u64 addr,
			      const char *what)
{
	size_t i;

	ASSERT_EQ(bus->len, len) TH_LOG("%s: length", what);
	ASSERT_EQ(AF_BUS, u->sa.sbus_family) TH_LOG("%s: family", what);
	ASSERT_EQ(addr, u->sa.sbus_addr.s_addr)
		TH_LOG("%s: address %#llx", what,
		       (unsigned long long)u->sa.sbus_addr.s_addr);
	ASSERT_EQ(0, memcmp(u->sa.sbus_path, bus->sa.sbus_path,
			    len - BUS_SA_NOPATH)) TH_LOG("%s: path", what);
	for (i = 0; i < PAD_LEN; i++)
		ASSERT_EQ(0, u->b[PAD_OFF + i])
			TH_LOG("%s: padding byte %zu is %#x", what, i,
			       u->b[PAD_OFF + i]);
}

/* getsockname(fd), or getpeername(fd) if peer, into a PAD_OUT buffer. */
static void expect_padded_name(struct __test_metadata *_metadata, int fd,
			       bool peer, const struct bus_name *bus,
			       __u64 addr, const char *what)
{
	union padded_name u;
	socklen_t len = sizeof(u.sa);

	memset(u.b, PAD_OUT, sizeof(u.b));
	if (peer)
		ASSERT_OK(getpeername(fd, (struct sockaddr *)u.b, &len));
	else
		ASSERT_OK(getsockname(fd, (struct sockaddr *)u.b, &len));
	expect_padded_out(_metadata, &u, len, bus, addr, what);
}

/* Receive the message s on fd; its msg_name is {AF_BUS, from, bus}. */
static void expect_padded_msg(struct __test_metadata *_metadata, int fd,
			      const struct bus_name *bus, __u64 from,
			      const char *s, const char *what)
{
	union padded_name u;
	char buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_name = u.b, .msg_namelen = sizeof(u.sa),
		.msg_iov = &iov, .msg_iovlen = 1,
	};

	memset(u.b, PAD_OUT, sizeof(u.b));
	ASSERT_EQ((ssize_t)strlen(s), recvmsg(fd, &msg, 0))
		TH_LOG("%s: recvmsg: %s", what, strerror(errno));
	ASSERT_EQ(0, memcmp(buf, s, strlen(s)));
	expect_padded_out(_metadata, &u, msg.msg_namelen, bus, from, what);
}

/* sendto(fd, s) to {AF_BUS, to, bus} with PAD_IN in the padding. */
static void send_padded(struct __test_metadata *_metadata, int fd,
			const struct bus_name *bus, __u64 to, const char *s)
{
	union padded_name u;

	padded_name(_metadata, &u, bus, to);
	ASSERT_EQ((ssize_t)strlen(s),
		  sendto(fd, s, strlen(s), MSG_NOSIGNAL,
			 (const struct sockaddr *)u.b, bus->len))
		TH_LOG("sendto: %s", strerror(errno));
}

/*
 * A master binds bus with PAD_IN in the padding (and a client connects
 * with it too, and sends with it: ignored on input); getsockname() of
 * the master, the address accept() gives, getsockname()/getpeername()
 * of the client and of its accepted socket, and msg_name of messages
 * in every direction all have the padding zeroed.
 */
static void padding_case(struct __test_metadata *_metadata,
			 const struct bus_name *bus)
{
	union padded_name in, acc;
	socklen_t len = sizeof(acc.sa);
	int m = bus_socket(_metadata, 0);
	int c, a, c2, a2;
	__u64 caddr, c2addr;

	padded_name(_metadata, &in, bus, 0);
	ASSERT_OK(bind(m, (const struct sockaddr *)in.b, bus->len));
	ASSERT_OK(listen(m, 8));
	expect_padded_name(_metadata, m, false, bus, 0, "master getsockname");

	/* a client connecting with the padding set, one without */
	c = bus_socket(_metadata, 0);
	ASSERT_OK(connect(c, (const struct sockaddr *)in.b, bus->len));
	memset(acc.b, PAD_OUT, sizeof(acc.b));
	a = accept(m, (struct sockaddr *)acc.b, &len);
	ASSERT_LE(0, a) TH_LOG("accept: %s", strerror(errno));
	bus_set_timeouts(_metadata, a, BUS_TIMEOUT_MS);
	caddr = bus_local_addr(_metadata, c);
	ASSERT_NE(0, caddr);
	expect_padded_out(_metadata, &acc, len, bus, caddr, "accept address");
	c2 = bus_connect(_metadata, bus);
	a2 = bus_accept(_metadata, m);
	c2addr = bus_local_addr(_metadata, c2);
	ASSERT_NE(caddr, c2addr);

	expect_padded_name(_metadata, c, false, bus, caddr,
			   "client getsockname");
	expect_padded_name(_metadata, c, true, bus, 0, "client getpeername");
	expect_padded_name(_metadata, a, false, bus, 0,
			   "accepted getsockname");
	expect_padded_name(_metadata, a, true, bus, caddr,
			   "accepted getpeername");
	expect_padded_name(_metadata, c2, false, bus, c2addr,
			   "second client getsockname");
	expect_padded_name(_metadata, c2, true, bus, 0,
			   "second client getpeername");
	expect_padded_name(_metadata, a2, true, bus, c2addr,
			   "second accepted getpeername");

	/* client to master, master to client, without an address */
	bus_send_plain(_metadata, c, "up");
	expect_padded_msg(_metadata, a, bus, caddr, "up", "msg_name at master");
	bus_send_plain(_metadata, a, "down");
	expect_padded_msg(_metadata, c, bus, 0, "down", "msg_name at client");
	/* with a padded destination: to the master, between clients */
	send_padded(_metadata, c, bus, BUS_MASTER_ADDR, "to0");
	expect_padded_msg(_metadata, a, bus, caddr, "to0",
			  "msg_name of a message sent to address 0");
	bus_join(_metadata, a);
	bus_join(_metadata, a2);
	send_padded(_metadata, c, bus, c2addr, "c>c2");
	expect_padded_msg(_metadata, c2, bus, caddr, "c>c2",
			  "msg_name of a unicast between clients");
	send_padded(_metadata, a2, bus, caddr, "m>c");
	expect_padded_msg(_metadata, c, bus, 0, "m>c",
			  "msg_name of a unicast from the master");
	send_padded(_metadata, c2, bus, bus_mcast(0), "all");
	expect_padded_msg(_metadata, c, bus, c2addr, "all",
			  "msg_name of a multicast");
	expect_padded_msg(_metadata, c2, bus, c2addr, "all",
			  "msg_name of a multicast to its sender");
	bus_expect_none(_metadata, c);
	bus_expect_none(_metadata, c2);
	bus_expect_none(_metadata, a);
	bus_expect_none(_metadata, a2);

	/* and still after the clients came and went */
	expect_padded_name(_metadata, m, false, bus, 0,
			   "master getsockname at the end");
	close(c);
	close(c2);
	close(a);
	close(a2);
	close(m);
}

TEST(padding_zeroed_abstract)
{
	struct bus_name bus = bus_name_abstract();

	padding_case(_metadata, &bus);
}

TEST(padding_zeroed_fs_path)
{
	struct bus_name bus = bus_name_tmp();

	padding_case(_metadata, &bus);
	unlink(bus.sa.sbus_path);
}

TEST_HARNESS_MAIN
