// SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later
/*
 * libnfdbus: the nfdbus generic netlink family, on libmnl.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netfilter/nfdbus.h>
#include <linux/netlink.h>

#include "libnfdbus.h"

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

/* What the callbacks of one exchange get. */
struct nfdbus_talk_ctx {
	struct nfdbus	*h;
	mnl_cb_t	cb;
	void		*data;
};

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

	(void)data;
	if (nlh->nlmsg_len >= mnl_nlmsg_size(sizeof(*err)) && *err < 0) {
		errno = -*err;
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

static int nfdbus_data_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nfdbus_talk_ctx *t = data;

	return t->cb ? t->cb(nlh, t->data) : MNL_CB_OK;
}

/* Send nlh and run cb on the replies until the ack or the end of a dump. */
static int nfdbus_talk(struct nfdbus *h, struct nlmsghdr *nlh,
		       mnl_cb_t cb, void *data)
{
	/* libmnl runs no default for a type below the array's length */
	mnl_cb_t ctl[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR] = nfdbus_error_cb,
		[NLMSG_DONE] = nfdbus_done_cb,
	};
	struct nfdbus_talk_ctx t = { .h = h, .cb = cb, .data = data };
	unsigned int seq = nlh->nlmsg_seq;
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
		ret = mnl_cb_run2(h->buf, n, seq, h->portid, nfdbus_data_cb, &t,
				  ctl, MNL_ARRAY_SIZE(ctl));
		if (ret < 0)
			return errno ? -errno : -EPROTO;
		if (ret == MNL_CB_STOP)
			return 0;
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

struct nfdbus *nfdbus_open(void)
{
	struct nlmsghdr *nlh;
	struct nfdbus *h;
	int one = 1, err;

	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->nl = mnl_socket_open(NETLINK_GENERIC);
	if (!h->nl)
		goto fail;
	if (mnl_socket_bind(h->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		goto fail;
	/* the kernel's reasons come as extended acks; fine without them */
	mnl_socket_setsockopt(h->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	h->portid = mnl_socket_get_portid(h->nl);
	h->seq = time(NULL);

	nlh = nfdbus_msg(h, GENL_ID_CTRL, 1, CTRL_CMD_GETFAMILY, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, NFDBUS_GENL_NAME);
	err = nfdbus_talk(h, nlh, nfdbus_family_cb, h);
	if (err || !h->family) {
		/* no such family: the nfdbus module is not there */
		errno = err ? -err : ENOENT;
		goto fail;
	}
	return h;
fail:
	err = errno;
	nfdbus_close(h);
	errno = err;
	return NULL;
}

void nfdbus_close(struct nfdbus *h)
{
	if (!h)
		return;
	if (h->nl)
		mnl_socket_close(h->nl);
	free(h);
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

static struct nlmsghdr *nfdbus_request(struct nfdbus *h, uint8_t cmd,
				       uint16_t flags,
				       const struct nfdbus_bus *bus,
				       const uint64_t *peer)
{
	struct nlmsghdr *nlh = nfdbus_msg(h, h->family, NFDBUS_GENL_VERSION, cmd,
					  flags);

	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, bus->len, bus->path);
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

int nfdbus_set_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t flags)
{
	struct nlmsghdr *nlh;

	nlh = nfdbus_request(h, NFDBUS_CMD_SET_BUS, NLM_F_ACK, bus, NULL);
	mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FLAGS, flags);
	return nfdbus_talk(h, nlh, NULL, NULL);
}

/* The reply to NFDBUS_CMD_GET_BUS; EPROTO without the flags. */
static int nfdbus_bus_flags_cb(const struct nlmsghdr *nlh, void *data)
{
	uint32_t *flags = data;
	struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(attr) == NFDBUS_A_BUS_FLAGS &&
		    mnl_attr_validate(attr, MNL_TYPE_U32) >= 0) {
			*flags = mnl_attr_get_u32(attr);
			return MNL_CB_OK;
		}
	errno = EPROTO;
	return MNL_CB_ERROR;
}

int nfdbus_get_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t *flags)
{
	*flags = 0;
	return nfdbus_talk(h, nfdbus_request(h, NFDBUS_CMD_GET_BUS, NLM_F_ACK,
					     bus, NULL),
			   nfdbus_bus_flags_cb, flags);
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
