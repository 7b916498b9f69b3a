// SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later
/*
 * libnfdbus's exchanges with the kernel, on the host (no nfdbus there):
 * linked with -Wl,--wrap=mnl_socket_sendto,--wrap=mnl_socket_recvfrom,
 * so that this file plays the kernel's part, datagram by datagram.  An
 * exchange reads every reply to its request, whatever its callback
 * returns, and skips the replies to earlier requests: a dump stopped by
 * its callback leaves nothing in the socket, and the next request gets
 * its own answer (before, it read the rest of the dump: EPROTO).
 *
 *   cc -isystem build/kernel-headers/include -I nfdbus \
 *      -Wl,--wrap=mnl_socket_sendto,--wrap=mnl_socket_recvfrom \
 *      tests/dbus/host/libnfdbus-talk.c nfdbus/libnfdbus.c -lmnl
 *
 * (doc/afbus-transport.md runs it as a host block.)  Output: TAP.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netfilter/nfdbus.h>
#include <linux/netlink.h>

#include "libnfdbus.h"

#define FAMILY		0x42
#define RULES		300	/* in the dump of a peer */
#define PER_DATAGRAM	64	/* rules per datagram, as the kernel's pages */

/* The datagrams "in the socket", oldest first. */
struct datagram {
	struct datagram	*next;
	size_t		len;
	char		buf[32 * 1024];	/* one page of a dump is less */
};

static struct datagram *queue;
static unsigned int portid;
static unsigned int requests;
/* the next request's answer starts with a stale dump (an earlier seq) */
static bool stale_first;
/* the next dump ends with this error in its NLMSG_DONE */
static int done_error;

static struct datagram *datagram(void)
{
	struct datagram *d = calloc(1, sizeof(*d)), **p = &queue;

	if (!d)
		abort();
	while (*p)
		p = &(*p)->next;
	*p = d;
	return d;
}

static struct nlmsghdr *put(struct datagram *d, uint16_t type,
			    uint16_t flags, unsigned int seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(d->buf + d->len);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_pid = portid;
	return nlh;
}

static void end(struct datagram *d, struct nlmsghdr *nlh)
{
	d->len += NLMSG_ALIGN(nlh->nlmsg_len);
}

static void ack(struct datagram *d, const struct nlmsghdr *req, int error)
{
	struct nlmsghdr *nlh = put(d, NLMSG_ERROR, NLM_F_CAPPED,
				   req->nlmsg_seq);
	struct nlmsgerr *e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));

	e->error = error;
	e->msg = *req;
	end(d, nlh);
}

static void rule(struct datagram *d, unsigned int seq, int i)
{
	struct nlmsghdr *nlh = put(d, FAMILY, NLM_F_MULTI, seq);
	struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	char text[64];

	g->cmd = NFDBUS_CMD_GET_MATCH;
	mnl_attr_put_u64(nlh, NFDBUS_A_PEER, 7);
	snprintf(text, sizeof(text), "type='signal',arg0='k%d'", i);
	mnl_attr_put_strz(nlh, NFDBUS_A_RULE, text);
	end(d, nlh);
}

/* The dump of RULES rules, PER_DATAGRAM a datagram, then NLMSG_DONE. */
static void dump(unsigned int seq, int error)
{
	struct datagram *d = NULL;
	struct nlmsghdr *nlh;
	int i;

	for (i = 0; i < RULES; i++) {
		if (i % PER_DATAGRAM == 0)
			d = datagram();
		rule(d, seq, i);
	}
	d = datagram();
	nlh = put(d, NLMSG_DONE, NLM_F_MULTI, seq);
	*(int *)mnl_nlmsg_put_extra_header(nlh, sizeof(int)) = error;
	end(d, nlh);
}

ssize_t __wrap_mnl_socket_sendto(const struct mnl_socket *nl,
				 const void *buf, size_t len);
ssize_t __wrap_mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf,
				   size_t bufsiz);

ssize_t __wrap_mnl_socket_sendto(const struct mnl_socket *nl,
				 const void *buf, size_t len)
{
	const struct nlmsghdr *req = buf;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(req);
	struct nlmsghdr *nlh;
	struct datagram *d;

	portid = mnl_socket_get_portid(nl);
	requests++;
	if (len < mnl_nlmsg_size(sizeof(*g))) {
		errno = EINVAL;
		return -1;
	}
	if (stale_first) {
		stale_first = false;
		dump(req->nlmsg_seq - 1, 0);
	}
	if (req->nlmsg_type == GENL_ID_CTRL) {
		d = datagram();
		nlh = put(d, GENL_ID_CTRL, 0, req->nlmsg_seq);
		((struct genlmsghdr *)mnl_nlmsg_put_extra_header(nlh,
			sizeof(*g)))->cmd = CTRL_CMD_NEWFAMILY;
		mnl_attr_put_u16(nlh, CTRL_ATTR_FAMILY_ID, FAMILY);
		end(d, nlh);
		ack(d, req, 0);
	} else if (g->cmd == NFDBUS_CMD_GET_MATCH) {
		dump(req->nlmsg_seq, done_error);
		done_error = 0;
	} else {
		ack(datagram(), req, 0);
	}
	return len;
}

ssize_t __wrap_mnl_socket_recvfrom(const struct mnl_socket *nl, void *buf,
				   size_t bufsiz)
{
	struct datagram *d = queue;

	(void)nl;
	if (!d) {
		/* the kernel would block here: nothing was left for us */
		errno = EAGAIN;
		return -1;
	}
	if (d->len > bufsiz) {
		errno = ENOSPC;
		return -1;
	}
	queue = d->next;
	memcpy(buf, d->buf, d->len);
	bufsiz = d->len;
	free(d);
	return bufsiz;
}

static int queued(void)
{
	struct datagram *d;
	int n = 0;

	for (d = queue; d; d = d->next)
		n++;
	return n;
}

/* Callbacks: count the rules seen; fail (or not) at the first. */
struct seen {
	int calls;
	int fail;
};

static int each_rule(const struct nfdbus_rule_info *info, void *data)
{
	struct seen *s = data;

	if (!info->rule || info->peer != 7)
		return -EBADMSG;
	s->calls++;
	return s->fail;
}

static int tests, failed;

static void check(bool ok, const char *what, long got, long want)
{
	tests++;
	if (ok) {
		printf("ok %d - %s\n", tests, what);
		return;
	}
	failed++;
	printf("not ok %d - %s (got %ld, want %ld)\n", tests, what, got, want);
}

static void expect_eq(const char *what, long got, long want)
{
	check(got == want, what, got, want);
}

#define EXPECT_EQ(what, got, want) expect_eq(what, (long)(got), (long)(want))

int main(void)
{
	struct nfdbus_bus bus;
	struct nfdbus *h;
	struct seen s;
	int ret;

	printf("TAP version 13\n1..14\n");
	h = nfdbus_open();
	check(h != NULL, "nfdbus_open finds the family", h ? 0 : errno, 0);
	if (!h)
		return 1;
	EXPECT_EQ("nothing left in the socket after the family lookup",
		  queued(), 0);
	EXPECT_EQ("a bus path parses", nfdbus_bus_parse(&bus, "/tmp/bus"), 0);
	bus.has_master_fd = 0;

	/* a callback that fails at the first rule of a dump */
	s = (struct seen){ .fail = -ECANCELED };
	ret = nfdbus_list(h, &bus, &(uint64_t){ 7 }, each_rule, &s);
	EXPECT_EQ("a dump stopped by its callback returns its error",
		  ret, -ECANCELED);
	EXPECT_EQ("... the callback is called no more after its error",
		  s.calls, 1);
	EXPECT_EQ("... and the whole dump was read (nothing left)",
		  queued(), 0);
	EXPECT_EQ("the next request gets its own ack",
		  nfdbus_add_match(h, &bus, 7, "type='signal'", NULL), 0);

	s = (struct seen){ .fail = 0 };
	EXPECT_EQ("a whole dump counts every rule",
		  nfdbus_list(h, &bus, NULL, each_rule, &s), RULES);
	EXPECT_EQ("... each given to the callback once", s.calls, RULES);

	/* a dump of an earlier request still in the socket */
	stale_first = true;
	EXPECT_EQ("a request skips the replies to an earlier one",
		  nfdbus_remove_match(h, &bus, 7, "type='signal'"), 0);
	EXPECT_EQ("... and reads them all", queued(), 0);

	/* the kernel's error at the end of a dump */
	done_error = -ENOBUFS;
	s = (struct seen){ .fail = 0 };
	EXPECT_EQ("a dump ended by the kernel's error returns it",
		  nfdbus_list(h, &bus, NULL, each_rule, &s), -ENOBUFS);
	EXPECT_EQ("the next request after it gets its own ack",
		  nfdbus_flush(h, &bus, 7), 0);
	EXPECT_EQ("every exchange sent one request", requests, 7);

	nfdbus_close(h);
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       tests - failed, failed);
	return failed ? 1 : 0;
}
