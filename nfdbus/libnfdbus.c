// SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later
/*
 * libnfdbus: the nfdbus generic netlink family, on libmnl.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/bus.h>
#include <linux/genetlink.h>
#include <linux/netfilter/nfdbus.h>
#include <linux/netlink.h>

#include "libnfdbus.h"

/* AF_BUS, which the C library does not know yet */
#define NFDBUS_AF_BUS	46

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* Big enough for any request (a rule is at most NFDBUS_RULE_MAX bytes,
 * longer ones are sent so that the kernel says EMSGSIZE) and for a page
 * of dump replies.
 */
#define NFDBUS_BUF_SIZE	(64 * 1024)

struct nfdbus {
	struct mnl_socket	*nl;
	uint16_t		family;
	unsigned int		portid;
	unsigned int		seq;
	char			err[256];
	char			buf[NFDBUS_BUF_SIZE];
};

/* The allocator of handles and policy requests (nfdbus_set_allocator()). */
static void *nfdbus_default_zalloc(size_t size)
{
	return calloc(1, size);
}

static void *(*nfdbus_zalloc)(size_t size) = nfdbus_default_zalloc;
static void (*nfdbus_free)(void *ptr) = free;

void nfdbus_set_allocator(void *(*zalloc)(size_t size),
			  void (*release)(void *ptr))
{
	nfdbus_zalloc = zalloc ? zalloc : nfdbus_default_zalloc;
	nfdbus_free = release ? release : free;
}

const char *nfdbus_error(const struct nfdbus *h)
{
	return h->err;
}

/* A request in buf (h->buf, or a bigger one of its own). */
static struct nlmsghdr *nfdbus_msg_in(struct nfdbus *h, void *buf,
				      uint16_t type, uint8_t version,
				      uint8_t cmd, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++h->seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

static struct nlmsghdr *nfdbus_msg(struct nfdbus *h, uint16_t type,
				   uint8_t version, uint8_t cmd,
				   uint16_t flags)
{
	return nfdbus_msg_in(h, h->buf, type, version, cmd, flags);
}

/* What the callbacks of one exchange get.  An exchange always reads
 * every reply to its request, up to the ack or the end of the dump, even
 * once its callback failed or stopped (err, stopped): what it left in the
 * socket would otherwise be read by the next request, which would fail.
 */
struct nfdbus_talk_ctx {
	struct nfdbus	*h;
	mnl_cb_t	cb;
	void		*data;
	unsigned int	seq;		/* the request's */
	int		err;		/* the callback's error (errno) */
	bool		stopped;	/* the callback wants no more */
};

/* A reply to an earlier request (one whose exchange ended without reading
 * all of it: recvfrom() failed), which this exchange skips.
 */
static bool nfdbus_stale(const struct nlmsghdr *nlh,
			 const struct nfdbus_talk_ctx *t)
{
	return nlh->nlmsg_seq != t->seq;
}

static int nfdbus_ext_ack_attr(const struct nlattr *attr, void *data)
{
	struct nfdbus *h = data;

	if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
	    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
		snprintf(h->err, sizeof(h->err), "%s", mnl_attr_get_str(attr));
	return MNL_CB_OK;
}

/* NLMSG_ERROR: an ack (error 0) ends the exchange; keep the ext ack text. */
static int nfdbus_error_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nfdbus_talk_ctx *t = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	unsigned int off = sizeof(*e);

	if (nfdbus_stale(nlh, t))
		return MNL_CB_OK;
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		if (mnl_nlmsg_size(off) <= nlh->nlmsg_len)
			mnl_attr_parse(nlh, off, nfdbus_ext_ack_attr, t->h);
	}
	if (e->error) {
		errno = -e->error;
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

/* NLMSG_DONE ends a dump, with the error that stopped it if any. */
static int nfdbus_done_cb(const struct nlmsghdr *nlh, void *data)
{
	const int *err = mnl_nlmsg_get_payload(nlh);

	if (nfdbus_stale(nlh, data))
		return MNL_CB_OK;
	if (nlh->nlmsg_len >= mnl_nlmsg_size(sizeof(*err)) && *err < 0) {
		errno = -*err;
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

/* A reply: to the callback, until it failed or stopped. */
static int nfdbus_data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus_talk_ctx *t = data;
	int ret;

	if (nfdbus_stale(nlh, t) || !t->cb || t->err || t->stopped)
		return MNL_CB_OK;
	errno = 0;
	ret = t->cb(nlh, t->data);
	if (ret == MNL_CB_ERROR)
		t->err = errno ? errno : EPROTO;
	else if (ret == MNL_CB_STOP)
		t->stopped = true;
	return MNL_CB_OK;
}

/*
 * Send nlh and run cb on the replies until the ack or the end of a dump.
 * All of them are read, whatever cb returns: 0, the error cb gave (its
 * errno), or the kernel's.
 */
static int nfdbus_talk(struct nfdbus *h, struct nlmsghdr *nlh,
		       mnl_cb_t cb, void *data)
{
	/* libmnl runs no default for a type below the array's length */
	mnl_cb_t ctl[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR] = nfdbus_error_cb,
		[NLMSG_DONE] = nfdbus_done_cb,
	};
	struct nfdbus_talk_ctx t = {
		.h = h, .cb = cb, .data = data, .seq = nlh->nlmsg_seq,
	};
	ssize_t n;
	int ret;

	h->err[0] = '\0';
	if (mnl_socket_sendto(h->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		n = mnl_socket_recvfrom(h->nl, h->buf, sizeof(h->buf));
		if (n < 0)
			return -errno;
		errno = 0;
		/* seq 0: the callbacks skip other requests' replies */
		ret = mnl_cb_run2(h->buf, n, 0, h->portid, nfdbus_data_cb, &t,
				  ctl, MNL_ARRAY_SIZE(ctl));
		if (ret < 0 && !t.err)
			return errno ? -errno : -EPROTO;
		if (ret <= MNL_CB_STOP)
			return t.err ? -t.err : 0;
	}
}

static int nfdbus_family_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus *h = data;
	struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID &&
		    mnl_attr_validate(attr, MNL_TYPE_U16) >= 0)
			h->family = mnl_attr_get_u16(attr);
	return MNL_CB_OK;
}

/* Find the family on the bound socket h->nl; frees h on failure. */
static struct nfdbus *nfdbus_setup(struct nfdbus *h)
{
	struct nlmsghdr *nlh;
	int one = 1, err;

	/* the kernel's reasons come as extended acks; fine without them */
	mnl_socket_setsockopt(h->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	h->portid = mnl_socket_get_portid(h->nl);
	h->seq = time(NULL);

	nlh = nfdbus_msg(h, GENL_ID_CTRL, 1, CTRL_CMD_GETFAMILY, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, NFDBUS_GENL_NAME);
	err = nfdbus_talk(h, nlh, nfdbus_family_cb, h);
	if (err) {
		/* ENOENT: no such family, the nfdbus module is not there */
		errno = -err;
		goto fail;
	}
	if (!h->family) {
		/* an ack without the reply that carries the family's id */
		errno = EPROTO;
		goto fail;
	}
	return h;
fail:
	err = errno;
	nfdbus_close(h);
	errno = err;
	return NULL;
}

struct nfdbus *nfdbus_open(void)
{
	struct nfdbus *h;
	int err;

	h = nfdbus_zalloc(sizeof(*h));
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * The socket has the rights of its opener (a bus's owner keeps them
	 * after dropping privileges): never leak it into exec'd programs.
	 */
	h->nl = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!h->nl || mnl_socket_bind(h->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = errno;
		nfdbus_close(h);
		errno = err;
		return NULL;
	}
	return nfdbus_setup(h);
}

struct nfdbus *nfdbus_fdopen(int fd)
{
	struct nfdbus *h;
	int err;

	h = nfdbus_zalloc(sizeof(*h));
	if (!h) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	h->nl = mnl_socket_fdopen(fd);
	if (!h->nl) {
		err = errno;
		nfdbus_free(h);
		close(fd);
		errno = err;
		return NULL;
	}
	return nfdbus_setup(h);
}

int nfdbus_fd(const struct nfdbus *h)
{
	return mnl_socket_get_fd(h->nl);
}

void nfdbus_close(struct nfdbus *h)
{
	if (!h)
		return;
	if (h->nl)
		mnl_socket_close(h->nl);
	nfdbus_free(h);
}

int nfdbus_bus_parse(struct nfdbus_bus *bus, const char *text)
{
	size_t len = strlen(text);

	memset(bus, 0, sizeof(*bus));
	if (text[0] == '@') {
		/* "\0name": the NUL, then the name without its own NUL */
		if (len < 2 || len > sizeof(bus->path))
			return -EINVAL;
		memcpy(bus->path + 1, text + 1, len - 1);
		bus->len = len;
		return 0;
	}
	if (!len || len + 1 > sizeof(bus->path))
		return -EINVAL;
	memcpy(bus->path, text, len + 1);
	bus->len = len + 1;
	return 0;
}

void nfdbus_bus_set_master(struct nfdbus_bus *bus, int fd)
{
	bus->has_master_fd = 1;
	bus->master_fd = fd;
}

int nfdbus_bus_from_master(struct nfdbus_bus *bus, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	size_t off = offsetof(struct sockaddr_bus, sbus_path);

	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	if (sa.sbus_family != NFDBUS_AF_BUS || len <= off ||
	    len > sizeof(sa))
		return -EINVAL;
	memset(bus, 0, sizeof(*bus));
	bus->len = len - off;
	memcpy(bus->path, sa.sbus_path, bus->len);
	nfdbus_bus_set_master(bus, fd);
	return 0;
}

static struct nlmsghdr *nfdbus_request(struct nfdbus *h, uint8_t cmd,
				       uint16_t flags,
				       const struct nfdbus_bus *bus,
				       const uint64_t *peer)
{
	struct nlmsghdr *nlh = nfdbus_msg(h, h->family, NFDBUS_GENL_VERSION, cmd,
					  flags);

	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, bus->len, bus->path);
	if (bus->has_master_fd)
		mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FD, bus->master_fd);
	if (peer)
		mnl_attr_put_u64(nlh, NFDBUS_A_PEER, *peer);
	return nlh;
}

int nfdbus_add_match(struct nfdbus *h, const struct nfdbus_bus *bus,
		     uint64_t peer, const char *rule,
		     const uint64_t *sender_addr)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_ADD_MATCH, NLM_F_ACK, bus, &peer);
	if (sender_addr)
		mnl_attr_put_u64(nlh, NFDBUS_A_SENDER_ADDR, *sender_addr);
	if (!mnl_attr_put_strz_check(nlh, sizeof(h->buf), NFDBUS_A_RULE, rule))
		return -EMSGSIZE;
	return nfdbus_talk(h, nlh, NULL, NULL);
}

int nfdbus_remove_match(struct nfdbus *h, const struct nfdbus_bus *bus,
			uint64_t peer, const char *rule)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_REMOVE_MATCH, NLM_F_ACK, bus, &peer);
	if (!mnl_attr_put_strz_check(nlh, sizeof(h->buf), NFDBUS_A_RULE, rule))
		return -EMSGSIZE;
	return nfdbus_talk(h, nlh, NULL, NULL);
}

int nfdbus_flush(struct nfdbus *h, const struct nfdbus_bus *bus,
		 uint64_t peer)
{
	return nfdbus_talk(h, nfdbus_request(h, NFDBUS_CMD_FLUSH, NLM_F_ACK,
					     bus, &peer), NULL, NULL);
}

struct nfdbus_list_ctx {
	nfdbus_rule_cb	cb;
	void		*data;
	int		count;
};

static int nfdbus_list_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus_list_ctx *ctx = data;
	struct nfdbus_rule_info info = { 0 };
	struct nlattr *attr;
	int ret;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(attr)) {
		case NFDBUS_A_PEER:
			if (mnl_attr_validate(attr, MNL_TYPE_U64) >= 0)
				info.peer = mnl_attr_get_u64(attr);
			break;
		case NFDBUS_A_RULE:
			if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
				info.rule = mnl_attr_get_str(attr);
			break;
		case NFDBUS_A_SENDER_ADDR:
			if (mnl_attr_validate(attr, MNL_TYPE_U64) >= 0) {
				info.has_sender_addr = 1;
				info.sender_addr = mnl_attr_get_u64(attr);
			}
			break;
		default:	/* newer attributes */
			break;
		}
	}
	if (!info.rule) {
		errno = EPROTO;
		return MNL_CB_ERROR;
	}
	ctx->count++;
	if (ctx->cb) {
		ret = ctx->cb(&info, ctx->data);
		if (ret < 0) {
			errno = -ret;
			return MNL_CB_ERROR;
		}
	}
	return MNL_CB_OK;
}

int nfdbus_list(struct nfdbus *h, const struct nfdbus_bus *bus,
		const uint64_t *peer, nfdbus_rule_cb cb, void *data)
{
	struct nfdbus_list_ctx ctx = { .cb = cb, .data = data };
	int err;

	err = nfdbus_talk(h, nfdbus_request(h, NFDBUS_CMD_GET_MATCH,
					    NLM_F_DUMP, bus, peer),
			  nfdbus_list_cb, &ctx);
	return err ? err : ctx.count;
}

static int nfdbus_stats_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus_stats *stats = data;
	struct nlattr *attr, *nest;

	mnl_attr_for_each(nest, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(nest) != NFDBUS_A_STATS)
			continue;
		mnl_attr_for_each_nested(attr, nest) {
			if (mnl_attr_validate(attr, MNL_TYPE_U64) < 0)
				continue;
			switch (mnl_attr_get_type(attr)) {
			case NFDBUS_STAT_PARSED:
				stats->parsed = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_MALFORMED:
				stats->malformed = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_OVERSIZED:
				stats->oversized = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_FILTERED:
				stats->filtered = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_FORGED:
				stats->forged = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_DENIED:
				stats->denied = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_UNREQUESTED:
				stats->unrequested = mnl_attr_get_u64(attr);
				break;
			case NFDBUS_STAT_REPLIES_EXCEEDED:
				stats->replies_exceeded = mnl_attr_get_u64(attr);
				break;
			default:	/* newer counters */
				break;
			}
		}
	}
	return MNL_CB_OK;
}

int nfdbus_get_stats(struct nfdbus *h, struct nfdbus_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	return nfdbus_talk(h, nfdbus_msg(h, h->family, NFDBUS_GENL_VERSION,
					 NFDBUS_CMD_GET_STATS, NLM_F_ACK),
			   nfdbus_stats_cb, stats);
}

int nfdbus_set_bus_type(struct nfdbus *h, const struct nfdbus_bus *bus,
			uint32_t flags, uint32_t max_replies,
			uint32_t reply_timeout_ms, const char *type)
{
	struct nlmsghdr *nlh;

	if (type && strlen(type) >= NFDBUS_BUS_TYPE_MAX)
		return -ENAMETOOLONG;
	nlh = nfdbus_request(h, NFDBUS_CMD_SET_BUS, NLM_F_ACK, bus, NULL);
	mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FLAGS, flags);
	if (flags & NFDBUS_BUS_REPLIES) {
		if (max_replies)
			mnl_attr_put_u32(nlh, NFDBUS_A_MAX_REPLIES, max_replies);
		mnl_attr_put_u32(nlh, NFDBUS_A_REPLY_TIMEOUT, reply_timeout_ms);
	}
	if (type)
		mnl_attr_put_strz(nlh, NFDBUS_A_BUS_TYPE, type);
	return nfdbus_talk(h, nlh, NULL, NULL);
}

int nfdbus_set_bus(struct nfdbus *h, const struct nfdbus_bus *bus,
		   uint32_t flags, uint32_t max_replies,
		   uint32_t reply_timeout_ms)
{
	return nfdbus_set_bus_type(h, bus, flags, max_replies,
				   reply_timeout_ms, NULL);
}

int nfdbus_set_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t flags)
{
	return nfdbus_set_bus(h, bus, flags, 0, 0);
}

/* The reply to NFDBUS_CMD_GET_BUS: flags, max replies, reply timeout. */
struct nfdbus_bus_info {
	uint32_t	flags;
	uint32_t	max_replies;
	uint32_t	reply_timeout;
	int		have_flags;
};

/* EPROTO without the flags; the reply limits are optional (older nfdbus). */
static int nfdbus_bus_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus_bus_info *bi = data;
	struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			continue;
		switch (mnl_attr_get_type(attr)) {
		case NFDBUS_A_BUS_FLAGS:
			bi->flags = mnl_attr_get_u32(attr);
			bi->have_flags = 1;
			break;
		case NFDBUS_A_MAX_REPLIES:
			bi->max_replies = mnl_attr_get_u32(attr);
			break;
		case NFDBUS_A_REPLY_TIMEOUT:
			bi->reply_timeout = mnl_attr_get_u32(attr);
			break;
		default:	/* newer attributes */
			break;
		}
	}
	if (!bi->have_flags) {
		errno = EPROTO;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int nfdbus_get_bus(struct nfdbus *h, const struct nfdbus_bus *bus,
		   uint32_t *flags, uint32_t *max_replies,
		   uint32_t *reply_timeout_ms)
{
	struct nfdbus_bus_info bi = { 0 };
	int err;

	err = nfdbus_talk(h, nfdbus_request(h, NFDBUS_CMD_GET_BUS, NLM_F_ACK,
					    bus, NULL),
			  nfdbus_bus_cb, &bi);
	if (flags)
		*flags = bi.flags;
	if (max_replies)
		*max_replies = bi.max_replies;
	if (reply_timeout_ms)
		*reply_timeout_ms = bi.reply_timeout;
	return err;
}

int nfdbus_get_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t *flags)
{
	return nfdbus_get_bus(h, bus, flags, NULL, NULL);
}

/* Room a rule takes in a request: what nfdbus_put_policy_rule() puts. */
static size_t nfdbus_policy_rule_size(const struct nfdbus_policy_rule *r)
{
	const char *strs[] = { r->path, r->interface, r->member, r->error };
	size_t size = MNL_ATTR_HDRLEN + 2 * MNL_ALIGN(MNL_ATTR_HDRLEN + 1);
	unsigned int i;

	if (r->type)
		size += MNL_ALIGN(MNL_ATTR_HDRLEN + 1);
	if (r->flags)
		size += MNL_ALIGN(MNL_ATTR_HDRLEN + 4);
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i])
			size += MNL_ALIGN(MNL_ATTR_HDRLEN + strlen(strs[i]) + 1);
	if (r->has_addr)
		size += MNL_ALIGN(MNL_ATTR_HDRLEN + 8);
	return size;
}

size_t nfdbus_policy_size(const struct nfdbus_policy_rule *rules, size_t n)
{
	size_t size = MNL_ATTR_HDRLEN, i;

	for (i = 0; i < n; i++)
		size += nfdbus_policy_rule_size(&rules[i]);
	return size;
}

static void nfdbus_put_policy_rule(struct nlmsghdr *nlh,
				   const struct nfdbus_policy_rule *r)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, NFDBUS_A_POLICY_RULE);

	mnl_attr_put_u8(nlh, NFDBUS_POLICY_A_DIRECTION, r->direction);
	mnl_attr_put_u8(nlh, NFDBUS_POLICY_A_ALLOW, r->allow);
	if (r->type)
		mnl_attr_put_u8(nlh, NFDBUS_POLICY_A_TYPE, r->type);
	if (r->flags)
		mnl_attr_put_u32(nlh, NFDBUS_POLICY_A_FLAGS, r->flags);
	if (r->path)
		mnl_attr_put_strz(nlh, NFDBUS_POLICY_A_PATH, r->path);
	if (r->interface)
		mnl_attr_put_strz(nlh, NFDBUS_POLICY_A_INTERFACE, r->interface);
	if (r->member)
		mnl_attr_put_strz(nlh, NFDBUS_POLICY_A_MEMBER, r->member);
	if (r->error)
		mnl_attr_put_strz(nlh, NFDBUS_POLICY_A_ERROR, r->error);
	if (r->has_addr)
		mnl_attr_put_u64(nlh, NFDBUS_POLICY_A_PEER_ADDR, r->addr);
	mnl_attr_nest_end(nlh, nest);
}

int nfdbus_set_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id, const struct nfdbus_policy_rule *rules,
		      size_t n)
{
	struct nlattr *list;
	struct nlmsghdr *nlh;
	size_t size, list_size, i;
	void *buf;
	int err;

	/*
	 * Refused here rather than sent wrong: the kernel takes no more
	 * rules, and the length of the attribute that holds them is 16 bits
	 * (libmnl would cut it, and the kernel see other rules).
	 */
	if (n > NFDBUS_POLICY_RULES_MAX) {
		snprintf(h->err, sizeof(h->err),
			 "a policy of %zu rules (the kernel takes %d at most)",
			 n, NFDBUS_POLICY_RULES_MAX);
		return -E2BIG;
	}
	list_size = nfdbus_policy_size(rules, n);
	if (list_size > NFDBUS_POLICY_SIZE_MAX) {
		snprintf(h->err, sizeof(h->err),
			 "a policy of %zu bytes (a request holds %d at most)",
			 list_size, NFDBUS_POLICY_SIZE_MAX);
		return -EMSGSIZE;
	}
	size = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct genlmsghdr)) +
	       MNL_ALIGN(MNL_ATTR_HDRLEN + sizeof(bus->path)) +
	       3 * MNL_ALIGN(MNL_ATTR_HDRLEN + 4) + list_size;
	buf = nfdbus_zalloc(size);
	if (!buf)
		return -ENOMEM;
	nlh = nfdbus_msg_in(h, buf, h->family, NFDBUS_GENL_VERSION,
			    NFDBUS_CMD_SET_POLICY, NLM_F_ACK);
	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, bus->len, bus->path);
	if (bus->has_master_fd)
		mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FD, bus->master_fd);
	mnl_attr_put_u32(nlh, NFDBUS_A_POLICY_ID, id);
	list = mnl_attr_nest_start(nlh, NFDBUS_A_POLICY_RULES);
	for (i = 0; i < n; i++)
		nfdbus_put_policy_rule(nlh, &rules[i]);
	mnl_attr_nest_end(nlh, list);
	err = nfdbus_talk(h, nlh, NULL, NULL);
	nfdbus_free(buf);
	return err;
}

int nfdbus_del_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_DEL_POLICY, NLM_F_ACK, bus, NULL);
	mnl_attr_put_u32(nlh, NFDBUS_A_POLICY_ID, id);
	return nfdbus_talk(h, nlh, NULL, NULL);
}

int nfdbus_set_peer_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
			   uint64_t peer, uint32_t id)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_SET_PEER_POLICY, NLM_F_ACK, bus,
			     &peer);
	if (id)
		mnl_attr_put_u32(nlh, NFDBUS_A_POLICY_ID, id);
	return nfdbus_talk(h, nlh, NULL, NULL);
}

int nfdbus_set_peer(struct nfdbus *h, const struct nfdbus_bus *bus,
		    uint64_t peer, uint32_t flags)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_SET_PEER, NLM_F_ACK, bus, &peer);
	mnl_attr_put_u32(nlh, NFDBUS_A_PEER_FLAGS, flags);
	return nfdbus_talk(h, nlh, NULL, NULL);
}

/* The reply to NFDBUS_CMD_GET_POLICY: id, nrules, refs. */
struct nfdbus_policy_info {
	uint32_t	v[3];
	int		have_id;
};

static int nfdbus_policy_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nfdbus_policy_info *pi = data;
	struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			continue;
		switch (mnl_attr_get_type(attr)) {
		case NFDBUS_A_POLICY_ID:
			pi->v[0] = mnl_attr_get_u32(attr);
			pi->have_id = 1;
			break;
		case NFDBUS_A_POLICY_NRULES:
			pi->v[1] = mnl_attr_get_u32(attr);
			break;
		case NFDBUS_A_POLICY_REFS:
			pi->v[2] = mnl_attr_get_u32(attr);
			break;
		default:	/* newer attributes */
			break;
		}
	}
	if (!pi->have_id) {
		errno = EPROTO;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int nfdbus_get_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id, uint32_t *nrules, uint32_t *refs)
{
	struct nfdbus_policy_info pi = { { 0 }, 0 };
	struct nlmsghdr *nlh;
	int err;

	nlh = nfdbus_request(h, NFDBUS_CMD_GET_POLICY, NLM_F_ACK, bus, NULL);
	mnl_attr_put_u32(nlh, NFDBUS_A_POLICY_ID, id);
	err = nfdbus_talk(h, nlh, nfdbus_policy_cb, &pi);
	*nrules = pi.v[1];
	*refs = pi.v[2];
	return err;
}

int nfdbus_get_peer_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
			   uint64_t peer, uint32_t *id)
{
	struct nfdbus_policy_info pi = { { 0 }, 0 };
	int err;

	err = nfdbus_talk(h, nfdbus_request(h, NFDBUS_CMD_GET_POLICY,
					    NLM_F_ACK, bus, &peer),
			  nfdbus_policy_cb, &pi);
	*id = pi.v[0];
	return err;
}

int nfdbus_policy_rule_parse(struct nfdbus_policy_rule *rule, char *text)
{
	static const char *const types[] = {
		"", "method_call", "method_return", "error", "signal",
	};
	char *word, *save = NULL, *val, *end;
	int verdict = 0, direction = 0;
	unsigned int t;

	memset(rule, 0, sizeof(*rule));
	for (word = strtok_r(text, ",", &save); word;
	     word = strtok_r(NULL, ",", &save)) {
		val = strchr(word, '=');
		if (val)
			*val++ = '\0';
		if (!val && (!strcmp(word, "allow") || !strcmp(word, "deny"))) {
			rule->allow = !strcmp(word, "allow");
			verdict++;
		} else if (!val && (!strcmp(word, "send") ||
				    !strcmp(word, "receive"))) {
			rule->direction = !strcmp(word, "send") ?
					  NFDBUS_POLICY_SEND : NFDBUS_POLICY_RECEIVE;
			direction++;
		} else if (!val && !strcmp(word, "broadcast")) {
			rule->flags |= NFDBUS_POLICY_F_BROADCAST;
		} else if (!val && !strcmp(word, "not-broadcast")) {
			rule->flags |= NFDBUS_POLICY_F_NOT_BROADCAST;
		} else if (!val && !strcmp(word, "not-replies")) {
			rule->flags |= NFDBUS_POLICY_F_NOT_REPLIES;
		} else if (!val && !strcmp(word, "requested-only")) {
			rule->flags |= NFDBUS_POLICY_F_REQUESTED_ONLY;
		} else if (val && !strcmp(word, "type")) {
			for (t = 1; t < sizeof(types) / sizeof(types[0]); t++)
				if (!strcmp(val, types[t]))
					rule->type = t;
			if (!rule->type)
				return -EINVAL;
		} else if (val && !strcmp(word, "path")) {
			rule->path = val;
		} else if (val && !strcmp(word, "interface")) {
			rule->interface = val;
		} else if (val && !strcmp(word, "member")) {
			rule->member = val;
		} else if (val && !strcmp(word, "error")) {
			rule->error = val;
		} else if (val && !strcmp(word, "addr")) {
			errno = 0;
			rule->addr = strtoull(val, &end, 0);
			if (errno || !*val || *end || *val == '-')
				return -EINVAL;
			rule->has_addr = 1;
		} else {
			return -EINVAL;
		}
	}
	return verdict == 1 && direction == 1 ? 0 : -EINVAL;
}

static int nfdbus_count_cb(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	++*(int *)data;
	return MNL_CB_OK;
}

int nfdbus_request_raw(struct nfdbus *h, uint8_t cmd, uint16_t flags,
		       const void *attrs, size_t len)
{
	struct nlmsghdr *nlh;
	int count = 0, err;

	if (len > sizeof(h->buf) - mnl_nlmsg_size(MNL_ALIGN(sizeof(struct genlmsghdr))))
		return -EMSGSIZE;
	nlh = nfdbus_msg(h, h->family, NFDBUS_GENL_VERSION, cmd,
			 NLM_F_ACK | flags);
	memset(mnl_nlmsg_get_payload_tail(nlh), 0, MNL_ALIGN(len));
	memcpy(mnl_nlmsg_get_payload_tail(nlh), attrs, len);
	nlh->nlmsg_len += MNL_ALIGN(len);
	err = nfdbus_talk(h, nlh, nfdbus_count_cb, &count);
	return err ? err : count;
}
