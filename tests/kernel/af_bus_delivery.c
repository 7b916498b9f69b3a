// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS delivery guarantees (af_bus.rst, "Order and flow control"):
 *
 * - all-or-none multicast: with one recipient's queue full, a
 *   non-blocking sender gets EAGAIN, a blocking one waits until every
 *   recipient has room, SO_SNDTIMEO and signals end the wait with EAGAIN
 *   and EINTR, and in each failed case no recipient got the message; a
 *   recipient that closes while a sender waits lets the message go to
 *   the others; a waiting sender holds up nobody else's traffic;
 * - total order: several sender processes multicasting (and unicasting)
 *   concurrently, several receivers: every receiver sees the messages
 *   they share in one order, consistent with each sender's own order.
 *
 * The clients' queues are made short with BUS_SET_MAXQLEN so that
 * filling them is quick.
 */
#include "af_bus_test.h"

#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#define NPEERS	4
#define QLEN	4
/* a prefix that only p[1], p[2] and p[3] are in */
#define PREFIX	7

FIXTURE(mc) {
	struct bus_name bus;
	int m;
	struct bus_peer p[NPEERS];
};

FIXTURE_SETUP(mc)
{
	int i, qlen = QLEN;

	for (i = 0; i < NPEERS; i++)
		self->p[i].cfd = self->p[i].afd = -1;
	self->bus = bus_name_abstract();
	self->m = bus_master(_metadata, &self->bus);
	ASSERT_OK(setsockopt(self->m, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	for (i = 0; i < NPEERS; i++) {
		bus_peer_open(_metadata, &self->p[i], self->m, &self->bus,
			      true);
		if (i)
			ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
					       bus_mkaddr(PREFIX, i)));
	}
}

FIXTURE_TEARDOWN(mc)
{
	bus_close_peers(&self->m, self->p, NPEERS);
}

/* Fill p[to]'s queue from the master with messages 0 .. QLEN - 1. */
static void fill(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		 int to)
{
	uint32_t i;

	for (i = 0; i < QLEN; i++)
		ASSERT_EQ(4, send(self->p[to].afd, &i, 4, MSG_DONTWAIT));
	ASSERT_ERRNO(EAGAIN, send(self->p[to].afd, &i, 4, MSG_DONTWAIT));
}

/* Read the next message of fd and check it is the 4-byte value v. */
static void expect_u32(struct __test_metadata *_metadata, int fd, uint32_t v)
{
	uint32_t got;

	ASSERT_EQ(4, recv(fd, &got, sizeof(got), MSG_DONTWAIT))
		TH_LOG("waiting for %#x: %s", v, strerror(errno));
	ASSERT_EQ(v, got);
}

/* p[i] holds exactly the fill() messages first .. QLEN - 1. */
static void drain_fill(struct __test_metadata *_metadata,
		       FIXTURE_DATA(mc) *self, int i, uint32_t first)
{
	for (; first < QLEN; first++)
		expect_u32(_metadata, self->p[i].cfd, first);
	bus_expect_none(_metadata, self->p[i].cfd);
}

/* Start p[0] multicasting val to PREFIX in a thread, blocked. */
static void start_blocked_mcast(struct __test_metadata *_metadata,
				FIXTURE_DATA(mc) *self, struct bus_send_arg *arg,
				struct bus_call *call, uint32_t val)
{
	*arg = (struct bus_send_arg){ self->p[0].cfd, &self->bus,
				  bus_mcast(PREFIX), val };
	*call = (struct bus_call){ .fn = bus_send_call, .arg = arg };
	bus_set_timeouts(_metadata, arg->fd, 10000);
	bus_call_start_blocked(_metadata, call);
}

TEST_F(mc, full_member_nonblocking_eagain_nobody_gets_it)
{
	uint32_t x = 0xabc;

	fill(_metadata, self, 2);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(PREFIX), &x, 4,
					MSG_DONTWAIT));
	drain_fill(_metadata, self, 2, 0);
	bus_expect_quiet(_metadata, self->p, NPEERS);
	/* with room again, everybody in the prefix gets the next one */
	ASSERT_EQ(4, bus_sendto(self->p[0].cfd, &self->bus, bus_mcast(PREFIX),
				&x, 4, MSG_DONTWAIT));
	expect_u32(_metadata, self->p[1].cfd, x);
	expect_u32(_metadata, self->p[2].cfd, x);
	expect_u32(_metadata, self->p[3].cfd, x);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

TEST_F(mc, full_member_o_nonblock_eagain)
{
	uint32_t x = 0xabd;
	int fl = fcntl(self->p[0].cfd, F_GETFL);

	ASSERT_OK(fcntl(self->p[0].cfd, F_SETFL, fl | O_NONBLOCK));
	fill(_metadata, self, 3);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(PREFIX), &x, 4, 0));
	drain_fill(_metadata, self, 3, 0);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

/* The sender waits for every full recipient, not just the first. */
TEST_F(mc, blocking_sender_waits_for_every_recipient)
{
	struct bus_send_arg arg;
	struct bus_call call;
	uint32_t x;

	fill(_metadata, self, 1);
	fill(_metadata, self, 3);
	start_blocked_mcast(_metadata, self, &arg, &call, 0x100);

	expect_u32(_metadata, self->p[1].cfd, 0);
	/* p3 is still full: nobody has it yet, the sender still waits */
	usleep(100000);
	ASSERT_TRUE(bus_task_sleeping(call.tid));
	ASSERT_EQ(-2, call.ret);
	bus_expect_none(_metadata, self->p[2].cfd);

	expect_u32(_metadata, self->p[3].cfd, 0);
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	for (x = 1; x < QLEN; x++) {
		expect_u32(_metadata, self->p[1].cfd, x);
		expect_u32(_metadata, self->p[3].cfd, x);
	}
	expect_u32(_metadata, self->p[1].cfd, 0x100);
	expect_u32(_metadata, self->p[2].cfd, 0x100);
	expect_u32(_metadata, self->p[3].cfd, 0x100);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

TEST_F(mc, sndtimeo_eagain_nobody_gets_it)
{
	uint32_t x = 0x200;
	struct timespec start;

	fill(_metadata, self, 2);
	bus_set_timeouts(_metadata, self->p[0].cfd, 300);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EAGAIN, bus_sendto(self->p[0].cfd, &self->bus,
					bus_mcast(PREFIX), &x, 4, 0));
	ASSERT_LE(250, bus_elapsed_ms(&start));
	drain_fill(_metadata, self, 2, 0);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(mc, signal_eintr_nobody_gets_it)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	uint32_t x = 0x300;

	fill(_metadata, self, 1);
	bus_set_timeouts(_metadata, self->p[0].cfd, 10000);
	ASSERT_OK(sigaction(SIGALRM, &sa, NULL));
	ASSERT_OK(setitimer(ITIMER_REAL, &it, NULL));
	ASSERT_ERRNO(EINTR, bus_sendto(self->p[0].cfd, &self->bus,
				       bus_mcast(PREFIX), &x, 4, 0));
	drain_fill(_metadata, self, 1, 0);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

/* The full recipient goes away: the others get the message. */
TEST_F(mc, full_recipient_closes_sender_goes_on)
{
	struct bus_send_arg arg;
	struct bus_call call;

	fill(_metadata, self, 2);
	start_blocked_mcast(_metadata, self, &arg, &call, 0x400);
	close(self->p[2].cfd);
	self->p[2].cfd = -1;
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	expect_u32(_metadata, self->p[1].cfd, 0x400);
	expect_u32(_metadata, self->p[3].cfd, 0x400);
	/* p2's accepted socket reads end of file now */
	ASSERT_EQ(0, recv(self->p[2].afd, &arg.val, 4, MSG_DONTWAIT));
	bus_peer_close(&self->p[2]);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

/* So does a recipient that shuts down reading. */
TEST_F(mc, full_recipient_shuts_down_sender_goes_on)
{
	struct bus_send_arg arg;
	struct bus_call call;

	fill(_metadata, self, 3);
	start_blocked_mcast(_metadata, self, &arg, &call, 0x500);
	ASSERT_OK(shutdown(self->p[3].cfd, SHUT_RD));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	expect_u32(_metadata, self->p[1].cfd, 0x500);
	expect_u32(_metadata, self->p[2].cfd, 0x500);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* While p0 waits on p2, others talk, p2's sender included. */
TEST_F(mc, waiting_sender_holds_up_nobody_else)
{
	struct bus_send_arg arg;
	struct bus_call call;
	uint32_t x = 0x600;

	fill(_metadata, self, 2);
	start_blocked_mcast(_metadata, self, &arg, &call, 0x601);

	ASSERT_EQ(4, bus_sendto(self->p[1].cfd, &self->bus, self->p[3].addr,
				&x, 4, MSG_DONTWAIT));
	expect_u32(_metadata, self->p[3].cfd, x);
	ASSERT_EQ(4, send(self->p[1].cfd, &x, 4, MSG_DONTWAIT | MSG_NOSIGNAL));
	expect_u32(_metadata, self->p[1].afd, x);
	/* the waiting sender's own queue and its master link work too */
	ASSERT_EQ(4, send(self->p[0].afd, &x, 4, MSG_DONTWAIT));
	expect_u32(_metadata, self->p[0].cfd, x);
	ASSERT_EQ(-2, call.ret);

	for (x = 0; x < QLEN; x++)
		expect_u32(_metadata, self->p[2].cfd, x);
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(4, call.ret) TH_LOG("send: %s", strerror(call.err));
	expect_u32(_metadata, self->p[1].cfd, 0x601);
	expect_u32(_metadata, self->p[2].cfd, 0x601);
	expect_u32(_metadata, self->p[3].cfd, 0x601);
	bus_expect_quiet(_metadata, self->p, NPEERS);
}

/*
 * Total order. Senders are child processes; receivers are threads of the
 * test reading their own sockets. A message is 8 bytes: sender index and
 * sequence number.
 */
#define ORDER_SENDERS	4
#define ORDER_RECEIVERS	4
#define ORDER_COUNT	2000
#define ORDER_TOTAL	(ORDER_SENDERS * ORDER_COUNT)
#define ORDER_PREFIX	9

struct order_msg {
	uint32_t sender;
	uint32_t seq;
};

struct order_rx {
	int fd;
	int expect;		/* how many messages it will get */
	struct order_msg *got;
	int n;
	int err;
};

static void *order_rx_thread(void *p)
{
	struct order_rx *r = p;
	ssize_t len;

	while (r->n < r->expect) {
		len = recv(r->fd, &r->got[r->n], sizeof(r->got[0]), 0);
		if (len != (ssize_t)sizeof(r->got[0])) {
			r->err = len < 0 ? errno : EPROTO;
			break;
		}
		r->n++;
	}
	return NULL;
}

/*
 * Sender s: ORDER_COUNT messages with seq 0, 1, ...; message seq goes to
 * dest(s, seq): a multicast, or a unicast to one receiver.
 */
typedef __u64 (*order_dest_fn)(const __u64 *rx_addr, uint32_t s,
			       uint32_t seq);

static int order_sender(int fd, const struct bus_name *bus,
			const __u64 *rx_addr, uint32_t s, order_dest_fn dest)
{
	struct order_msg msg = { .sender = s };
	struct timeval tv = { .tv_sec = 60 };

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return 1;
	for (msg.seq = 0; msg.seq < ORDER_COUNT; msg.seq++)
		if (bus_sendto(fd, bus, dest(rx_addr, s, msg.seq), &msg,
			       sizeof(msg), 0) != sizeof(msg))
			return 2;
	return 0;
}

static __u64 dest_mcast(const __u64 *rx_addr, uint32_t s, uint32_t seq)
{
	(void)rx_addr;
	(void)s;
	(void)seq;
	return bus_mcast(ORDER_PREFIX);
}

/* Two in three multicast, the rest unicast to receivers in turn. */
static __u64 dest_mixed(const __u64 *rx_addr, uint32_t s, uint32_t seq)
{
	uint32_t h = seq * 2654435761u + s * 40503u;

	if (h % 3)
		return bus_mcast(ORDER_PREFIX);
	return rx_addr[(h / 3) % ORDER_RECEIVERS];
}

/* How many of sender s's messages receiver r gets. */
static int order_expected(const __u64 *rx_addr, int r, order_dest_fn dest)
{
	uint32_t s, seq;
	int n = 0;
	__u64 d;

	for (s = 0; s < ORDER_SENDERS; s++)
		for (seq = 0; seq < ORDER_COUNT; seq++) {
			d = dest(rx_addr, s, seq);
			n += d == bus_mcast(ORDER_PREFIX) || d == rx_addr[r];
		}
	return n;
}

static int order_id(const struct order_msg *m)
{
	return m->sender * ORDER_COUNT + m->seq;
}

/*
 * One total order explains every receiver's sequence and every sender's
 * own order: the union of "a came right before b" over all receivers and
 * all senders has no cycle (Kahn's algorithm consumes every message).
 */
static bool order_acyclic(struct order_rx *rx)
{
	int *indeg = calloc(ORDER_TOTAL, sizeof(int));
	int *queue = malloc(ORDER_TOTAL * sizeof(int));
	int (*next)[ORDER_RECEIVERS + 1] = malloc(ORDER_TOTAL * sizeof(*next));
	int head = 0, tail = 0, done = 0, i, r, k;
	bool ok;

	if (!indeg || !queue || !next)
		abort();
	for (i = 0; i < ORDER_TOTAL; i++)
		for (k = 0; k <= ORDER_RECEIVERS; k++)
			next[i][k] = -1;
	/* edge k of node i: its successor at receiver k, or as sent */
	for (r = 0; r < ORDER_RECEIVERS; r++)
		for (i = 1; i < rx[r].n; i++) {
			next[order_id(&rx[r].got[i - 1])][r] =
				order_id(&rx[r].got[i]);
			indeg[order_id(&rx[r].got[i])]++;
		}
	for (i = 0; i < ORDER_TOTAL; i++)
		if (i % ORDER_COUNT != ORDER_COUNT - 1) {
			next[i][ORDER_RECEIVERS] = i + 1;
			indeg[i + 1]++;
		}
	for (i = 0; i < ORDER_TOTAL; i++)
		if (!indeg[i])
			queue[tail++] = i;
	while (head < tail) {
		i = queue[head++];
		done++;
		for (k = 0; k <= ORDER_RECEIVERS; k++)
			if (next[i][k] >= 0 && !--indeg[next[i][k]])
				queue[tail++] = next[i][k];
	}
	ok = done == ORDER_TOTAL;
	free(indeg);
	free(queue);
	free(next);
	return ok;
}

/* Receivers a and b see the messages both got in the same order. */
static void order_pair_agrees(struct __test_metadata *_metadata,
			      const struct order_rx *a,
			      const struct order_rx *b)
{
	char *in_b = calloc(ORDER_TOTAL, 1), *in_a = calloc(ORDER_TOTAL, 1);
	int i = 0, j = 0, common = 0;

	ASSERT_NE(NULL, in_a);
	ASSERT_NE(NULL, in_b);
	for (i = 0; i < a->n; i++)
		in_a[order_id(&a->got[i])] = 1;
	for (i = 0; i < b->n; i++)
		in_b[order_id(&b->got[i])] = 1;
	i = 0;
	for (;;) {
		while (i < a->n && !in_b[order_id(&a->got[i])])
			i++;
		while (j < b->n && !in_a[order_id(&b->got[j])])
			j++;
		if (i == a->n || j == b->n)
			break;
		ASSERT_EQ(order_id(&a->got[i]), order_id(&b->got[j]))
			TH_LOG("shared message %d differs", common);
		i++;
		j++;
		common++;
	}
	ASSERT_EQ(a->n == i, b->n == j);
	ASSERT_LT(0, common);
	free(in_a);
	free(in_b);
}

static void order_run(struct __test_metadata *_metadata, order_dest_fn dest)
{
	struct bus_name bus = bus_name_abstract();
	struct bus_peer tx[ORDER_SENDERS], rxp[ORDER_RECEIVERS];
	struct order_rx rx[ORDER_RECEIVERS];
	pthread_t th[ORDER_RECEIVERS];
	__u64 rx_addr[ORDER_RECEIVERS];
	pid_t pid[ORDER_SENDERS];
	int m, i, status;

	m = bus_master(_metadata, &bus);
	for (i = 0; i < ORDER_RECEIVERS; i++) {
		bus_peer_open(_metadata, &rxp[i], m, &bus, true);
		ASSERT_OK(bus_addr_opt(rxp[i].afd, BUS_ADD_ADDR,
				       bus_mkaddr(ORDER_PREFIX, i + 1)));
		bus_set_timeouts(_metadata, rxp[i].cfd, 60000);
		rx_addr[i] = rxp[i].addr;
	}
	for (i = 0; i < ORDER_SENDERS; i++)
		bus_peer_open(_metadata, &tx[i], m, &bus, true);

	for (i = 0; i < ORDER_RECEIVERS; i++) {
		rx[i] = (struct order_rx){ .fd = rxp[i].cfd };
		rx[i].expect = order_expected(rx_addr, i, dest);
		rx[i].got = calloc(rx[i].expect, sizeof(rx[i].got[0]));
		ASSERT_NE(NULL, rx[i].got);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, order_rx_thread,
					    &rx[i]));
	}
	for (i = 0; i < ORDER_SENDERS; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i])
			_exit(order_sender(tx[i].cfd, &bus, rx_addr, i, dest));
	}
	for (i = 0; i < ORDER_SENDERS; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		ASSERT_EQ(0, status) TH_LOG("sender %d: status %#x", i, status);
	}
	for (i = 0; i < ORDER_RECEIVERS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		ASSERT_EQ(0, rx[i].err) TH_LOG("receiver %d after %d: %s", i,
					       rx[i].n, strerror(rx[i].err));
		ASSERT_EQ(rx[i].expect, rx[i].n);
		bus_expect_none(_metadata, rxp[i].cfd);
	}
	for (i = 1; i < ORDER_RECEIVERS; i++)
		order_pair_agrees(_metadata, &rx[0], &rx[i]);
	for (i = 2; i < ORDER_RECEIVERS; i++)
		order_pair_agrees(_metadata, &rx[1], &rx[i]);
	order_pair_agrees(_metadata, &rx[2], &rx[3]);
	ASSERT_TRUE(order_acyclic(rx));

	for (i = 0; i < ORDER_RECEIVERS; i++) {
		free(rx[i].got);
		bus_peer_close(&rxp[i]);
	}
	for (i = 0; i < ORDER_SENDERS; i++)
		bus_peer_close(&tx[i]);
	close(m);
}

FIXTURE(order) {
	int unused;
};

FIXTURE_SETUP(order)
{
}

FIXTURE_TEARDOWN(order)
{
}

/* Every receiver gets all 8000 multicasts in the very same sequence. */
TEST_F_TIMEOUT(order, multicast, 240)
{
	order_run(_metadata, dest_mcast);
}

TEST_F_TIMEOUT(order, unicast_and_multicast, 240)
{
	order_run(_metadata, dest_mixed);
}

TEST_HARNESS_MAIN
