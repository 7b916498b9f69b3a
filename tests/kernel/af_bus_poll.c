// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS poll() and epoll: the bits of an idle connection, a queued
 * message, a closed peer, an unconnected socket and a listener with a
 * pending connection; and that a message, a close or a connection wakes
 * a poller or epoll waiter that is already asleep.
 */
#include "af_bus_test.h"

#include <sys/epoll.h>

#define ALL_EVENTS	(POLLIN | POLLRDNORM | POLLPRI | POLLOUT | POLLRDHUP)
#define BAD_BITS	(POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)
#define CLOSED_BITS	(POLLIN | POLLRDHUP | POLLHUP)

/* A bus with two joined clients. */
BUS_PEERS_FIXTURE(bus, 2, 2)

/* fd is connected, writable, with nothing to read. */
static void expect_idle(struct __test_metadata *_metadata, int fd)
{
	short ev = bus_poll(_metadata, fd, ALL_EVENTS, 0);

	ASSERT_EQ(POLLOUT, ev & POLLOUT) TH_LOG("revents %#x", ev);
	ASSERT_EQ(0, ev & (POLLIN | POLLRDNORM | BAD_BITS))
		TH_LOG("revents %#x", ev);
}

static void expect_readable(struct __test_metadata *_metadata, int fd)
{
	short ev = bus_poll(_metadata, fd, ALL_EVENTS, 0);

	ASSERT_EQ(POLLIN | POLLRDNORM, ev & (POLLIN | POLLRDNORM))
		TH_LOG("revents %#x", ev);
	ASSERT_EQ(0, ev & BAD_BITS) TH_LOG("revents %#x", ev);
}

static void expect_peer_closed(struct __test_metadata *_metadata, int fd)
{
	short ev = bus_poll(_metadata, fd, ALL_EVENTS, 0);

	ASSERT_EQ(CLOSED_BITS, ev & CLOSED_BITS) TH_LOG("revents %#x", ev);
}

TEST_F(bus, connected_idle_pollout)
{
	expect_idle(_metadata, self->p[0].cfd);
	expect_idle(_metadata, self->p[0].afd);
}

TEST_F(bus, queued_message_pollin)
{
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "x");
	expect_readable(_metadata, self->p[1].cfd);
	expect_idle(_metadata, self->p[0].cfd);
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "x");
	expect_idle(_metadata, self->p[1].cfd);
}

TEST_F(bus, master_side_pollin)
{
	bus_send_plain(_metadata, self->p[0].cfd, "x");
	expect_readable(_metadata, self->p[0].afd);
	expect_idle(_metadata, self->p[1].afd);
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr, "x");
	expect_idle(_metadata, self->p[0].afd);
}

TEST_F(bus, multicast_pollin_on_each_recipient)
{
	bus_send_str(_metadata, self->p[0].afd, &self->bus, bus_mcast(0), "x");
	expect_readable(_metadata, self->p[0].cfd);
	expect_readable(_metadata, self->p[1].cfd);
	expect_idle(_metadata, self->p[0].afd);
	expect_idle(_metadata, self->p[1].afd);
}

TEST_F(bus, accepted_closed_client_sees_hup)
{
	close(self->p[0].afd);
	self->p[0].afd = -1;
	expect_peer_closed(_metadata, self->p[0].cfd);
	expect_idle(_metadata, self->p[1].cfd);
}

TEST_F(bus, client_closed_accepted_sees_hup)
{
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	expect_peer_closed(_metadata, self->p[0].afd);
	expect_idle(_metadata, self->p[1].afd);
}

TEST(unconnected_pollhup)
{
	int fd = bus_socket(_metadata, 0);
	short ev = bus_poll(_metadata, fd, ALL_EVENTS, 0);

	ASSERT_EQ(POLLHUP, ev & POLLHUP) TH_LOG("revents %#x", ev);
	ASSERT_EQ(0, ev & POLLIN) TH_LOG("revents %#x", ev);
	close(fd);
}

TEST(listener_pending_connection_pollin)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c;

	ASSERT_EQ(0, bus_poll(_metadata, m, POLLIN, 0));
	c = bus_connect(_metadata, &bus);
	ASSERT_EQ(POLLIN, bus_poll(_metadata, m, POLLIN, 0) & (POLLIN | POLLERR));
	close(bus_accept(_metadata, m));
	ASSERT_EQ(0, bus_poll(_metadata, m, POLLIN, 0));
	close(c);
	close(m);
}

struct poll_arg {
	struct pollfd pfd;
};

static long poll_call(void *p)
{
	struct poll_arg *a = p;

	return poll(&a->pfd, 1, 10000);
}

TEST_F(bus, sleeping_poll_woken_by_message)
{
	struct poll_arg arg = { { .fd = self->p[1].cfd, .events = POLLIN } };
	struct bus_call call = { .fn = poll_call, .arg = &arg };

	bus_call_start_blocked(_metadata, &call);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "wake");
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(1, call.ret);
	ASSERT_EQ(POLLIN, arg.pfd.revents & POLLIN);
}

TEST_F(bus, sleeping_poll_woken_by_peer_close)
{
	struct poll_arg arg = { { .fd = self->p[0].afd, .events = POLLRDHUP } };
	struct bus_call call = { .fn = poll_call, .arg = &arg };

	bus_call_start_blocked(_metadata, &call);
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(1, call.ret);
	ASSERT_EQ(POLLRDHUP, arg.pfd.revents & POLLRDHUP);
}

TEST_F(bus, sleeping_poll_woken_by_connect)
{
	struct poll_arg arg = { { .fd = self->m, .events = POLLIN } };
	struct bus_call call = { .fn = poll_call, .arg = &arg };
	int c;

	bus_call_start_blocked(_metadata, &call);
	c = bus_connect(_metadata, &self->bus);
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(1, call.ret);
	ASSERT_EQ(POLLIN, arg.pfd.revents & POLLIN);
	close(c);
}

/* An epoll instance watching fd for events. */
static int epoll_on(struct __test_metadata *_metadata, int fd, __u32 events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };
	int ep = epoll_create1(0);

	ASSERT_LE(0, ep);
	ASSERT_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	return ep;
}

/* epoll_wait for at most ms: the events of the one fd, or 0. */
static __u32 epoll_events(struct __test_metadata *_metadata, int ep, int ms)
{
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, ms);

	ASSERT_LE(0, n) TH_LOG("epoll_wait: %s", strerror(errno));
	return n ? ev.events : 0;
}

TEST_F(bus, epoll_level_triggered)
{
	int ep = epoll_on(_metadata, self->p[1].cfd, EPOLLIN | EPOLLRDHUP);

	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "x");
	ASSERT_EQ((__u32)EPOLLIN, epoll_events(_metadata, ep, BUS_TIMEOUT_MS));
	ASSERT_EQ((__u32)EPOLLIN, epoll_events(_metadata, ep, 0));
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr, "x");
	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	close(ep);
}

TEST_F(bus, epoll_edge_triggered)
{
	int ep = epoll_on(_metadata, self->p[1].cfd, EPOLLIN | EPOLLET);

	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "1");
	ASSERT_EQ((__u32)EPOLLIN, epoll_events(_metadata, ep, BUS_TIMEOUT_MS));
	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	/* A second message is a new edge, read or not. */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "2");
	ASSERT_EQ((__u32)EPOLLIN, epoll_events(_metadata, ep, BUS_TIMEOUT_MS));
	close(ep);
}

TEST_F(bus, epoll_rdhup_on_peer_close)
{
	int ep = epoll_on(_metadata, self->p[0].afd, EPOLLIN | EPOLLRDHUP);
	__u32 ev;

	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	ev = epoll_events(_metadata, ep, BUS_TIMEOUT_MS);
	ASSERT_EQ((__u32)(EPOLLIN | EPOLLRDHUP | EPOLLHUP),
		  ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
		TH_LOG("events %#x", ev);
	close(ep);
}

TEST_F(bus, epoll_listener)
{
	int ep = epoll_on(_metadata, self->m, EPOLLIN);
	int c;

	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	c = bus_connect(_metadata, &self->bus);
	ASSERT_EQ((__u32)EPOLLIN, epoll_events(_metadata, ep, BUS_TIMEOUT_MS));
	close(bus_accept(_metadata, self->m));
	ASSERT_EQ(0U, epoll_events(_metadata, ep, 0));
	close(c);
	close(ep);
}

struct epoll_arg {
	int ep;
	struct epoll_event ev;
};

static long epoll_call(void *p)
{
	struct epoll_arg *a = p;

	return epoll_wait(a->ep, &a->ev, 1, 10000);
}

TEST_F(bus, sleeping_epoll_woken_by_multicast)
{
	struct epoll_arg arg = {
		.ep = epoll_on(_metadata, self->p[1].cfd, EPOLLIN),
	};
	struct bus_call call = { .fn = epoll_call, .arg = &arg };

	bus_call_start_blocked(_metadata, &call);
	bus_send_str(_metadata, self->p[0].afd, &self->bus, bus_mcast(0), "m");
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(1, call.ret);
	ASSERT_EQ((__u32)EPOLLIN, arg.ev.events);
	close(arg.ep);
}

/* Give p[1] a queue of one message and fill it from the master. */
static void fill_p1(struct __test_metadata *_metadata,
		    FIXTURE_DATA(bus) *self)
{
	int qlen = 1;

	ASSERT_OK(setsockopt(self->p[1].afd, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	bus_send_plain(_metadata, self->p[1].afd, "full");
}

/* After EAGAIN for a full recipient, no POLLOUT until it reads. */
TEST_F(bus, full_recipient_eagain_clears_pollout)
{
	char buf[8];

	fill_p1(_metadata, self);
	expect_idle(_metadata, self->p[0].cfd);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, "x", 1,
					MSG_DONTWAIT));
	ASSERT_EQ(0, bus_poll(_metadata, self->p[0].cfd, POLLOUT, 0) &
		     POLLOUT);
	/* other sockets of the bus are not affected */
	ASSERT_EQ(POLLOUT, bus_poll(_metadata, self->p[1].cfd, POLLOUT, 0) &
			   POLLOUT);
	ASSERT_EQ(4, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	expect_idle(_metadata, self->p[0].cfd);
	ASSERT_EQ(1, bus_sendto(self->p[0].cfd, &self->bus, self->p[1].addr,
				"x", 1, MSG_DONTWAIT));
	/* full again, but the send went out: POLLOUT stays */
	expect_idle(_metadata, self->p[0].cfd);
}

static long poll_out_call(void *arg)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLOUT };

	return poll(&pfd, 1, 10000) == 1 ? pfd.revents : -1;
}

TEST_F(bus, sleeping_poll_woken_when_full_recipient_reads)
{
	int fd = self->p[0].cfd;
	struct bus_call call = { .fn = poll_out_call, .arg = &fd };
	char buf[8];

	fill_p1(_metadata, self);
	ASSERT_ERRNO(EAGAIN, bus_sendto(fd, &self->bus, self->p[1].addr, "x",
					1, MSG_DONTWAIT));
	bus_call_start_blocked(_metadata, &call);
	ASSERT_EQ(4, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(POLLOUT, call.ret & (POLLOUT | BAD_BITS));
}

TEST_F(bus, epoll_pollout_after_full_recipient_reads)
{
	struct epoll_event ev = { .events = EPOLLOUT };
	int ep = epoll_create1(0);
	char buf[8];

	ASSERT_LE(0, ep);
	ASSERT_OK(epoll_ctl(ep, EPOLL_CTL_ADD, self->p[0].cfd, &ev));
	fill_p1(_metadata, self);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, "x", 1,
					MSG_DONTWAIT));
	ASSERT_EQ(0, epoll_wait(ep, &ev, 1, 50));
	ASSERT_EQ(4, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, BUS_TIMEOUT_MS));
	ASSERT_EQ(EPOLLOUT, ev.events & EPOLLOUT);
	close(ep);
}

/*
 * libdbus asks for EPOLLOUT only while it has something to write: a
 * socket added for EPOLLIN alone, changed to EPOLLOUT too after a send
 * found a recipient full, is woken when that recipient reads.  (epoll
 * registers its wait queue entries when a socket is added, not when its
 * events change: poll must put every poller on the bus' queue.)
 */
TEST_F(bus, epoll_pollout_asked_later_woken_when_full_recipient_reads)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);
	char buf[8];

	ASSERT_LE(0, ep);
	ASSERT_OK(epoll_ctl(ep, EPOLL_CTL_ADD, self->p[0].cfd, &ev));
	fill_p1(_metadata, self);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					self->p[1].addr, "x", 1,
					MSG_DONTWAIT));
	ev.events = EPOLLIN | EPOLLOUT;
	ASSERT_OK(epoll_ctl(ep, EPOLL_CTL_MOD, self->p[0].cfd, &ev));
	ASSERT_EQ(0, epoll_wait(ep, &ev, 1, 50));
	ASSERT_EQ(4, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, BUS_TIMEOUT_MS));
	ASSERT_EQ(EPOLLOUT, ev.events & (EPOLLOUT | EPOLLIN));
	close(ep);
}

/* A poller that asks for POLLIN only is still woken by a message. */
TEST_F(bus, sleeping_pollin_only_woken_by_message)
{
	int fd = self->p[0].cfd;
	struct poll_arg arg = { { .fd = fd, .events = POLLIN } };
	struct bus_call call = { .fn = poll_call, .arg = &arg };
	char buf[8];

	fill_p1(_metadata, self);
	ASSERT_ERRNO(EAGAIN, bus_sendto(fd, &self->bus, self->p[1].addr, "x",
					1, MSG_DONTWAIT));
	bus_call_start_blocked(_metadata, &call);
	/* room on the bus: not what it waits for, it does not return */
	ASSERT_EQ(4, recv(self->p[1].cfd, buf, sizeof(buf), 0));
	usleep(20000);
	ASSERT_EQ(-2, __atomic_load_n(&call.ret, __ATOMIC_RELAXED));
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		    "in");
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(1, call.ret);
	ASSERT_EQ(POLLIN, arg.pfd.revents & (POLLIN | BAD_BITS));
}

TEST_HARNESS_MAIN
