// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS bad input: address lengths too short, the wrong family, a
 * filesystem path without its NUL, NULL addresses, short or NULL option
 * values, MSG_OOB, and sending or receiving on unconnected or listening
 * sockets.  None of these may deliver anything to anybody.  (Lengths over
 * sizeof(struct sockaddr_bus) == sizeof(struct sockaddr_storage) never
 * reach the family: the generic socket layer rejects them first.)
 */
#include "af_bus_test.h"

/* A bus with two joined clients. */
BUS_PEERS_FIXTURE(bus, 2, 2)

/* Lengths too short for bind/connect: up to and including offsetof(path). */
static const socklen_t short_lens[] = { 0, 1, 2, 8, 15, BUS_SA_NOPATH };

/* n with its family replaced. */
static struct bus_name with_family(const struct bus_name *n, int family)
{
	struct bus_name r = *n;

	r.sa.sbus_family = family;
	return r;
}

/* n cut so that the NUL of its filesystem path lies outside addrlen. */
static struct bus_name unterminated(const struct bus_name *n)
{
	struct bus_name r = *n;

	r.len = BUS_SA_NOPATH + strlen(r.sa.sbus_path);
	return r;
}

/* A filesystem name that fills all of sbus_path with no NUL at all. */
static struct bus_name all_path_no_nul(void)
{
	struct bus_name r = bus_name_tmp();

	memset(r.sa.sbus_path, 'a', sizeof(r.sa.sbus_path));
	memcpy(r.sa.sbus_path, "/tmp/", 5);
	r.len = sizeof(r.sa);
	return r;
}

TEST(bind_addrlen_too_short_einval)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_socket(_metadata, 0);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(short_lens); i++) {
		socklen_t len = short_lens[i];

		ASSERT_ERRNO(EINVAL, bind(fd, (struct sockaddr *)&bus.sa, len))
			TH_LOG("addrlen %u", len);
	}
	/* Still unbound. */
	ASSERT_OK(bus_bind_name(fd, &bus));
	close(fd);
}

TEST(bind_wrong_family_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name un = with_family(&bus, AF_UNIX);
	struct bus_name unspec = with_family(&bus, AF_UNSPEC);
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &un));
	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &unspec));
	ASSERT_OK(bus_bind_name(fd, &bus));
	close(fd);
}

TEST(bind_unterminated_path_einval)
{
	struct bus_name bus = bus_name_tmp();
	struct bus_name cut = unterminated(&bus);
	struct bus_name full = all_path_no_nul();
	int fd = bus_socket(_metadata, 0);
	struct stat st;

	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &cut));
	ASSERT_ERRNO(EINVAL, bus_bind_name(fd, &full));
	/* Nothing was created. */
	ASSERT_ERRNO(ENOENT, stat(bus.sa.sbus_path, &st));
	close(fd);
}

TEST(bind_null_address_efault)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EFAULT, bind(fd, NULL, sizeof(struct sockaddr_bus)));
	close(fd);
}

TEST(connect_addrlen_too_short_einval)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int fd = bus_socket(_metadata, 0);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(short_lens); i++) {
		socklen_t len = short_lens[i];

		ASSERT_ERRNO(EINVAL, connect(fd, (struct sockaddr *)&bus.sa, len))
			TH_LOG("addrlen %u", len);
	}
	bus_expect_no_pending(_metadata, m);
	close(fd);
	close(m);
}

TEST(connect_wrong_family_einval)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_name un = with_family(&bus, AF_UNIX);
	int m = bus_master(_metadata, &bus);

	bus_expect_connect_fails(_metadata, BUS_PROTO_NONE, &un, EINVAL, m);
	close(m);
}

/* The path without its NUL would name a live bus: still EINVAL. */
TEST(connect_unterminated_path_einval)
{
	struct bus_name bus = bus_name_tmp();
	struct bus_name cut = unterminated(&bus);
	struct bus_name full = all_path_no_nul();
	int m = bus_master(_metadata, &bus);
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EINVAL, bus_connect_name(fd, &cut));
	ASSERT_ERRNO(EINVAL, bus_connect_name(fd, &full));
	bus_expect_no_pending(_metadata, m);
	close(fd);
	close(m);
	unlink(bus.sa.sbus_path);
}

TEST(connect_null_address_efault)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(EFAULT, connect(fd, NULL, sizeof(struct sockaddr_bus)));
	close(fd);
}

TEST_F(bus, sendto_wrong_family_einval)
{
	struct bus_name d = bus_dest(&self->bus, self->p[1].addr);

	d.sa.sbus_family = AF_UNIX;
	ASSERT_ERRNO(EINVAL, sendto(self->p[0].cfd, "x", 1, MSG_NOSIGNAL,
				    (struct sockaddr *)&d.sa, d.len));
	d.sa.sbus_family = AF_UNSPEC;
	ASSERT_ERRNO(EINVAL, sendto(self->p[0].cfd, "x", 1, MSG_NOSIGNAL,
				    (struct sockaddr *)&d.sa, d.len));
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(bus, sendto_bad_addrlen_einval)
{
	struct bus_name d = bus_dest(&self->bus, self->p[1].addr);
	const socklen_t lens[] = { 1, 2, 8, 15 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		socklen_t len = lens[i];

		ASSERT_ERRNO(EINVAL, sendto(self->p[0].cfd, "x", 1, MSG_NOSIGNAL,
					    (struct sockaddr *)&d.sa, len))
			TH_LOG("addrlen %u", len);
	}
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST(sendto_unterminated_path_einval)
{
	struct bus_name bus = bus_name_tmp();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p[2];
	struct bus_name cut;
	int i;

	for (i = 0; i < 2; i++)
		bus_peer_open(_metadata, &p[i], m, &bus, true);
	cut = unterminated(&bus);
	cut.sa.sbus_addr.s_addr = p[1].addr;
	ASSERT_ERRNO(EINVAL, sendto(p[0].cfd, "x", 1, MSG_NOSIGNAL,
				    (struct sockaddr *)&cut.sa, cut.len));
	bus_expect_quiet(_metadata, p, 2);
	bus_close_peers(&m, p, 2);
	unlink(bus.sa.sbus_path);
}

TEST_F(bus, send_msg_oob_eopnotsupp)
{
	ASSERT_ERRNO(EOPNOTSUPP, send(self->p[0].cfd, "x", 1,
				      MSG_OOB | MSG_NOSIGNAL));
	ASSERT_ERRNO(EOPNOTSUPP, bus_sendto(self->p[0].cfd, &self->bus,
					    self->p[1].addr, "x", 1, MSG_OOB));
	ASSERT_ERRNO(EOPNOTSUPP, send(self->p[0].afd, "x", 1,
				      MSG_OOB | MSG_NOSIGNAL));
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(bus, recv_msg_oob_eopnotsupp)
{
	char b[8];

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "x");
	ASSERT_ERRNO(EOPNOTSUPP, recv(self->p[1].cfd, b, sizeof(b), MSG_OOB));
	/* The message is still there. */
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "x");
}

TEST_F(bus, send_unconnected_enotconn)
{
	int fd = bus_socket(_metadata, 0);

	ASSERT_ERRNO(ENOTCONN, send(fd, "x", 1, MSG_NOSIGNAL));
	ASSERT_ERRNO(ENOTCONN, bus_sendto(fd, &self->bus, self->p[0].addr,
					  "x", 1, 0));
	ASSERT_ERRNO(ENOTCONN, bus_sendto(fd, &self->bus, BUS_MASTER_ADDR,
					  "x", 1, 0));
	close(fd);
	bus_expect_quiet(_metadata, self->p, 2);
}

TEST_F(bus, send_listening_enotconn)
{
	ASSERT_ERRNO(ENOTCONN, send(self->m, "x", 1, MSG_NOSIGNAL));
	ASSERT_ERRNO(ENOTCONN, bus_sendto(self->m, &self->bus, self->p[0].addr,
					  "x", 1, 0));
	ASSERT_ERRNO(ENOTCONN, bus_sendto(self->m, &self->bus, bus_mcast(0),
					  "x", 1, 0));
	bus_expect_quiet(_metadata, self->p, 2);
}

/* Blocking receives, bounded by SO_RCVTIMEO: ENOTCONN must come at once. */
TEST(recv_unconnected_enotconn)
{
	int fd = bus_socket(_metadata, 0);
	char b[8];

	ASSERT_ERRNO(ENOTCONN, recv(fd, b, sizeof(b), 0));
	close(fd);
}

TEST_F(bus, recv_listening_enotconn)
{
	char b[8];

	ASSERT_ERRNO(ENOTCONN, recv(self->m, b, sizeof(b), 0));
}

/*
 * setsockopt(fd, SOL_BUS, opt) with address addr and each optlen but
 * sizeof(struct bus_addr) must fail with EINVAL.
 */
static void expect_bad_optlens(struct __test_metadata *_metadata, int fd,
			       int opt, __u64 addr)
{
	struct {
		struct bus_addr a;
		char more[8];
	} v;
	const socklen_t lens[] = { 0, 1, 4, 7, 9, 16 };
	unsigned int i;

	memset(&v, 0, sizeof(v));
	v.a.s_addr = addr;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		socklen_t len = lens[i];

		ASSERT_ERRNO(EINVAL, setsockopt(fd, SOL_BUS, opt, &v, len))
			TH_LOG("optlen %u", len);
	}
}

TEST_F(bus, add_addr_bad_optlen_einval)
{
	expect_bad_optlens(_metadata, self->p[0].afd, BUS_ADD_ADDR,
			   bus_mkaddr(1, 5));
	/* None of them added the address. */
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, bus_mkaddr(1, 5)));
}

TEST_F(bus, add_addr_null_optval_efault)
{
	ASSERT_ERRNO(EFAULT, setsockopt(self->p[0].afd, SOL_BUS, BUS_ADD_ADDR,
					NULL, sizeof(struct bus_addr)));
}

TEST_F(bus, del_addr_bad_optlen_einval)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, bus_mkaddr(1, 5)));
	expect_bad_optlens(_metadata, self->p[0].afd, BUS_DEL_ADDR,
			   bus_mkaddr(1, 5));
	/* None of them deleted it. */
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, bus_mkaddr(1, 5)));
}

TEST_F(bus, del_addr_null_optval_efault)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, bus_mkaddr(1, 5)));
	ASSERT_ERRNO(EFAULT, setsockopt(self->p[0].afd, SOL_BUS, BUS_DEL_ADDR,
					NULL, sizeof(struct bus_addr)));
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_DEL_ADDR, bus_mkaddr(1, 5)));
}

TEST_HARNESS_MAIN
