// SPDX-License-Identifier: GPL-2.0
/*
 * Flow control per recipient, end to end (af_bus.rst, "Order and flow
 * control"): a sender with BUS_ROOM_NOTIFY set learns, for each
 * destination a non-blocking send failed for with EAGAIN because a
 * recipient had no room, when that recipient may have room again: a
 * notification on its error queue (POLLERR, recvmsg(MSG_ERRQUEUE) gives
 * the struct bus_addr of the destination), one per destination, with no
 * timer.  POLLOUT then means only that its own send buffer and budget
 * have room, so recipients that do not read hold up nothing else.  And
 * a recipient's buffer is shared fairly between its senders: one caller
 * that keeps a service's queue full does not starve the others.
 */
#include "af_bus_test.h"

#ifndef BUS_ROOM_NOTIFY
#define BUS_ROOM_NOTIFY	12
#endif

#define SMALL		64	/* bytes of the test messages */
#define NONREADERS	100	/* callers that never read their answers */
#define READERS		10	/* callers that do */
#define ROUNDS		1000	/* answers each reader gets */
#define FILL_MAX	100000U

/* s = p[0] sends, x = p[1] never reads, r = p[2] reads */
BUS_PEERS_FIXTURE(room, 3, 3)
/* the service p[0], NONREADERS + READERS callers */
BUS_PEERS_FIXTURE(svc, 1 + NONREADERS + READERS, 1 + NONREADERS + READERS)
/* a service p[0] and two callers p[1], p[2] that send to it */
BUS_PEERS_FIXTURE(fair, 3, 3)

static int set_int(int fd, int opt, int val)
{
	return setsockopt(fd, SOL_BUS, opt, &val, sizeof(val));
}

/* A SMALL message tagged seq from fd to `to` on bus, without waiting. */
static ssize_t send_seq(int fd, const struct bus_name *bus, __u64 to,
			__u32 seq)
{
	char b[SMALL];

	memset(b, 0x5a, sizeof(b));
	memcpy(b, &seq, sizeof(seq));
	return bus_sendto(fd, bus, to, b, sizeof(b), MSG_DONTWAIT);
}

/* Send until EAGAIN; return how many went. */
static unsigned int fill(struct __test_metadata *_metadata, int fd,
			 const struct bus_name *bus, __u64 to)
{
	unsigned int i;

	errno = 0;
	for (i = 0; i < FILL_MAX; i++)
		if (send_seq(fd, bus, to, i) != SMALL)
			break;
	ASSERT_EQ(EAGAIN, errno) TH_LOG("send %u: %s", i, strerror(errno));
	return i;
}

/* Read one message off fd; its seq. */
static __u32 recv_seq(struct __test_metadata *_metadata, int fd)
{
	char b[SMALL];
	__u32 seq;

	ASSERT_EQ(SMALL, recv(fd, b, sizeof(b), MSG_DONTWAIT))
		TH_LOG("recv: %s", strerror(errno));
	memcpy(&seq, b, sizeof(seq));
	return seq;
}

/* The next room notification of fd: its destination, or -1 (errno). */
static long long room_next(int fd, struct bus_name *from, int *flags)
{
	struct bus_addr a;
	struct iovec iov = { .iov_base = &a, .iov_len = sizeof(a) };
	struct msghdr msg = {
		.msg_name = &from->sa, .msg_namelen = sizeof(from->sa),
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	ssize_t n;

	n = recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
	if (n < 0)
		return -1;
	from->len = msg.msg_namelen;
	*flags = msg.msg_flags;
	if (n != sizeof(a))
		return -2;
	return (long long)a.s_addr;
}

TEST_F(room, option_is_checked)
{
	int fd = bus_socket(_metadata, BUS_PROTO_NONE);
	char b[8];

	/* only a client or an accepted socket, with 0 or 1 */
	ASSERT_ERRNO(EPERM, set_int(fd, BUS_ROOM_NOTIFY, 1));
	ASSERT_ERRNO(EPERM, set_int(self->m, BUS_ROOM_NOTIFY, 1));
	ASSERT_ERRNO(EINVAL, set_int(self->p[0].cfd, BUS_ROOM_NOTIFY, 2));
	ASSERT_ERRNO(EINVAL, setsockopt(self->p[0].cfd, SOL_BUS,
					BUS_ROOM_NOTIFY, b, 1));
	ASSERT_OK(set_int(self->p[0].cfd, BUS_ROOM_NOTIFY, 1));
	ASSERT_OK(set_int(self->p[0].afd, BUS_ROOM_NOTIFY, 1));
	ASSERT_OK(set_int(self->p[0].cfd, BUS_ROOM_NOTIFY, 0));
	/* nothing to read on the error queue, and it never waits */
	ASSERT_ERRNO(EAGAIN, recv(self->p[0].cfd, b, sizeof(b), MSG_ERRQUEUE));
	ASSERT_ERRNO(ENOTCONN, recv(fd, b, sizeof(b), MSG_ERRQUEUE));
	close(fd);
}

/*
 * s fills x: the send that fails leaves a watch, POLLOUT stays (its own
 * buffer has room), and traffic to r goes on.  x reads one: s gets
 * POLLERR and one notification naming x's address, then can send to x.
 */
TEST_F(room, notification_per_recipient)
{
	int s = self->p[0].cfd, x = self->p[1].cfd, r = self->p[2].cfd;
	__u64 xa = self->p[1].addr, ra = self->p[2].addr;
	struct bus_name from;
	unsigned int fit, i;
	int flags;

	ASSERT_OK(set_int(s, BUS_ROOM_NOTIFY, 1));
	fit = fill(_metadata, s, &self->bus, xa);
	ASSERT_LT(0U, fit);
	ASSERT_EQ(POLLOUT, bus_poll(_metadata, s, POLLIN | POLLOUT, 0))
		TH_LOG("POLLOUT is withheld for one full recipient");
	ASSERT_EQ(-1, room_next(s, &from, &flags));
	ASSERT_EQ(EAGAIN, errno);
	/* another send to x, failing again, makes no second watch */
	ASSERT_ERRNO(EAGAIN, send_seq(s, &self->bus, xa, fit));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(SMALL, send_seq(s, &self->bus, ra, i));
		ASSERT_EQ(i, recv_seq(_metadata, r));
	}
	ASSERT_EQ(POLLOUT, bus_poll(_metadata, s, POLLIN | POLLOUT, 0));

	ASSERT_EQ(0U, recv_seq(_metadata, x));
	ASSERT_EQ(POLLERR, bus_poll(_metadata, s, POLLIN, BUS_TIMEOUT_MS) &
			   POLLERR) TH_LOG("no POLLERR after x read");
	ASSERT_EQ((long long)xa, room_next(s, &from, &flags));
	ASSERT_EQ(MSG_ERRQUEUE, flags & MSG_ERRQUEUE);
	ASSERT_EQ(self->bus.len, from.len);
	ASSERT_EQ(xa, from.sa.sbus_addr.s_addr);
	ASSERT_EQ(0, memcmp(from.sa.sbus_path, self->bus.sa.sbus_path,
			    self->bus.len - BUS_SA_NOPATH));
	/* one notification only, and then none */
	ASSERT_EQ(-1, room_next(s, &from, &flags));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, bus_poll(_metadata, s, POLLIN, 0) & POLLERR);
	ASSERT_EQ(SMALL, send_seq(s, &self->bus, xa, fit));
	/* the messages to x in order */
	for (i = 1; i < fit; i++)
		ASSERT_EQ(i, recv_seq(_metadata, x));
	ASSERT_EQ(fit, recv_seq(_metadata, x));
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Without the option, the old contract: POLLOUT waits for x. */
TEST_F(room, without_option_pollout_waits)
{
	int s = self->p[0].cfd, x = self->p[1].cfd;
	char b[8];

	fill(_metadata, s, &self->bus, self->p[1].addr);
	ASSERT_EQ(0, bus_poll(_metadata, s, POLLOUT, 0) & POLLOUT);
	ASSERT_ERRNO(EAGAIN, recv(s, b, sizeof(b), MSG_ERRQUEUE));
	recv_seq(_metadata, x);
	ASSERT_EQ(POLLOUT, bus_poll(_metadata, s, POLLOUT, BUS_TIMEOUT_MS) &
			   POLLOUT);
}

/* A recipient that leaves tells the watch too; turning the option off
 * drops what was pending.
 */
TEST_F(room, recipient_gone_and_option_off)
{
	int s = self->p[0].cfd, flags;
	__u64 xa = self->p[1].addr, ra = self->p[2].addr;
	struct bus_name from;

	ASSERT_OK(set_int(s, BUS_ROOM_NOTIFY, 1));
	fill(_metadata, s, &self->bus, xa);
	fill(_metadata, s, &self->bus, ra);
	bus_peer_close(&self->p[1]);
	ASSERT_EQ(POLLERR, bus_poll(_metadata, s, POLLIN, BUS_TIMEOUT_MS) &
			   POLLERR);
	ASSERT_EQ((long long)xa, room_next(s, &from, &flags));
	recv_seq(_metadata, self->p[2].cfd);
	ASSERT_EQ(POLLERR, bus_poll(_metadata, s, POLLIN, BUS_TIMEOUT_MS) &
			   POLLERR);
	ASSERT_OK(set_int(s, BUS_ROOM_NOTIFY, 0));
	ASSERT_EQ(0, bus_poll(_metadata, s, POLLIN, 0) & POLLERR);
	ASSERT_EQ(-1, room_next(s, &from, &flags));
}

/*
 * A service with NONREADERS callers that never read its answers keeps
 * answering READERS others at full speed: no send to a reader fails,
 * POLLOUT never goes away, no timer; each non-reader that reads one
 * answer later brings exactly one notification, naming it.
 */
TEST_F_TIMEOUT(svc, hundred_nonreaders, 300)
{
	int s = self->p[0].cfd, flags, i, j;
	unsigned int got[NONREADERS];
	struct bus_name from;
	long long a;

	ASSERT_OK(set_int(s, BUS_ROOM_NOTIFY, 1));
	for (i = 1; i <= NONREADERS; i++) {
		ASSERT_OK(set_int(self->p[i].afd, BUS_SET_MAXQLEN, 16));
		ASSERT_EQ(16U, fill(_metadata, s, &self->bus, self->p[i].addr));
	}
	for (j = 0; j < ROUNDS; j++) {
		for (i = 1 + NONREADERS; i <= NONREADERS + READERS; i++) {
			ASSERT_EQ(SMALL, send_seq(s, &self->bus,
						  self->p[i].addr, j))
				TH_LOG("answer %d to reader %d: %s", j, i,
				       strerror(errno));
		}
		for (i = 1 + NONREADERS; i <= NONREADERS + READERS; i++)
			ASSERT_EQ((__u32)j, recv_seq(_metadata, self->p[i].cfd));
		/* still writable: the full ones hold nothing up */
		ASSERT_EQ(POLLOUT, bus_poll(_metadata, s, POLLOUT | POLLIN, 0));
	}
	memset(got, 0, sizeof(got));
	for (i = 1; i <= NONREADERS; i++)
		recv_seq(_metadata, self->p[i].cfd);
	for (i = 0; i < NONREADERS; i++) {
		a = room_next(s, &from, &flags);
		for (j = 1; j <= NONREADERS; j++)
			if ((long long)self->p[j].addr == a)
				break;
		ASSERT_GE(NONREADERS, j)
			TH_LOG("notification %d: %#llx", i, a);
		got[j - 1]++;
	}
	ASSERT_EQ(-1, room_next(s, &from, &flags));
	for (i = 0; i < NONREADERS; i++) {
		ASSERT_EQ(1U, got[i]) TH_LOG("recipient %d", i + 1);
	}
}

/*
 * Fair share: caller c1 fills the service's queue; caller c2, with
 * nothing queued, finds it full.  From then on the service's room goes
 * to c2 first, and while both have messages queued neither holds more
 * than half of the queue limit.
 */
TEST_F(fair, one_caller_does_not_starve_another)
{
	int svc = self->p[0].cfd, c1 = self->p[1].cfd, c2 = self->p[2].cfd;
	__u64 sa = self->p[0].addr;
	unsigned int fit, n1 = 0, n2 = 0, i;

	ASSERT_OK(set_int(self->p[0].afd, BUS_SET_MAXQLEN, 64));
	fit = fill(_metadata, c1, &self->bus, sa);
	ASSERT_EQ(64U, fit);
	ASSERT_ERRNO(EAGAIN, send_seq(c2, &self->bus, sa, 1000));
	/* one read: the room is c2's, not c1's */
	ASSERT_EQ(0U, recv_seq(_metadata, svc));
	ASSERT_ERRNO(EAGAIN, send_seq(c1, &self->bus, sa, fit));
	ASSERT_EQ(SMALL, send_seq(c2, &self->bus, sa, 1000));
	/* the service reads on; each caller sends whenever it may: c1
	 * holds at most half, c2 gets its half
	 */
	for (i = 0; i < 200; i++) {
		recv_seq(_metadata, svc);
		while (send_seq(c1, &self->bus, sa, 0) == SMALL)
			n1++;
		while (send_seq(c2, &self->bus, sa, 1001) == SMALL)
			n2++;
	}
	ASSERT_LE(60U, n2) TH_LOG("c1 sent %u, c2 %u", n1, n2);
	ASSERT_LE(60U, n1) TH_LOG("c1 sent %u, c2 %u", n1, n2);
}

/*
 * A regression test for the count of a sender's watches (netfilter patch
 * 10: afbus_room_watch() counted a new watch under the bus lock only,
 * while a read of a notification counts one out under room_lock only, so
 * a send and a recvmsg(MSG_ERRQUEUE) on one socket in two threads could
 * lose an update; a lost increment makes the count wrap below zero once
 * the notifications are read, and every send that finds no room then
 * fails with ENOBUFS; a lost decrement leaves one watch fewer for good).
 *
 * s sends, in the main thread, as a service does: to each of RACE_RCPTS
 * recipients that take one message at a time, again only once the
 * notification for it came after a send to it failed, so that nearly
 * every failed send makes a new watch; and, in each pass that sends to
 * one of them, to a multicast address two of them have, whose watch
 * moves between their queues as one or the other is full.  Another
 * thread makes each recipient read a message, then reads s's
 * notifications, and marks the recipients they name ready again.  No send fails otherwise than
 * with EAGAIN, no recipient is left without a notification once
 * everything is read, and then s watches nothing: it can watch exactly
 * BUS_ROOM_WATCH_MAX destinations, and no more.  Whether an update would
 * be lost is up to the scheduler; the test asserts counts, never how
 * long anything took.
 */
#define RACE_RCPTS	4	/* p[1] .. p[RACE_RCPTS] */
#define RACE_PREFIX	7	/* where p[1] and p[2] have an address too */
#define RACE_ARMS	5000	/* failed sends to the recipients, each a new
				 * watch but for a few
				 */
#define RACE_PASSES_MAX	1000000	/* passes of the sender that send, at most */
#define WATCH_MAX	4096	/* BUS_ROOM_WATCH_MAX (af_bus.rst) */
#define UNOWNED		1000	/* client addresses from here on: nobody's */

BUS_PEERS_FIXTURE(race, 1 + RACE_RCPTS, 1 + RACE_RCPTS)

struct room_race {
	int s;				/* the sender */
	int rcpt[RACE_RCPTS];		/* the recipients */
	__u64 dest[RACE_RCPTS + 1];	/* theirs, then the multicast */
	int ready[RACE_RCPTS];		/* s may send to the recipient */
	int stop;
	int started;
	unsigned long notes;		/* notifications read */
	unsigned long reads;		/* messages the recipients read */
	int err;			/* errno of a call that failed */
	long long bad;			/* a notification for another address */
};

/* Read s's notifications; mark the recipients they name ready. */
static int race_notes(struct room_race *r)
{
	struct bus_addr a;
	ssize_t n;
	int i;

	for (;;) {
		n = recv(r->s, &a, sizeof(a), MSG_ERRQUEUE | MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n != sizeof(a))
			return n < 0 ? errno : EPROTO;
		for (i = 0; i <= RACE_RCPTS; i++)
			if (a.s_addr == r->dest[i])
				break;
		if (i > RACE_RCPTS)
			r->bad = (long long)a.s_addr;
		else if (i < RACE_RCPTS)
			__atomic_store_n(&r->ready[i], 1, __ATOMIC_RELEASE);
		r->notes++;
	}
}

static void *race_reader(void *arg)
{
	struct room_race *r = arg;
	char b[SMALL];
	int i, err = 0;
	ssize_t n;

	__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
	while (!err && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		for (i = 0; i < RACE_RCPTS && !err; i++) {
			n = recv(r->rcpt[i], b, sizeof(b), MSG_DONTWAIT);
			if (n == SMALL)
				r->reads++;
			else if (n >= 0 || errno != EAGAIN)
				err = n < 0 ? errno : EPROTO;
		}
		if (!err)
			err = race_notes(r);
	}
	__atomic_store_n(&r->err, err, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(race, watch_count_under_concurrent_reads, 250)
{
	unsigned long sent = 0, arms = 0, full = 0, other = 0;
	int s = self->p[0].cfd, i, j, other_errno = 0;
	struct timespec start;
	struct room_race r;
	pthread_t t;
	bool busy;

	memset(&r, 0, sizeof(r));
	r.s = s;
	ASSERT_OK(set_int(s, BUS_ROOM_NOTIFY, 1));
	for (i = 0; i < RACE_RCPTS; i++) {
		ASSERT_OK(set_int(self->p[i + 1].afd, BUS_SET_MAXQLEN, 1));
		r.rcpt[i] = self->p[i + 1].cfd;
		r.dest[i] = self->p[i + 1].addr;
		r.ready[i] = 1;
	}
	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR,
			       bus_mkaddr(RACE_PREFIX, 1)));
	ASSERT_OK(bus_addr_opt(self->p[2].afd, BUS_ADD_ADDR,
			       bus_mkaddr(RACE_PREFIX, 2)));
	r.dest[RACE_RCPTS] = bus_mcast(RACE_PREFIX);

	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_EQ(0, pthread_create(&t, NULL, race_reader, &r));
	while (!__atomic_load_n(&r.started, __ATOMIC_ACQUIRE))
		sched_yield();
	for (j = 0; arms < RACE_ARMS && j < RACE_PASSES_MAX &&
		    !__atomic_load_n(&r.err, __ATOMIC_RELAXED); j++) {
		busy = false;
		for (i = 0; i <= RACE_RCPTS; i++) {
			/* not ready until its notification, if this fails;
			 * the multicast only along with a recipient
			 */
			if (i < RACE_RCPTS &&
			    !__atomic_exchange_n(&r.ready[i], 0,
						 __ATOMIC_ACQ_REL))
				continue;
			if (i == RACE_RCPTS && !busy)
				break;
			busy = true;
			if (send_seq(s, &self->bus, r.dest[i], j) == SMALL) {
				sent++;
			} else if (errno == EAGAIN) {
				if (i < RACE_RCPTS) {
					arms++;
					continue;
				}
				full++;
			} else {
				other++;
				other_errno = errno;
			}
			if (i < RACE_RCPTS)
				__atomic_store_n(&r.ready[i], 1,
						 __ATOMIC_RELEASE);
		}
		/* a pass is one that sent */
		if (!busy) {
			j--;
			sched_yield();
		}
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(t, NULL));
	TH_LOG("%d passes in %ld ms: %lu sent, %lu failed to a recipient, %lu multicasts failed; %lu read, %lu notifications",
	       j, bus_elapsed_ms(&start), sent, arms, full, r.reads, r.notes);
	ASSERT_EQ(0, r.err) TH_LOG("reader: %s", strerror(r.err));
	ASSERT_EQ(0LL, r.bad) TH_LOG("a notification for %#llx", r.bad);
	ASSERT_EQ(0UL, other)
		TH_LOG("%lu sends failed otherwise than with EAGAIN, the last with %s",
		       other, strerror(other_errno));
	ASSERT_LE((unsigned long)RACE_ARMS, arms);

	/* everything read, and each recipient's room changed, so that a
	 * watch left on its queue fires: each recipient that s found full
	 * last time has its notification, and then no watch is left
	 */
	for (i = 1; i <= RACE_RCPTS; i++) {
		while (bus_poll(_metadata, self->p[i].cfd, POLLIN, 0) & POLLIN)
			recv_seq(_metadata, self->p[i].cfd);
		ASSERT_OK(set_int(self->p[i].afd, BUS_SET_MAXQLEN, 1));
	}
	ASSERT_EQ(0, race_notes(&r));
	ASSERT_EQ(0LL, r.bad) TH_LOG("a notification for %#llx", r.bad);
	for (i = 0; i < RACE_RCPTS; i++) {
		ASSERT_EQ(1, r.ready[i])
			TH_LOG("no notification for recipient %d", i + 1);
	}
	ASSERT_EQ(0, bus_poll(_metadata, s, POLLIN, 0) & POLLERR);

	/* so s can watch exactly WATCH_MAX destinations: its master's
	 * address 0 (its queue filled), then addresses nobody owns, which
	 * take the default route there
	 */
	fill(_metadata, s, &self->bus, 0);
	for (j = 1; j <= WATCH_MAX; j++) {
		other_errno = 0;
		if (send_seq(s, &self->bus, bus_mkaddr(0, UNOWNED + j), 0) >= 0)
			break;
		other_errno = errno;
		if (other_errno != EAGAIN)
			break;
	}
	/* j - 1 addresses nobody owns, and address 0 */
	ASSERT_EQ(WATCH_MAX, j)
		TH_LOG("s could watch %d destinations, then: %s", j,
		       strerror(other_errno));
	ASSERT_EQ(ENOBUFS, other_errno);
	/* a destination watched already needs no other */
	ASSERT_ERRNO(EAGAIN, send_seq(s, &self->bus, bus_mkaddr(0, UNOWNED + 1),
				      0));
	ASSERT_ERRNO(EAGAIN, send_seq(s, &self->bus, 0, 0));
}

TEST_HARNESS_MAIN
