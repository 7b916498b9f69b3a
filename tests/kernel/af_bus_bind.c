// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS bind(), listen() and the master's getsockname(): abstract and
 * filesystem names, EADDRINUSE, binding again after close, and the
 * EINVAL cases of binding or listening in the wrong state.
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

TEST_HARNESS_MAIN
