// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS close: a client closing (EOF on its accepted socket, addresses
 * freed, messages queued to it dropped), the master closing one accepted
 * socket (EOF after draining, EPIPE/SIGPIPE, addresses freed), the master
 * closing the bus (EOF or ECONNRESET everywhere, EPIPE, the name free
 * again), and messages outliving their sender.
 */
#include "af_bus_test.h"

#include <signal.h>

#define P1_A	bus_mkaddr(1, 0x10)

/* A bus with three joined clients, addresses 1, 2, 3. */
BUS_PEERS_FIXTURE(bus, 3, 3)

/* recv on fd gives end of file (or ECONNRESET where reset_ok) at once. */
static void expect_eof(struct __test_metadata *_metadata, int fd, bool reset_ok)
{
	char b[16];
	ssize_t n = recv(fd, b, sizeof(b), 0);

	if (reset_ok && n == -1 && errno == ECONNRESET)
		return;
	ASSERT_EQ(0, n) TH_LOG("recv on fd %d: %zd (%s), expected EOF", fd, n,
			       n < 0 ? strerror(errno) : "a message");
}

/*
 * fd (the survivor of a pair whose other end closed) reads end of file;
 * close it, so that the final "nobody got anything" check skips it.
 */
static void expect_eof_close(struct __test_metadata *_metadata, int *fd)
{
	expect_eof(_metadata, *fd, false);
	close(*fd);
	*fd = -1;
}

static void close_cfd(struct bus_peer *p)
{
	close(p->cfd);
	p->cfd = -1;
}

static void close_afd(struct bus_peer *p)
{
	close(p->afd);
	p->afd = -1;
}

/*
 * p[gone] owned P1_A and one end of its connection is closed: its
 * addresses are unowned, so what p[from] sends to them goes to the
 * master, on p[from]'s own accepted socket.
 */
static void expect_addresses_freed(struct __test_metadata *_metadata,
				   FIXTURE_DATA(bus) *self, int gone, int from)
{
	struct bus_peer *p = self->p;

	bus_send_str(_metadata, p[from].cfd, &self->bus, p[gone].addr,
		     "to gone");
	bus_send_str(_metadata, p[from].cfd, &self->bus, P1_A, "to P1_A");
	bus_expect(_metadata, p[from].afd, &self->bus, p[from].addr,
		   "to gone");
	bus_expect(_metadata, p[from].afd, &self->bus, p[from].addr,
		   "to P1_A");
}

TEST_F(bus, client_close_accepted_eof_after_drain)
{
	bus_send_plain(_metadata, self->p[0].cfd, "last words");
	close_cfd(&self->p[0]);
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "last words");
	expect_eof(_metadata, self->p[0].afd, false);
	/* And it stays at end of file. */
	expect_eof_close(_metadata, &self->p[0].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, client_close_accepted_send_epipe)
{
	close_cfd(&self->p[0]);
	ASSERT_ERRNO(EPIPE, send(self->p[0].afd, "x", 1, MSG_NOSIGNAL));
	expect_eof_close(_metadata, &self->p[0].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, client_close_frees_addresses)
{
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, P1_A));
	close_cfd(&self->p[1]);
	expect_addresses_freed(_metadata, self, 1, 0);
	expect_eof_close(_metadata, &self->p[1].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, client_close_address_can_be_given_again)
{
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR, P1_A));
	close_cfd(&self->p[1]);
	ASSERT_OK(bus_addr_opt(self->p[2].afd, BUS_ADD_ADDR, P1_A));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, P1_A, "moved");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "moved");
	expect_eof_close(_metadata, &self->p[1].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Messages queued to a client that closes are dropped, not rerouted. */
TEST_F(bus, client_close_drops_its_queue)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "unread");
	close_cfd(&self->p[1]);
	expect_eof_close(_metadata, &self->p[1].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, client_close_leaves_multicast)
{
	close_cfd(&self->p[1]);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0), "all");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr, "all");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr, "all");
	expect_eof_close(_metadata, &self->p[1].afd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, accepted_close_client_eof_after_drain)
{
	bus_send_plain(_metadata, self->p[0].afd, "bye");
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		     "from 2");
	close_afd(&self->p[0]);
	bus_expect(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR, "bye");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "from 2");
	expect_eof(_metadata, self->p[0].cfd, false);
	expect_eof_close(_metadata, &self->p[0].cfd);
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * The master closes an accepted socket without reading what its client
 * sent: the client gets POLLERR and ECONNRESET once, then end of file.
 */
TEST_F(bus, accepted_close_unread_resets_client)
{
	bus_send_plain(_metadata, self->p[0].cfd, "never read");
	close_afd(&self->p[0]);
	ASSERT_EQ(POLLERR, bus_poll(_metadata, self->p[0].cfd, POLLIN, 0) &
			   POLLERR);
	ASSERT_ERRNO(ECONNRESET, recv(self->p[0].cfd, (char[4]){ 0 }, 4, 0));
	ASSERT_EQ(0, bus_poll(_metadata, self->p[0].cfd, POLLIN, 0) & POLLERR);
	expect_eof_close(_metadata, &self->p[0].cfd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, accepted_close_client_send_epipe)
{
	close_afd(&self->p[0]);
	ASSERT_ERRNO(EPIPE, send(self->p[0].cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_ERRNO(EPIPE, bus_sendto(self->p[0].cfd, &self->bus,
				       self->p[1].addr, "x", 1, 0));
	ASSERT_ERRNO(EPIPE, bus_sendto(self->p[0].cfd, &self->bus,
				       bus_mcast(0), "x", 1, 0));
	expect_eof_close(_metadata, &self->p[0].cfd);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, accepted_close_frees_addresses)
{
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, P1_A));
	close_afd(&self->p[0]);
	expect_addresses_freed(_metadata, self, 0, 1);
	expect_eof_close(_metadata, &self->p[0].cfd);
	bus_expect_quiet(_metadata, self->p, 3);
}

static volatile sig_atomic_t sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

TEST_F(bus, epipe_raises_sigpipe_without_msg_nosignal)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };

	ASSERT_OK(sigaction(SIGPIPE, &sa, NULL));
	close_afd(&self->p[0]);
	ASSERT_ERRNO(EPIPE, send(self->p[0].cfd, "x", 1, 0));
	ASSERT_EQ(1, sigpipes);
	ASSERT_ERRNO(EPIPE, send(self->p[0].cfd, "x", 1, MSG_NOSIGNAL));
	ASSERT_EQ(1, sigpipes);
}

TEST_F(bus, queued_messages_outlive_sender)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "first");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "second");
	bus_peer_close(&self->p[0]);
	bus_expect(_metadata, self->p[1].cfd, &self->bus, 1, "first");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, 1, "second");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, 1, "second");
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(bus, master_close_everyone_sees_eof)
{
	int i;

	close(self->m);
	self->m = -1;
	for (i = 0; i < 3; i++) {
		expect_eof(_metadata, self->p[i].cfd, true);
		expect_eof(_metadata, self->p[i].afd, true);
	}
}

TEST_F(bus, master_close_sends_epipe)
{
	int i;

	close(self->m);
	self->m = -1;
	for (i = 0; i < 3; i++) {
		ASSERT_ERRNO(EPIPE, send(self->p[i].cfd, "x", 1, MSG_NOSIGNAL));
		ASSERT_ERRNO(EPIPE, bus_sendto(self->p[i].cfd, &self->bus,
					       self->p[(i + 1) % 3].addr,
					       "x", 1, 0));
		ASSERT_ERRNO(EPIPE, bus_sendto(self->p[i].cfd, &self->bus,
					       bus_mcast(0), "x", 1, 0));
		ASSERT_ERRNO(EPIPE, send(self->p[i].afd, "x", 1, MSG_NOSIGNAL));
	}
}

TEST_F(bus, master_close_pending_client_eof)
{
	int c = bus_connect(_metadata, &self->bus);

	close(self->m);
	self->m = -1;
	expect_eof(_metadata, c, true);
	ASSERT_ERRNO(EPIPE, send(c, "x", 1, MSG_NOSIGNAL));
	close(c);
}

TEST_F(bus, master_close_abstract_name_free_at_once)
{
	struct bus_peer q;
	int m2;

	close(self->m);
	self->m = -1;
	/* The old clients and accepted sockets are still open. */
	m2 = bus_master(_metadata, &self->bus);
	bus_peer_open(_metadata, &q, m2, &self->bus, false);
	bus_send_plain(_metadata, q.cfd, "new bus");
	bus_expect(_metadata, q.afd, &self->bus, q.addr, "new bus");
	/* The old clients are not on the new bus. */
	expect_eof(_metadata, self->p[0].cfd, true);
	ASSERT_ERRNO(EPIPE, send(self->p[0].cfd, "x", 1, MSG_NOSIGNAL));
	bus_expect_none(_metadata, q.afd);
	bus_peer_close(&q);
	close(m2);
}

TEST_F(bus, connect_after_master_close_econnrefused)
{
	int c = bus_socket(_metadata, 0);

	close(self->m);
	self->m = -1;
	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c, &self->bus));
	close(c);
}

TEST(master_close_fs_path_free_after_unlink)
{
	struct bus_name bus = bus_name_tmp();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);
	int c2 = bus_socket(_metadata, 0);
	int m2 = bus_socket(_metadata, 0);

	close(m);
	expect_eof(_metadata, c, true);
	/* The inode is left, but no bus listens on it. */
	ASSERT_ERRNO(ECONNREFUSED, bus_connect_name(c2, &bus));
	close(c2);
	ASSERT_ERRNO(EADDRINUSE, bus_bind_name(m2, &bus));
	ASSERT_OK(unlink(bus.sa.sbus_path));
	ASSERT_OK(bus_bind_name(m2, &bus));
	ASSERT_OK(listen(m2, 8));
	close(c);
	c = bus_connect(_metadata, &bus);
	close(c);
	close(m2);
	unlink(bus.sa.sbus_path);
}

TEST_HARNESS_MAIN
