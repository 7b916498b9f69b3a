// SPDX-License-Identifier: GPL-2.0
/*
 * Replies only to those who await them (Documentation/networking/
 * nfdbus.rst, "Replies"): on a bus with NFDBUS_BUS_REPLIES a method
 * return or an error from a client reaches a client only as the answer
 * to a call it sent the former (or that the master forwarded for it),
 * once. A hostile client's forged replies (wrong replier, replayed, to a
 * call that wanted none, too late) fail with EPERM, reach nobody but
 * eavesdroppers and are counted; a caller over its limit gets EDQUOT.
 *
 * Peers: 0 calls, 1 answers, 2 forges, 3 eavesdrops (in some tests).
 */
#include "nfdbus_test.h"
#include "af_bus_bpf.h"

#include <linux/filter.h>
#include <time.h>

FIXTURE(replies) {
	struct nfd_bus b;
};

FIXTURE_SETUP(replies)
{
	nfd_setup(_metadata, &self->b, 4);
	ASSERT_OK(nfdbus_set_bus(self->b.h, &self->b.nb, NFDBUS_BUS_REPLIES,
				 0, 0));
}

FIXTURE_TEARDOWN(replies)
{
	nfd_teardown(&self->b);
}

/* A D-Bus message as peer from's library would marshal it, with a
 * DESTINATION when dest is not NULL. */
static struct nfd_blob msg_dest(struct __test_metadata *_metadata,
				struct nfd_bus *b, int from, int type,
				uint32_t serial, uint32_t reply_serial,
				bool no_reply, const char *dest)
{
	char sender[32];

	snprintf(sender, sizeof(sender), ":0.%llx",
		 (unsigned long long)b->p[from].addr);
	return nfd_call_msg(_metadata, sender, dest, type, serial,
			    reply_serial, no_reply);
}

static struct nfd_blob msg(struct __test_metadata *_metadata,
			   struct nfd_bus *b, int from, int type,
			   uint32_t serial, uint32_t reply_serial,
			   bool no_reply)
{
	return msg_dest(_metadata, b, from, type, serial, reply_serial,
			no_reply, NULL);
}

/* Peer from sends m to peer to's address: 0 or the errno. */
static int send_to(struct nfd_bus *b, int from, int to,
		   const struct nfd_blob *m)
{
	return bus_errno_of(bus_sendto(b->p[from].cfd, &b->bus, b->p[to].addr,
				       m->data, m->len, 0));
}

/* Peer from sends a message of type to peer to; expect err, and who
 * got it (a mask of peers, as nfd_receivers()).
 */
#define SEND(b, from, to, type, serial, rserial, no_reply, err, who) do { \
	struct nfd_blob __m = msg(_metadata, (b), (from), (type), (serial), \
				  (rserial), (no_reply));		\
	ASSERT_EQ((err), send_to((b), (from), (to), &__m))		\
		TH_LOG("%d -> %d type %d serial %u reply to %u", (from), \
		       (to), (type), (serial), (rserial));		\
	ASSERT_EQ((unsigned int)(who),					\
		  nfd_receivers(_metadata, (b), __m.data, __m.len));	\
	free(__m.data);							\
} while (0)

/* The master sends peer to a message as peer from's library wrote it
 * (a call it forwards, a reply it relays, a copy for a monitor); peer to
 * gets it.
 */
#define RELAY(b, from, to, type, serial, rserial, no_reply) do {	\
	struct nfd_blob __m = msg(_metadata, (b), (from), (type), (serial), \
				  (rserial), (no_reply));		\
	char __buf[512];						\
	ASSERT_EQ((ssize_t)__m.len,					\
		  send((b)->p[to].afd, __m.data, __m.len, 0));		\
	ASSERT_EQ((ssize_t)__m.len, recv((b)->p[to].cfd, __buf,	\
					 sizeof(__buf), MSG_DONTWAIT));	\
	free(__m.data);							\
} while (0)

#define CALL	DBUS_MESSAGE_TYPE_METHOD_CALL
#define RETURN	DBUS_MESSAGE_TYPE_METHOD_RETURN
#define ERROR	DBUS_MESSAGE_TYPE_ERROR

TEST_F(replies, answered_once)
{
	struct nfd_bus *b = &self->b;

	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	SEND(b, 1, 0, RETURN, 40, 5, false, 0, 0x1);
	/* the same reply again: replayed */
	SEND(b, 1, 0, RETURN, 41, 5, false, EPERM, 0);
	/* an error answers as well as a return */
	SEND(b, 0, 1, CALL, 6, 0, false, 0, 0x2);
	SEND(b, 1, 0, ERROR, 42, 6, false, 0, 0x1);
	SEND(b, 1, 0, ERROR, 43, 6, false, EPERM, 0);
	ASSERT_EQ(2, nfd_stats(_metadata, b).unrequested);
}

TEST_F(replies, forged)
{
	struct nfd_bus *b = &self->b;

	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	/* right serial, wrong replier; a serial never used */
	SEND(b, 2, 0, RETURN, 1, 5, false, EPERM, 0);
	SEND(b, 2, 0, ERROR, 2, 5, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 44, 6, false, EPERM, 0);
	/* to a call that expected no reply */
	SEND(b, 0, 1, CALL, 7, 0, true, 0, 0x2);
	SEND(b, 1, 0, RETURN, 45, 7, false, EPERM, 0);
	/* the forgeries took nothing away: the real answer goes through */
	SEND(b, 1, 0, RETURN, 46, 5, false, 0, 0x1);
	/* the caller answering its own call to another */
	SEND(b, 0, 1, CALL, 8, 0, false, 0, 0x2);
	SEND(b, 0, 0, RETURN, 9, 8, false, EPERM, 0);
	ASSERT_EQ(5, nfd_stats(_metadata, b).unrequested);
}

/* dbus-daemon's monitors see the replies it refuses: so do eavesdroppers */
TEST_F(replies, eavesdropper_sees_refused)
{
	struct nfd_bus *b = &self->b;

	ASSERT_OK(setsockopt(b->p[3].afd, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0));
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0xa);
	SEND(b, 2, 0, RETURN, 1, 5, false, EPERM, 0x8);
	SEND(b, 1, 0, RETURN, 2, 5, false, 0, 0x9);
}

TEST_F(replies, limit)
{
	struct nfd_bus *b = &self->b;
	uint32_t flags, max, timeout;
	uint32_t s;

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 4, 0));
	ASSERT_OK(nfdbus_get_bus(b->h, &b->nb, &flags, &max, &timeout));
	ASSERT_EQ(NFDBUS_BUS_REPLIES, flags);
	ASSERT_EQ(4, max);
	ASSERT_EQ(0, timeout);
	for (s = 1; s <= 4; s++)
		SEND(b, 0, s % 2 ? 1 : 2, CALL, s, 0, false, 0, s % 2 ? 2 : 4);
	/* a fifth, to anybody, is refused; a call wanting no reply is not */
	SEND(b, 0, 1, CALL, 5, 0, false, EDQUOT, 0);
	SEND(b, 0, 3, CALL, 6, 0, false, EDQUOT, 0);
	SEND(b, 0, 1, CALL, 7, 0, true, 0, 0x2);
	/* another caller has its own four */
	SEND(b, 3, 1, CALL, 1, 0, false, 0, 0x2);
	ASSERT_EQ(2, nfd_stats(_metadata, b).replies_exceeded);
	/* an answer makes room for one more */
	SEND(b, 2, 0, RETURN, 9, 2, false, 0, 0x1);
	SEND(b, 0, 1, CALL, 8, 0, false, 0, 0x2);
	SEND(b, 0, 1, CALL, 10, 0, false, EDQUOT, 0);
	/* and so does the callee leaving: peer 1 awaited 3 of them */
	bus_peer_close(&b->p[1]);
	SEND(b, 0, 2, CALL, 11, 0, false, 0, 0x4);
	SEND(b, 0, 2, CALL, 12, 0, false, 0, 0x4);
	SEND(b, 0, 2, CALL, 13, 0, false, 0, 0x4);
	SEND(b, 0, 2, CALL, 14, 0, false, EDQUOT, 0);
	/* limits out of range */
	ASSERT_EQ(-ERANGE, nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES,
					  NFDBUS_MAX_REPLIES_MAX + 1, 0));
}

/* The caller leaving: its awaited replies go, the callee cannot reach a
 * new client that was given the same address... which never happens,
 * addresses are not reused; so check the callee's side is clean: its
 * answers to the gone caller are refused like any reply nobody awaits.
 */
TEST_F(replies, caller_leaves)
{
	struct nfd_bus *b = &self->b;
	struct nfd_blob m;

	SEND(b, 2, 1, CALL, 5, 0, false, 0, 0x2);
	bus_peer_close(&b->p[2]);
	/* the gone caller's address goes to the master now */
	m = msg(_metadata, b, 1, RETURN, 50, 5, false);
	ASSERT_EQ(0, send_to(b, 1, 2, &m));
	ASSERT_EQ(0, nfd_receivers(_metadata, b, m.data, m.len));
	free(m.data);
	ASSERT_EQ(0, nfd_stats(_metadata, b).unrequested);
}

/* A call the master forwards, with the caller's name in SENDER, is
 * answered directly; a reply the master relays ends the wait.
 */
TEST_F(replies, through_the_master)
{
	struct nfd_bus *b = &self->b;

	/* the master forwards peer 0's call 9 to peer 1 */
	RELAY(b, 0, 1, CALL, 9, 0, false);
	SEND(b, 1, 0, RETURN, 60, 9, false, 0, 0x1);
	SEND(b, 1, 0, RETURN, 61, 9, false, EPERM, 0);

	/* a forwarded call wanting no reply awaits none */
	RELAY(b, 0, 1, CALL, 10, 0, true);
	SEND(b, 1, 0, RETURN, 62, 10, false, EPERM, 0);

	/* peer 0 calls peer 1; the master relays peer 1's answer */
	SEND(b, 0, 1, CALL, 11, 0, false, 0, 0x2);
	RELAY(b, 1, 0, RETURN, 63, 11, false);
	SEND(b, 1, 0, RETURN, 64, 11, false, EPERM, 0);

	/* the master's own replies (as the bus) are never refused */
	RELAY(b, 2, 0, RETURN, 65, 77, false);
	ASSERT_EQ(3, nfd_stats(_metadata, b).unrequested);
}

/* What the master sends a monitor is a copy: the monitor owes no reply,
 * and the caller's limit does not pay for it.
 */
TEST_F(replies, monitor_copies_await_nothing)
{
	struct nfd_bus *b = &self->b;
	uint32_t s;

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 2, 0));
	ASSERT_OK(nfdbus_set_peer(b->h, &b->nb, b->p[2].addr,
				  NFDBUS_PEER_MONITOR));
	for (s = 20; s < 25; s++) {
		RELAY(b, 0, 2, CALL, s, 0, false);
	}
	SEND(b, 2, 0, RETURN, 1, 20, false, EPERM, 0);
	SEND(b, 0, 1, CALL, 30, 0, false, 0, 0x2);
	SEND(b, 0, 1, CALL, 31, 0, false, 0, 0x2);
	SEND(b, 0, 1, CALL, 32, 0, false, EDQUOT, 0);
	/* a client that is not there, or the flag unknown */
	ASSERT_EQ(-ENOENT, nfdbus_set_peer(b->h, &b->nb, 0x4321,
					   NFDBUS_PEER_MONITOR));
	ASSERT_EQ(-EINVAL, nfdbus_set_peer(b->h, &b->nb, b->p[2].addr,
					   NFDBUS_PEER_FLAGS_ALL + 1));
	/* no longer a monitor: a forwarded call awaits its answer again */
	ASSERT_OK(nfdbus_set_peer(b->h, &b->nb, b->p[2].addr, 0));
	SEND(b, 1, 0, RETURN, 2, 30, false, 0, 0x1);
	RELAY(b, 0, 2, CALL, 40, 0, false);
	SEND(b, 2, 0, RETURN, 3, 40, false, 0, 0x1);
}

/* Calls the master forwards count against their caller like its own
 * (they used not to: a burst of them to a callee that never answers
 * made waits without bound); the callee's answer ends its wait only.
 */
TEST_F(replies, forwarded_calls_count)
{
	struct nfd_bus *b = &self->b;
	struct nfd_blob m;

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 2, 0));
	RELAY(b, 0, 1, CALL, 50, 0, false);
	SEND(b, 0, 2, CALL, 51, 0, false, 0, 0x4);
	/* a third wait, forwarded or not, is refused; the master's send
	 * fails with EDQUOT and its callee gets nothing
	 */
	SEND(b, 0, 1, CALL, 52, 0, false, EDQUOT, 0);
	m = msg(_metadata, b, 0, CALL, 53, 0, false);
	ASSERT_ERRNO(EDQUOT, send(b->p[3].afd, m.data, m.len, 0));
	ASSERT_EQ(0, nfd_receivers(_metadata, b, m.data, m.len));
	free(m.data);
	ASSERT_EQ(2, nfd_stats(_metadata, b).replies_exceeded);
	SEND(b, 1, 0, RETURN, 1, 50, false, 0, 0x1);
	RELAY(b, 0, 3, CALL, 54, 0, false);
	SEND(b, 3, 0, RETURN, 2, 54, false, 0, 0x1);
	SEND(b, 2, 0, RETURN, 3, 51, false, 0, 0x1);
}

/*
 * A client's burst of 10 000 calls that the master forwards to a callee
 * that never answers ends with max_replies waits, no more: the rest fail
 * at the master's send with EDQUOT (as dbus-daemon answers LimitsExceeded
 * past max_replies_per_connection).
 */
TEST_F_TIMEOUT(replies, forwarded_burst_bounded, 120)
{
	struct nfd_bus *b = &self->b;
	unsigned int ok = 0, quota = 0, s;
	char buf[512];
	struct nfd_blob m;
	ssize_t n;

	for (s = 1; s <= 10000; s++) {
		m = msg(_metadata, b, 0, CALL, s, 0, false);
		n = send(b->p[1].afd, m.data, m.len, 0);
		if (n == (ssize_t)m.len) {
			ok++;
			ASSERT_EQ(n, recv(b->p[1].cfd, buf, sizeof(buf),
					  MSG_DONTWAIT));
		} else {
			ASSERT_EQ(EDQUOT, errno) TH_LOG("call %u", s);
			quota++;
		}
		free(m.data);
	}
	ASSERT_EQ(NFDBUS_MAX_REPLIES_DEFAULT, ok);
	ASSERT_EQ(10000 - NFDBUS_MAX_REPLIES_DEFAULT, quota);
	ASSERT_EQ(quota, nfd_stats(_metadata, b).replies_exceeded);
	/* the caller's own calls are refused too, until an answer */
	SEND(b, 0, 2, CALL, 20000, 0, false, EDQUOT, 0);
	SEND(b, 1, 0, RETURN, 1, 7, false, 0, 0x1);
	SEND(b, 0, 2, CALL, 20001, 0, false, 0, 0x4);
}

/* However many clients wait, a bus holds NFDBUS_BUS_MAX_REPLIES waits. */
TEST_F_TIMEOUT(replies, bus_bounded, 600)
{
	struct nfd_bus *b = &self->b;
	char buf[512];
	struct nfd_blob m;
	uint32_t s;

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES,
				 NFDBUS_MAX_REPLIES_MAX, 0));
	for (s = 1; s <= NFDBUS_BUS_MAX_REPLIES + 1; s++) {
		m = msg(_metadata, b, s % 2 ? 0 : 2, CALL, s, 0, false);
		if (s <= NFDBUS_BUS_MAX_REPLIES) {
			ASSERT_EQ((ssize_t)m.len,
				  send(b->p[1].afd, m.data, m.len, 0))
				TH_LOG("call %u: %s", s, strerror(errno));
			ASSERT_EQ((ssize_t)m.len,
				  recv(b->p[1].cfd, buf, sizeof(buf),
				       MSG_DONTWAIT));
		} else {
			ASSERT_ERRNO(EDQUOT, send(b->p[1].afd, m.data, m.len,
						  0));
		}
		free(m.data);
	}
	/* the callee leaving frees them all */
	bus_peer_close(&b->p[1]);
	SEND(b, 0, 3, CALL, 1, 0, false, 0, 0x8);
}

/* A D-Bus message of type from peer from with a DESTINATION. */
static struct nfd_blob msg_to(struct __test_metadata *_metadata,
			      struct nfd_bus *b, int from, int type,
			      uint32_t serial, uint32_t reply_serial,
			      const char *dest)
{
	return msg_dest(_metadata, b, from, type, serial, reply_serial,
			false, dest);
}

static const char *unique(struct nfd_bus *b, int i, char *buf, size_t len)
{
	snprintf(buf, len, ":0.%llx", (unsigned long long)b->p[i].addr);
	return buf;
}

/*
 * A reply sent as a multicast, to a caller with a match rule that lets
 * everything through, does not complete the caller's call: a client's
 * multicast must be a signal (EPERM otherwise); the real answer still
 * goes through.  Also an error, and a multicast method call.
 */
TEST_F(replies, multicast_reply_refused)
{
	struct nfd_bus *b = &self->b;
	struct bus_name to = bus_dest(&b->bus, bus_mcast(0));
	char name[32];
	struct nfd_blob m;
	int type;

	NFD_ADD(b, 0, "", 0);
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	for (type = RETURN; type <= ERROR; type++) {
		m = msg_to(_metadata, b, 2, type, 70 + type, 5,
			   unique(b, 0, name, sizeof(name)));
		ASSERT_ERRNO(EPERM, sendto(b->p[2].cfd, m.data, m.len,
					   MSG_NOSIGNAL, (struct sockaddr *)&to.sa,
					   to.len));
		ASSERT_EQ(0, nfd_receivers(_metadata, b, m.data, m.len));
		free(m.data);
	}
	m = msg_to(_metadata, b, 2, CALL, 73, 0, unique(b, 0, name,
							 sizeof(name)));
	ASSERT_ERRNO(EPERM, sendto(b->p[2].cfd, m.data, m.len, MSG_NOSIGNAL,
				   (struct sockaddr *)&to.sa, to.len));
	free(m.data);
	ASSERT_EQ(3, nfd_stats(_metadata, b).denied);
	SEND(b, 1, 0, RETURN, 1, 5, false, 0, 0x1);
}

/*
 * The master sends a client with an eavesdrop='true' match rule copies of
 * the calls it forwards: the copy is no call to answer.  The eavesdropper's
 * reply is refused, and does not keep the callee's answer out.
 */
TEST_F(replies, eavesdropper_cannot_answer)
{
	struct nfd_bus *b = &self->b;
	char name[32], buf[512];
	struct nfd_blob m;

	NFD_ADD(b, 2, "eavesdrop='true'", 0);
	m = msg_to(_metadata, b, 0, CALL, 9, 0, unique(b, 1, name,
							sizeof(name)));
	ASSERT_EQ((ssize_t)m.len, send(b->p[1].afd, m.data, m.len, 0));
	ASSERT_EQ((ssize_t)m.len, send(b->p[2].afd, m.data, m.len, 0));
	ASSERT_EQ((ssize_t)m.len, recv(b->p[1].cfd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	ASSERT_EQ((ssize_t)m.len, recv(b->p[2].cfd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	free(m.data);
	SEND(b, 2, 0, RETURN, 1, 9, false, EPERM, 0);
	SEND(b, 2, 0, ERROR, 2, 9, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 3, 9, false, 0, 0x1);
	/* a call forwarded to the eavesdropper's own name awaits it */
	m = msg_to(_metadata, b, 0, CALL, 10, 0, unique(b, 2, name,
							 sizeof(name)));
	ASSERT_EQ((ssize_t)m.len, send(b->p[2].afd, m.data, m.len, 0));
	ASSERT_EQ((ssize_t)m.len, recv(b->p[2].cfd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	free(m.data);
	SEND(b, 2, 0, RETURN, 4, 10, false, 0, 0x1);
}

/* A kernel eavesdropper (BUS_SET_EAVESDROP) is a client like any other
 * for its own calls and the calls to it; its copies of others' calls
 * and replies make and take nothing.
 */
TEST_F(replies, kernel_eavesdropper_tracked)
{
	struct nfd_bus *b = &self->b;
	uint32_t s;

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 2, 0));
	ASSERT_OK(setsockopt(b->p[3].afd, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0));
	/* its calls are answered, and the answers free its waits */
	for (s = 1; s <= 5; s++) {
		SEND(b, 3, 1, CALL, s, 0, false, 0, 0x2);
		SEND(b, 1, 3, RETURN, 100 + s, s, false, 0, 0x8);
	}
	/* calls to it await its answer */
	SEND(b, 0, 3, CALL, 20, 0, false, 0, 0x8);
	SEND(b, 3, 0, RETURN, 6, 20, false, 0, 0x1);
	/* its copy of a call between others awaits nothing from it */
	SEND(b, 0, 1, CALL, 21, 0, false, 0, 0xa);
	SEND(b, 3, 0, RETURN, 7, 21, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 8, 21, false, 0, 0x9);
}

/* Reply tracking turned off and on again forgets what was awaited. */
TEST_F(replies, off_and_on_forgets)
{
	struct nfd_bus *b = &self->b;

	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, 0, 0, 0));
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 0, 0));
	SEND(b, 1, 0, RETURN, 1, 5, false, EPERM, 0);
}

/* Waits expire in the order of their deadlines, whatever the order they
 * were made in: one that never expires does not keep a later one that
 * expired.
 */
TEST_F(replies, expiry_in_deadline_order)
{
	struct nfd_bus *b = &self->b;
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 2, 0));
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 2, 100));
	SEND(b, 0, 2, CALL, 6, 0, false, 0, 0x4);
	nanosleep(&ts, NULL);
	/* call 6 expired: its room is free although call 5 is older */
	SEND(b, 0, 3, CALL, 7, 0, false, 0, 0x8);
	SEND(b, 2, 0, RETURN, 1, 6, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 2, 5, false, 0, 0x1);
}

/* A call the callee's own socket filter drops never reached it: it owes
 * no answer.
 */
TEST_F(replies, filtered_call_awaits_nothing)
{
	struct nfd_bus *b = &self->b;
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = { .len = 1, .filter = &drop };

	ASSERT_OK(setsockopt(b->p[1].cfd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			     sizeof(prog)));
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0);
	SEND(b, 1, 0, RETURN, 1, 5, false, EPERM, 0);
}

TEST_F(replies, timeout)
{
	struct nfd_bus *b = &self->b;
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, NFDBUS_BUS_REPLIES, 1, 200));
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	SEND(b, 0, 1, CALL, 6, 0, false, EDQUOT, 0);
	nanosleep(&ts, NULL);
	SEND(b, 1, 0, RETURN, 70, 5, false, EPERM, 0);
	/* the expired wait took no room */
	SEND(b, 0, 1, CALL, 7, 0, false, 0, 0x2);
	SEND(b, 1, 0, RETURN, 71, 7, false, 0, 0x1);
}

/* Without the flag, replies are not looked at. */
TEST_F(replies, off)
{
	struct nfd_bus *b = &self->b;

	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb, 0, 0, 0));
	SEND(b, 2, 0, RETURN, 1, 5, false, 0, 0x1);
	SEND(b, 2, 0, RETURN, 2, 99, false, 0, 0x1);
	ASSERT_EQ(0, nfd_stats(_metadata, b).unrequested);
}

/* A reply that passes carries its files. */
TEST_F(replies, reply_with_fd)
{
	struct nfd_bus *b = &self->b;
	struct nfd_blob m;
	char buf[512], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	struct bus_name to;
	int fd;

	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	m = msg(_metadata, b, 1, RETURN, 80, 5, false);
	to = bus_dest(&b->bus, b->p[0].addr);
	iov.iov_base = m.data;
	iov.iov_len = m.len;
	mh.msg_name = &to.sa;
	mh.msg_namelen = to.len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	fd = STDERR_FILENO;
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	ASSERT_EQ((ssize_t)m.len, sendmsg(b->p[1].cfd, &mh, 0));
	/* a second time: refused, and its file goes nowhere */
	ASSERT_ERRNO(EPERM, sendmsg(b->p[1].cfd, &mh, 0));

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	ASSERT_EQ((ssize_t)m.len, recvmsg(b->p[0].cfd, &mh, MSG_DONTWAIT));
	cm = CMSG_FIRSTHDR(&mh);
	ASSERT_NE(NULL, cm);
	ASSERT_EQ(SCM_RIGHTS, cm->cmsg_type);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_ERRNO(EAGAIN, recv(b->p[0].cfd, buf, sizeof(buf),
				  MSG_DONTWAIT));
	free(m.data);
}

/*
 * With NFDBUS_BUS_POLICY too, the policies decide on replies nobody
 * awaits, with dbus-daemon's send_requested_reply: an allow rule by
 * default allows requested replies only (NFDBUS_POLICY_F_REQUESTED_ONLY);
 * one without that flag (send_requested_reply='false') allows any.
 */
static void allow_all(struct __test_metadata *_metadata, struct nfd_bus *b,
		      uint32_t send_flags)
{
	struct nfdbus_policy_rule r[2];
	int i;

	memset(r, 0, sizeof(r));
	r[0].direction = NFDBUS_POLICY_SEND;
	r[0].allow = 1;
	r[0].flags = send_flags;
	r[1].direction = NFDBUS_POLICY_RECEIVE;
	r[1].allow = 1;
	ASSERT_OK(nfdbus_set_policy(b->h, &b->nb, 1, r, 2));
	for (i = 0; i < b->n; i++)
		ASSERT_OK(nfdbus_set_peer_policy(b->h, &b->nb, b->p[i].addr, 1));
}

TEST_F(replies, policy_decides_unrequested)
{
	struct nfd_bus *b = &self->b;

	allow_all(_metadata, b, NFDBUS_POLICY_F_REQUESTED_ONLY);
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb,
				 NFDBUS_BUS_REPLIES | NFDBUS_BUS_POLICY, 0, 0));
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	SEND(b, 2, 0, RETURN, 1, 5, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 2, 5, false, 0, 0x1);
	ASSERT_EQ(1, nfd_stats(_metadata, b).unrequested);

	/* send_requested_reply='false': any reply is allowed, and a
	 * requested one still ends its wait
	 */
	allow_all(_metadata, b, 0);
	SEND(b, 2, 0, RETURN, 3, 99, false, 0, 0x1);
	SEND(b, 0, 1, CALL, 6, 0, false, 0, 0x2);
	SEND(b, 1, 0, RETURN, 4, 6, false, 0, 0x1);
	ASSERT_EQ(1, nfd_stats(_metadata, b).unrequested);
}

/*
 * An eBPF socket filter may write the five words of __sk_buff cb[] (the
 * middle of skb->cb, where AF_BUS keeps its per-message control block):
 * nfdbus's tag of the message (nf_id, which finds its parse again at the
 * next hook) and the address the sender named survive it, so reply
 * tracking and the policy decide as without the filter.  Every peer's
 * socket runs a filter that overwrites cb[0..4] with values like parse
 * tags and counts its runs in a map.
 */
TEST_F(replies, ebpf_cb_writer_changes_nothing)
{
	struct nfd_bus *b = &self->b;
	int map = ebpf_counter_create(_metadata);
	const struct bpf_insn insns[] = {
		EBPF_MOV64_REG(BPF_REG_6, BPF_REG_1),
		EBPF_MOV64_IMM(BPF_REG_2, -1),
		EBPF_STX_W(BPF_REG_6, BPF_REG_2,
			   offsetof(struct __sk_buff, cb[0])),
		EBPF_MOV64_IMM(BPF_REG_2, 1),
		EBPF_STX_W(BPF_REG_6, BPF_REG_2,
			   offsetof(struct __sk_buff, cb[1])),
		EBPF_MOV64_IMM(BPF_REG_2, 0x100),
		EBPF_STX_W(BPF_REG_6, BPF_REG_2,
			   offsetof(struct __sk_buff, cb[2])),
		EBPF_MOV64_IMM(BPF_REG_2, 0x201),
		EBPF_STX_W(BPF_REG_6, BPF_REG_2,
			   offsetof(struct __sk_buff, cb[3])),
		EBPF_MOV64_IMM(BPF_REG_2, -1),
		EBPF_STX_W(BPF_REG_6, BPF_REG_2,
			   offsetof(struct __sk_buff, cb[4])),
		/* count the run: key 0 on the stack, lookup, atomic add */
		EBPF_MOV64_IMM(BPF_REG_2, 0),
		EBPF_STX_W(BPF_REG_10, BPF_REG_2, -4),
		EBPF_MOV64_REG(BPF_REG_2, BPF_REG_10),
		EBPF_ADD64_IMM(BPF_REG_2, -4),
		EBPF_LD_MAP_FD(BPF_REG_1, map),
		EBPF_CALL(BPF_FUNC_map_lookup_elem),
		EBPF_JEQ_IMM(BPF_REG_0, 0, 2),
		EBPF_MOV64_IMM(BPF_REG_1, 1),
		EBPF_ATOMIC_ADD_DW(BPF_REG_0, BPF_REG_1, 0),
		/* keep the whole message */
		EBPF_LDX_W(BPF_REG_0, BPF_REG_6,
			   offsetof(struct __sk_buff, len)),
		EBPF_EXIT(),
	};
	int i;

	for (i = 0; i < b->n; i++)
		attach_ebpf(_metadata, b->p[i].cfd, insns,
			    sizeof(insns) / sizeof(insns[0]));

	/* reply tracking alone */
	SEND(b, 0, 1, CALL, 5, 0, false, 0, 0x2);
	SEND(b, 2, 0, RETURN, 1, 5, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 40, 5, false, 0, 0x1);
	SEND(b, 1, 0, RETURN, 41, 5, false, EPERM, 0);
	SEND(b, 0, 1, CALL, 6, 0, true, 0, 0x2);
	SEND(b, 1, 0, ERROR, 42, 6, false, EPERM, 0);
	ASSERT_EQ(3, nfd_stats(_metadata, b).unrequested);
	/* the filters ran: at least on the three messages delivered */
	ASSERT_LE(3, ebpf_counter_read(_metadata, map));

	/* and with the policy: only requested replies are allowed */
	allow_all(_metadata, b, NFDBUS_POLICY_F_REQUESTED_ONLY);
	ASSERT_OK(nfdbus_set_bus(b->h, &b->nb,
				 NFDBUS_BUS_REPLIES | NFDBUS_BUS_POLICY, 0, 0));
	SEND(b, 0, 1, CALL, 7, 0, false, 0, 0x2);
	SEND(b, 2, 0, RETURN, 2, 7, false, EPERM, 0);
	SEND(b, 1, 0, RETURN, 43, 7, false, 0, 0x1);
	SEND(b, 1, 0, RETURN, 44, 7, false, EPERM, 0);
	ASSERT_EQ(5, nfd_stats(_metadata, b).unrequested);
	ASSERT_LE(5, ebpf_counter_read(_metadata, map));
	close(map);
}

TEST_HARNESS_MAIN
