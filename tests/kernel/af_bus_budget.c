// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS memory budget: a copy queued to a recipient is charged to the
 * recipient (its sk_rmem_alloc grows by the copy's truesize), never to
 * the sender, whose sk_wmem_alloc is idle again when sendmsg returns.  A
 * recipient takes a message while its queue holds fewer than max_qlen
 * and the message fits whole in what is left of SO_RCVBUF, or the queue
 * is empty: k messages of truesize t fit, k = min(max_qlen,
 * max(1, floor(rcvbuf / t))).  A client that never reads stalls only the sends
 * addressed to it; eavesdroppers and MCAST_DROP members never stall
 * anyone and count what they miss; POLLOUT and wake-ups are per
 * recipient.  Default buffers unless a test says otherwise.
 */
#include "af_bus_test.h"

#include <grp.h>
#include <linux/sock_diag.h>

#define SMALL	128		/* bytes of most test messages */
#define KIB	1024
#define MANY	10000		/* messages of the long exchanges */
#define BATCH	100		/* sent before the reader catches up */
#define MSG_MAX	32768		/* largest test message */
#define FILL_MAX 100000U	/* fill() fails after that many */
#define PFX	6		/* the multicast prefix of mcast_drop */
#define ROUNDS	1000		/* replies the service sends each caller */
#define CALLERS	8

/* Tags keep messages of different streams apart. */
enum {
	TAG_X = 0x58, TAG_R, TAG_M, TAG_E, TAG_D, TAG_U, TAG_B, TAG_Y,
	TAG_REQ = 0x100, TAG_REP = 0x200,
};

/* s = p[0], x = p[1] (never reads), r = p[2] (reads), all joined */
BUS_PEERS_FIXTURE(budget, 3, 3)
/* the service p[0] and its callers p[1..8] */
BUS_PEERS_FIXTURE(svc, CALLERS + 1, CALLERS + 1)

static int set_int(int fd, int opt, int val)
{
	return setsockopt(fd, SOL_BUS, opt, &val, sizeof(val));
}

/* SO_MEMINFO value idx of fd (SK_MEMINFO_RMEM_ALLOC, ...) */
static unsigned long meminfo(struct __test_metadata *_metadata, int fd, int idx)
{
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len));
	ASSERT_EQ((socklen_t)sizeof(mem), len);
	return mem[idx];
}

#define RMEM(fd)	meminfo(_metadata, fd, SK_MEMINFO_RMEM_ALLOC)
#define WMEM(fd)	meminfo(_metadata, fd, SK_MEMINFO_WMEM_ALLOC)
#define RCVBUF(fd)	meminfo(_metadata, fd, SK_MEMINFO_RCVBUF)
#define DROPS(fd)	meminfo(_metadata, fd, SK_MEMINFO_DROPS)

/* Message seq of stream tag: both in front, then bytes made of both. */
static void msg_make(unsigned char *b, size_t size, __u32 seq, __u32 tag)
{
	size_t i;

	memcpy(b, &seq, sizeof(seq));
	memcpy(b + 4, &tag, sizeof(tag));
	for (i = 8; i < size; i++)
		b[i] = (unsigned char)(seq * 131 + tag * 7 + i);
}

/* Send message seq/tag of size bytes to `to` on bus, or without an
 * address (to the other end of the pair) when bus is NULL.
 */
static ssize_t send_msg(int fd, const struct bus_name *bus, __u64 to,
			size_t size, __u32 seq, __u32 tag, int flags)
{
	unsigned char b[MSG_MAX];

	msg_make(b, size, seq, tag);
	if (!bus)
		return send(fd, b, size, flags | MSG_NOSIGNAL);
	return bus_sendto(fd, bus, to, b, size, flags);
}

/*
 * The next message queued on fd is message seq/tag of size bytes from
 * src; returns its SO_RXQ_OVFL count, or -1 when it carries none.
 */
static int expect_msg(struct __test_metadata *_metadata, int fd,
		      const struct bus_name *bus, __u64 src, size_t size,
		      __u32 seq, __u32 tag)
{
	unsigned char want[MSG_MAX], got[MSG_MAX];
	union {
		char b[CMSG_SPACE(sizeof(__u32))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_bus from;
	struct iovec iov = { .iov_base = got, .iov_len = sizeof(got) };
	struct msghdr msg = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *cm;
	int drops = -1;
	__u32 v[2] = { 0, 0 };
	ssize_t n;

	msg_make(want, size, seq, tag);
	n = recvmsg(fd, &msg, MSG_DONTWAIT);
	if (n >= 8)
		memcpy(v, got, sizeof(v));
	ASSERT_EQ((ssize_t)size, n)
		TH_LOG("message %u/%#x: %zd (%s), got %u/%#x", seq, tag, n,
		       n < 0 ? strerror(errno) : "bytes", v[0], v[1]);
	ASSERT_EQ(0, memcmp(want, got, size))
		TH_LOG("expected message %u/%#x, got %u/%#x", seq, tag, v[0],
		       v[1]);
	ASSERT_EQ(0, msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	ASSERT_EQ(bus->len, msg.msg_namelen);
	ASSERT_EQ(src, from.sbus_addr.s_addr)
		TH_LOG("message %u/%#x came from %#llx", seq, tag,
		       (unsigned long long)from.sbus_addr.s_addr);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SO_RXQ_OVFL) {
			memcpy(&v[0], CMSG_DATA(cm), sizeof(v[0]));
			drops = v[0];
		}
	}
	return drops;
}

/* fd holds exactly messages first .. first + count - 1 of tag from src,
 * without drop counts.
 */
static void drain(struct __test_metadata *_metadata, int fd,
		  const struct bus_name *bus, __u64 src, size_t size,
		  __u32 first, unsigned int count, __u32 tag)
{
	__u32 i;

	for (i = first; i < first + count; i++)
		ASSERT_EQ(-1, expect_msg(_metadata, fd, bus, src, size, i,
					 tag));
	bus_expect_none(_metadata, fd);
}

/*
 * Send messages first, first + 1, ... of size bytes from fd to `to`
 * without waiting until one fails, which must be with EAGAIN; return
 * how many went.
 */
static unsigned int fill(struct __test_metadata *_metadata, int fd,
			 const struct bus_name *bus, __u64 to, size_t size,
			 __u32 first, __u32 tag)
{
	__u32 i;

	errno = 0;
	for (i = first; i - first < FILL_MAX; i++)
		if (send_msg(fd, bus, to, size, i, tag, MSG_DONTWAIT) !=
		    (ssize_t)size)
			break;
	ASSERT_EQ(EAGAIN, errno) TH_LOG("send %u: %s", i, strerror(errno));
	return i - first;
}

/*
 * fd is full of messages of truesize t each, exactly as many as the rule
 * lets in: min(qlen, max(1, floor(rcvbuf / t))), so that its rmem_alloc
 * is at most rcvbuf (unless a single message is larger) and another
 * message would not fit (unless the queue limit stopped it first).
 * Returns how many.
 */
static unsigned long expect_full(struct __test_metadata *_metadata, int fd,
				 unsigned long t, unsigned long qlen)
{
	unsigned long rcvbuf = RCVBUF(fd), rmem = RMEM(fd);
	unsigned long want = rcvbuf / t;

	ASSERT_LT(0UL, t);
	if (!want)
		want = 1;
	if (want > qlen)
		want = qlen;
	ASSERT_EQ(want * t, rmem)
		TH_LOG("rcvbuf %lu, truesize %lu, max_qlen %lu", rcvbuf, t,
		       qlen);
	if (want < qlen)
		ASSERT_LT(rcvbuf, rmem + t);
	if (want > 1)
		ASSERT_GE(rcvbuf, rmem);
	return want;
}

static bool pollout(struct __test_metadata *_metadata, int fd, int ms)
{
	return bus_poll(_metadata, fd, POLLOUT, ms) & POLLOUT;
}

/* Case (a), for the fixture and for uid 65534. */
struct stall {
	int s, x, r;	/* sender, client that never reads, reader */
	__u64 s_addr, x_addr, r_addr;
	int s_afd;	/* s's accepted socket, or -1: the caller checks */
};

static void stall_run(struct __test_metadata *_metadata,
		      const struct bus_name *b, const struct stall *c)
{
	unsigned long wmem0 = WMEM(c->s), t, fit;
	struct timespec start;
	__u32 i, j;

	/* x never reads: s fills it, charging x, not itself */
	ASSERT_EQ(0UL, RMEM(c->x));
	ASSERT_EQ(SMALL, send_msg(c->s, b, c->x_addr, SMALL, 0, TAG_X,
				  MSG_DONTWAIT));
	ASSERT_EQ(wmem0, WMEM(c->s)) TH_LOG("x's copy is charged to s");
	t = RMEM(c->x);
	/* one skb: sk_buff, 128 bytes and skb_shared_info, < 1 KiB */
	ASSERT_LT(0UL, t);
	ASSERT_GE(4096UL, t);
	fit = 1 + fill(_metadata, c->s, b, c->x_addr, SMALL, 1, TAG_X);
	ASSERT_EQ(fit, expect_full(_metadata, c->x, t, BUS_QLEN_MAX));
	ASSERT_GE(RCVBUF(c->x) + 4096, RMEM(c->x));
	ASSERT_EQ(wmem0, WMEM(c->s));
	ASSERT_FALSE(pollout(_metadata, c->s, 0));

	/* s's traffic to r goes out at once, every message, in order */
	for (i = 0; i < MANY; i += BATCH) {
		for (j = i; j < i + BATCH; j++)
			ASSERT_EQ(SMALL, send_msg(c->s, b, c->r_addr, SMALL,
						  j, TAG_R, MSG_DONTWAIT))
				TH_LOG("message %u to r: %s", j,
				       strerror(errno));
		for (j = i; j < i + BATCH; j++)
			ASSERT_EQ(-1, expect_msg(_metadata, c->r, b,
						 c->s_addr, SMALL, j, TAG_R));
	}
	bus_expect_none(_metadata, c->r);
	ASSERT_TRUE(pollout(_metadata, c->s, 0));
	ASSERT_EQ(wmem0, WMEM(c->s));

	/* x is still full; a blocking send to r right after does not wait */
	ASSERT_ERRNO(EAGAIN, send_msg(c->s, b, c->x_addr, SMALL, fit,
				      TAG_X, MSG_DONTWAIT));
	ASSERT_FALSE(pollout(_metadata, c->s, 0));
	bus_set_timeouts(_metadata, c->s, 2000);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_EQ(SMALL, send_msg(c->s, b, c->r_addr, SMALL, MANY, TAG_R,
				  0)) TH_LOG("send: %s", strerror(errno));
	ASSERT_GT(500, bus_elapsed_ms(&start));
	ASSERT_TRUE(pollout(_metadata, c->s, 0));
	ASSERT_EQ(-1, expect_msg(_metadata, c->r, b, c->s_addr, SMALL, MANY,
				 TAG_R));

	/* and s reaches the master */
	ASSERT_EQ(SMALL, send_msg(c->s, NULL, 0, SMALL, 0, TAG_M,
				  MSG_DONTWAIT));
	if (c->s_afd >= 0) {
		ASSERT_EQ(-1, expect_msg(_metadata, c->s_afd, b, c->s_addr,
					 SMALL, 0, TAG_M));
		bus_expect_none(_metadata, c->s_afd);
	}
	ASSERT_EQ(wmem0, WMEM(c->s));

	/* x got its first fit messages and nothing else; reading frees them */
	ASSERT_EQ(fit * t, RMEM(c->x));
	drain(_metadata, c->x, b, c->s_addr, SMALL, 0, fit, TAG_X);
	ASSERT_EQ(0UL, RMEM(c->x));
	bus_expect_none(_metadata, c->r);
}

TEST_F_TIMEOUT(budget, non_reader_does_not_stall_sender, 120)
{
	struct stall c = {
		self->p[0].cfd, self->p[1].cfd, self->p[2].cfd,
		self->p[0].addr, self->p[1].addr, self->p[2].addr,
		self->p[0].afd,
	};

	stall_run(_metadata, &self->bus, &c);
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * A service answers CALLERS callers, ROUNDS requests each; caller 0
 * never reads its replies.  Until its queue is full they go in, then
 * every one fails with EAGAIN, while every other caller's reply goes out
 * at once and arrives in order.
 */
TEST_F_TIMEOUT(svc, service_keeps_answering, 120)
{
	const struct bus_name *b = &self->bus;
	int sv = self->p[0].cfd, full_at = -1, k;
	unsigned long wmem0 = WMEM(sv), t = 0;
	__u64 sva = self->p[0].addr;
	ssize_t n;
	__u32 i;

	for (i = 0; i < ROUNDS; i++) {
		for (k = 0; k < CALLERS; k++)
			ASSERT_EQ(SMALL, send_msg(self->p[k + 1].cfd, b, sva,
						  SMALL, i, TAG_REQ + k,
						  MSG_DONTWAIT))
				TH_LOG("request %u of caller %d: %s", i, k,
				       strerror(errno));
		/* each request, from its caller, answered in turn */
		for (k = 0; k < CALLERS; k++) {
			ASSERT_EQ(-1, expect_msg(_metadata, sv, b,
						 self->p[k + 1].addr, SMALL, i,
						 TAG_REQ + k));
			n = send_msg(sv, b, self->p[k + 1].addr, SMALL, i,
				     TAG_REP + k, MSG_DONTWAIT);
			if (k || (full_at < 0 && n == SMALL)) {
				ASSERT_EQ(SMALL, n)
					TH_LOG("reply %u to caller %d: %s", i,
					       k, strerror(errno));
				continue;
			}
			ASSERT_EQ(-1, n);
			ASSERT_EQ(EAGAIN, errno) TH_LOG("%s", strerror(errno));
			if (full_at < 0)
				full_at = i;
		}
		if (!i)
			t = RMEM(self->p[1].cfd);
		/* the EAGAIN left no trace: the later sends went out */
		ASSERT_TRUE(pollout(_metadata, sv, 0));
		for (k = 1; k < CALLERS; k++)
			ASSERT_EQ(-1, expect_msg(_metadata, self->p[k + 1].cfd,
						 b, sva, SMALL, i,
						 TAG_REP + k));
	}
	ASSERT_LE(0, full_at) TH_LOG("caller 0 never got full");
	ASSERT_EQ((unsigned long)full_at,
		  expect_full(_metadata, self->p[1].cfd, t, BUS_QLEN_MAX));
	ASSERT_EQ(wmem0, WMEM(sv));
	drain(_metadata, self->p[1].cfd, b, sva, SMALL, 0, full_at, TAG_REP);
	bus_expect_quiet(_metadata, self->p, CALLERS + 1);
}

/*
 * An eavesdropper p0 that never reads while p1 and p2 exchange MANY
 * unicasts: no send waits, it keeps the first ones that fit and counts
 * every other as a drop.
 */
TEST_F_TIMEOUT(budget, eavesdropper_never_holds_sender, 120)
{
	const struct bus_name *b = &self->bus;
	int e = self->p[0].cfd, one = 1, f;
	int side[2] = { self->p[1].cfd, self->p[2].cfd };
	__u64 addr[2] = { self->p[1].addr, self->p[2].addr };
	unsigned long w0 = WMEM(side[0]), w1 = WMEM(side[1]), t = 0, kept;
	__u32 i;

	ASSERT_OK(setsockopt(self->p[0].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	ASSERT_OK(setsockopt(e, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)));
	for (i = 0; i < MANY; i++) {
		f = i & 1;
		ASSERT_EQ(SMALL, send_msg(side[f], b, addr[!f], SMALL, i,
					  TAG_E, MSG_DONTWAIT))
			TH_LOG("message %u: %s", i, strerror(errno));
		ASSERT_EQ(-1, expect_msg(_metadata, side[!f], b, addr[f],
					 SMALL, i, TAG_E));
		if (!i)
			t = RMEM(e);
	}
	ASSERT_EQ(w0, WMEM(side[0])) TH_LOG("the copies are charged to e");
	ASSERT_EQ(w1, WMEM(side[1]));
	kept = expect_full(_metadata, e, t, BUS_QLEN_MAX);
	ASSERT_GT((unsigned long)MANY, kept);
	ASSERT_EQ(MANY - kept, DROPS(e));
	/* what fit: the first ones, in bus order */
	for (i = 0; i < kept; i++)
		ASSERT_EQ(-1, expect_msg(_metadata, e, b, addr[i & 1], SMALL,
					 i, TAG_E));
	bus_expect_none(_metadata, e);
	ASSERT_EQ(0UL, RMEM(e));
	/* the next copy it gets carries the count of all it missed */
	ASSERT_EQ(SMALL, send_msg(side[0], b, addr[1], SMALL, MANY, TAG_E,
				  MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, side[1], b, addr[0], SMALL,
				 MANY, TAG_E));
	ASSERT_EQ((int)(MANY - kept),
		  expect_msg(_metadata, e, b, addr[0], SMALL, MANY, TAG_E));
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * p2, with BUS_SET_MCAST_DROP, never reads; p0 multicasts MANY messages
 * to PFX, which p1 reads.  No multicast waits; p2 misses all but the
 * first that fit, counted; unicasts to p2 still wait for it.
 */
TEST_F_TIMEOUT(budget, mcast_drop_subscriber_never_holds_sender, 120)
{
	const struct bus_name *b = &self->bus;
	int s = self->p[0].cfd, rd = self->p[1].cfd, nr = self->p[2].cfd;
	unsigned long wmem0 = WMEM(s), t = 0, kept;
	__u64 src = self->p[0].addr;
	struct timespec start;
	int one = 1;
	__u32 i;

	ASSERT_OK(bus_addr_opt(self->p[1].afd, BUS_ADD_ADDR,
			       bus_mkaddr(PFX, 1)));
	ASSERT_OK(bus_addr_opt(self->p[2].afd, BUS_ADD_ADDR,
			       bus_mkaddr(PFX, 2)));
	ASSERT_OK(set_int(self->p[2].afd, BUS_SET_MCAST_DROP, 1));
	ASSERT_OK(setsockopt(nr, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)));
	for (i = 0; i < MANY; i++) {
		ASSERT_EQ(SMALL, send_msg(s, b, bus_mcast(PFX), SMALL, i,
					  TAG_D, MSG_DONTWAIT))
			TH_LOG("multicast %u: %s", i, strerror(errno));
		ASSERT_EQ(-1, expect_msg(_metadata, rd, b, src, SMALL, i,
					 TAG_D));
		if (!i)
			t = RMEM(nr);
	}
	ASSERT_EQ(wmem0, WMEM(s));
	kept = expect_full(_metadata, nr, t, BUS_QLEN_MAX);
	ASSERT_GT((unsigned long)MANY, kept);
	ASSERT_EQ(MANY - kept, DROPS(nr));

	/* a unicast to it fails at once, or after SO_SNDTIMEO */
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, self->p[2].addr, SMALL, 0,
				      TAG_U, MSG_DONTWAIT));
	bus_set_timeouts(_metadata, s, 300);
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, self->p[2].addr, SMALL, 0,
				      TAG_U, 0));
	ASSERT_LE(250, bus_elapsed_ms(&start));
	ASSERT_FALSE(pollout(_metadata, s, 0));
	/* multicasts still go, and bring POLLOUT back */
	ASSERT_EQ(SMALL, send_msg(s, b, bus_mcast(PFX), SMALL, MANY, TAG_D,
				  MSG_DONTWAIT));
	ASSERT_TRUE(pollout(_metadata, s, 0));
	ASSERT_EQ(-1, expect_msg(_metadata, rd, b, src, SMALL, MANY, TAG_D));
	ASSERT_EQ(MANY + 1 - kept, DROPS(nr));

	/* p2 holds the first kept multicasts, no unicast */
	drain(_metadata, nr, b, src, SMALL, 0, kept, TAG_D);
	ASSERT_EQ(0UL, RMEM(nr));
	ASSERT_EQ(SMALL, send_msg(s, b, bus_mcast(PFX), SMALL, MANY + 1,
				  TAG_D, MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, rd, b, src, SMALL, MANY + 1,
				 TAG_D));
	ASSERT_EQ((int)(MANY + 1 - kept),
		  expect_msg(_metadata, nr, b, src, SMALL, MANY + 1, TAG_D));
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * With a queue limit out of reach, SO_RCVBUF alone bounds the queue.
 * Rule: a message goes in when it fits whole, so with k queued of
 * truesize t, k * t <= rcvbuf < (k + 1) * t; reading one lets exactly
 * one more in.
 */
TEST_F(budget, rcvbuf_bounds_queue)
{
	const struct bus_name *b = &self->bus;
	int s = self->p[0].cfd, x = self->p[1].cfd, small = 4096;
	unsigned long wmem0 = WMEM(s), rcvbuf, t, fit;
	__u64 src = self->p[0].addr, xa = self->p[1].addr;
	size_t big;

	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_MAXQLEN, 1 << 20));
	ASSERT_OK(setsockopt(x, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
	rcvbuf = RCVBUF(x);
	/* doubled, and above SOCK_MIN_RCVBUF */
	ASSERT_EQ(8192UL, rcvbuf);
	ASSERT_EQ(KIB, send_msg(s, b, xa, KIB, 0, TAG_X, MSG_DONTWAIT));
	t = RMEM(x);
	fit = 1 + fill(_metadata, s, b, xa, KIB, 1, TAG_X);
	ASSERT_EQ(fit, expect_full(_metadata, x, t, 1 << 20));
	ASSERT_GE(rcvbuf, RMEM(x));
	ASSERT_LT(rcvbuf, RMEM(x) + t);
	ASSERT_EQ(wmem0, WMEM(s));

	/* a multicast that does not fit in x, a member, waits for it:
	 * nobody gets it
	 */
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, bus_mcast(0), KIB, 0, TAG_M,
				      MSG_DONTWAIT));
	bus_expect_none(_metadata, s);
	bus_expect_none(_metadata, self->p[2].cfd);

	/* one read, exactly one more */
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, KIB, 0, TAG_X));
	ASSERT_EQ((fit - 1) * t, RMEM(x));
	ASSERT_EQ(1U, fill(_metadata, s, b, xa, KIB, fit, TAG_X));
	ASSERT_EQ(fit * t, RMEM(x));
	drain(_metadata, x, b, src, KIB, 1, fit, TAG_X);
	ASSERT_EQ(0UL, RMEM(x));

	/* a message larger than rcvbuf goes into an empty queue ... */
	big = 2 * rcvbuf;
	ASSERT_GT((size_t)MSG_MAX, big);
	ASSERT_EQ((ssize_t)big, send_msg(s, b, xa, big, 0, TAG_B,
					 MSG_DONTWAIT));
	ASSERT_LE(rcvbuf, RMEM(x));
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, xa, 8, 0, TAG_Y, MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, big, 0, TAG_B));
	ASSERT_EQ(0UL, RMEM(x));
	/* ... but not into one where it does not fit whole */
	ASSERT_EQ(KIB, send_msg(s, b, xa, KIB, 0, TAG_Y, MSG_DONTWAIT));
	ASSERT_GT(rcvbuf, RMEM(x));
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, xa, big, 1, TAG_B, MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, KIB, 0, TAG_Y));
	ASSERT_EQ((ssize_t)big, send_msg(s, b, xa, big, 1, TAG_B,
					 MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, big, 1, TAG_B));
	ASSERT_EQ(0UL, RMEM(x));
	ASSERT_EQ(wmem0, WMEM(s));
	bus_expect_quiet(_metadata, self->p, 3);
}

static long poll_out_call(void *arg)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLOUT };

	return poll(&pfd, 1, 10000) == 1 ? pfd.revents : -1;
}

/* POLLOUT is withheld after EAGAIN for full x until x reads. */
TEST_F(budget, poll_pollout_per_recipient)
{
	const struct bus_name *b = &self->bus;
	int s = self->p[0].cfd, x = self->p[1].cfd, r = self->p[2].cfd;
	struct bus_call call = { .fn = poll_out_call, .arg = &s };
	__u64 src = self->p[0].addr, xa = self->p[1].addr;
	__u64 ra = self->p[2].addr;
	struct timespec start;
	unsigned int fit;

	ASSERT_EQ(SMALL, send_msg(s, b, ra, SMALL, 0, TAG_R, MSG_DONTWAIT));
	fit = fill(_metadata, s, b, xa, SMALL, 0, TAG_X);
	ASSERT_LT(0U, fit);
	ASSERT_FALSE(pollout(_metadata, s, 0));
	/* a read at another recipient is no room at x */
	ASSERT_EQ(-1, expect_msg(_metadata, r, b, src, SMALL, 0, TAG_R));
	ASSERT_FALSE(pollout(_metadata, s, 0));
	/* a send to r goes out, and POLLOUT is back */
	ASSERT_EQ(SMALL, send_msg(s, b, ra, SMALL, 1, TAG_R, MSG_DONTWAIT));
	ASSERT_TRUE(pollout(_metadata, s, 0));
	ASSERT_EQ(-1, expect_msg(_metadata, r, b, src, SMALL, 1, TAG_R));
	/* x is still full */
	ASSERT_ERRNO(EAGAIN, send_msg(s, b, xa, SMALL, fit, TAG_X,
				      MSG_DONTWAIT));
	ASSERT_FALSE(pollout(_metadata, s, 0));

	/* a poller sleeps through r reading, and wakes when x reads */
	ASSERT_EQ(SMALL, send_msg(self->p[2].afd, NULL, 0, SMALL, 2, TAG_R,
				  MSG_DONTWAIT));
	bus_call_start_blocked(_metadata, &call);
	ASSERT_EQ(-1, expect_msg(_metadata, r, b, BUS_MASTER_ADDR, SMALL, 2,
				 TAG_R));
	usleep(50000);
	ASSERT_EQ(-2, __atomic_load_n(&call.ret, __ATOMIC_RELAXED))
		TH_LOG("POLLOUT after a read at another socket");
	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, SMALL, 0, TAG_X));
	bus_call_finish(_metadata, &call);
	ASSERT_GT(BUS_TIMEOUT_MS, bus_elapsed_ms(&start));
	ASSERT_EQ(POLLOUT, call.ret & (POLLOUT | POLLERR | POLLHUP));

	/* exactly one more fits; full again, POLLOUT gone until x reads */
	ASSERT_EQ(1U, fill(_metadata, s, b, xa, SMALL, fit, TAG_X));
	ASSERT_FALSE(pollout(_metadata, s, 0));
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, SMALL, 1, TAG_X));
	ASSERT_TRUE(pollout(_metadata, s, BUS_TIMEOUT_MS));
	drain(_metadata, x, b, src, SMALL, 2, fit - 1, TAG_X);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* voluntary_ctxt_switches of thread tid of this process, or -1 */
static long task_vcsw(pid_t tid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

struct send_arg {
	int fd;
	const struct bus_name *bus;
	__u64 to;
	__u32 seq;
};

static long send_call(void *p)
{
	struct send_arg *a = p;

	return send_msg(a->fd, a->bus, a->to, SMALL, a->seq, TAG_X, 0);
}

/*
 * A sender waiting for full x is not woken by a read at r (its thread
 * does not even run: no voluntary context switch), and a read at x
 * lets its message in at once, after those already queued.
 */
TEST_F(budget, blocked_sender_woken_by_its_recipient_only)
{
	const struct bus_name *b = &self->bus;
	int s = self->p[0].cfd, x = self->p[1].cfd, r = self->p[2].cfd;
	struct send_arg arg;
	struct bus_call call = { .fn = send_call, .arg = &arg };
	__u64 src = self->p[0].addr;
	struct timespec start;
	unsigned int fit;
	long vcsw;

	fit = fill(_metadata, s, b, self->p[1].addr, SMALL, 0, TAG_X);
	ASSERT_LT(0U, fit);
	ASSERT_EQ(SMALL, send_msg(self->p[2].afd, NULL, 0, SMALL, 0, TAG_R,
				  MSG_DONTWAIT));
	ASSERT_EQ(SMALL, send_msg(self->p[2].afd, NULL, 0, SMALL, 1, TAG_R,
				  MSG_DONTWAIT));
	arg = (struct send_arg){ s, b, self->p[1].addr, fit };
	bus_set_timeouts(_metadata, s, 10000);
	bus_call_start_blocked(_metadata, &call);
	vcsw = task_vcsw(call.tid);
	ASSERT_LE(0, vcsw);

	ASSERT_EQ(-1, expect_msg(_metadata, r, b, BUS_MASTER_ADDR, SMALL, 0,
				 TAG_R));
	usleep(100000);
	ASSERT_EQ(-2, __atomic_load_n(&call.ret, __ATOMIC_RELAXED));
	ASSERT_TRUE(bus_task_sleeping(call.tid));
	ASSERT_EQ(vcsw, task_vcsw(call.tid))
		TH_LOG("a read at r woke the sender waiting for x");
	/* other senders' traffic goes on meanwhile */
	ASSERT_EQ(SMALL, send_msg(self->p[2].afd, NULL, 0, SMALL, 2, TAG_R,
				  MSG_DONTWAIT));
	ASSERT_EQ(-1, expect_msg(_metadata, r, b, BUS_MASTER_ADDR, SMALL, 1,
				 TAG_R));
	ASSERT_EQ(-1, expect_msg(_metadata, r, b, BUS_MASTER_ADDR, SMALL, 2,
				 TAG_R));
	ASSERT_EQ(-2, __atomic_load_n(&call.ret, __ATOMIC_RELAXED));

	clock_gettime(CLOCK_MONOTONIC, &start);
	ASSERT_EQ(-1, expect_msg(_metadata, x, b, src, SMALL, 0, TAG_X));
	bus_call_finish(_metadata, &call);
	ASSERT_GT(BUS_TIMEOUT_MS, bus_elapsed_ms(&start));
	ASSERT_EQ(SMALL, call.ret) TH_LOG("send: %s", strerror(call.err));
	/* 1 .. fit - 1, then the waiting sender's fit */
	drain(_metadata, x, b, src, SMALL, 1, fit, TAG_X);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* A root master; the clients come from a process of uid 65534. */
FIXTURE(nobody) {
	struct bus_name bus;
	int m;
	struct bus_peer p[3];
};

FIXTURE_SETUP(nobody)
{
	int i;

	for (i = 0; i < 3; i++) {
		self->p[i].cfd = -1;
		self->p[i].afd = -1;
	}
	self->bus = bus_name_abstract();
	self->m = bus_master(_metadata, &self->bus);
}

FIXTURE_TEARDOWN(nobody)
{
	bus_close_peers(&self->m, self->p, 3);
}

/* Wait (boundedly) for one byte on fd. */
static void wait_byte(struct __test_metadata *_metadata, int fd)
{
	char b;

	ASSERT_EQ(POLLIN, bus_poll(_metadata, fd, POLLIN, 10000) & POLLIN);
	ASSERT_EQ(1, read(fd, &b, 1));
}

/* Case (a) with s, x and r in a process of uid and gid 65534. */
TEST_F_TIMEOUT(nobody, unprivileged, 120)
{
	int ready[2], go[2], i, status, huge = 64 << 20;
	unsigned long rcvbuf;
	struct stall c;
	pid_t pid;

	ASSERT_OK(pipe(ready));
	ASSERT_OK(pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(100);
		ASSERT_EQ(65534U, geteuid());
		c.s = bus_connect(_metadata, &self->bus);
		c.x = bus_connect(_metadata, &self->bus);
		c.r = bus_connect(_metadata, &self->bus);
		c.s_addr = bus_local_addr(_metadata, c.s);
		c.x_addr = bus_local_addr(_metadata, c.x);
		c.r_addr = bus_local_addr(_metadata, c.r);
		c.s_afd = -1;
		ASSERT_EQ(1, write(ready[1], "", 1));
		wait_byte(_metadata, go[0]);
		/* x cannot force itself a larger buffer */
		rcvbuf = RCVBUF(c.x);
		ASSERT_ERRNO(EPERM, setsockopt(c.x, SOL_SOCKET, SO_RCVBUFFORCE,
					       &huge, sizeof(huge)));
		ASSERT_ERRNO(EPERM, set_int(c.x, BUS_SET_MAXQLEN, 1 << 20));
		ASSERT_EQ(rcvbuf, RCVBUF(c.x));
		stall_run(_metadata, &self->bus, &c);
		_exit(_metadata->passed ? 0 : 1);
	}
	close(ready[1]);
	close(go[0]);
	wait_byte(_metadata, ready[0]);
	for (i = 0; i < 3; i++) {
		self->p[i].afd = bus_accept(_metadata, self->m);
		bus_join(_metadata, self->p[i].afd);
	}
	ASSERT_EQ(1, write(go[1], "", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* s (the first client of the bus, address 1) reached the master;
	 * then its accepted socket reads end of file
	 */
	ASSERT_EQ(-1, expect_msg(_metadata, self->p[0].afd, &self->bus, 1,
				 SMALL, 0, TAG_M));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, recv(self->p[i].afd, &status, sizeof(status),
				  MSG_DONTWAIT));
	close(ready[0]);
	close(go[1]);
}

TEST_HARNESS_MAIN
