/* SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later */
/*
 * libnfdbus: the nfdbus generic netlink family (D-Bus match rules of
 * AF_BUS buses in the kernel), on libmnl. See
 * Documentation/networking/nfdbus.rst in the kernel patches.
 *
 * Every function returns 0 (or a count) on success and a negative errno
 * on failure; nfdbus_error() then gives the kernel's message, if any.
 */
#ifndef LIBNFDBUS_H
#define LIBNFDBUS_H

#include <stddef.h>
#include <stdint.h>

/* Longest sbus_path, as BUS_PATH_MAX of <linux/bus.h> */
#define NFDBUS_BUS_PATH_MAX	108

struct nfdbus;

/*
 * A bus name: the sbus_path bytes its master bound.  A bus master that
 * has no CAP_NET_ADMIN names its bus through its own socket too
 * (nfdbus_bus_set_master()): the kernel lets a request manage a bus when
 * the process making it holds the master's socket (NFDBUS_A_BUS_FD), or
 * when it has CAP_NET_ADMIN, as has the process that opened the netlink
 * socket.
 */
struct nfdbus_bus {
	char	path[NFDBUS_BUS_PATH_MAX];
	size_t	len;
	int	has_master_fd;	/* master_fd is set */
	int	master_fd;	/* the master's bound or accepted socket */
};

struct nfdbus_stats {
	uint64_t	parsed;
	uint64_t	malformed;
	uint64_t	oversized;
	uint64_t	filtered;
	uint64_t	forged;
	uint64_t	denied;
	uint64_t	unrequested;		/* NFDBUS_STAT_UNREQUESTED */
	uint64_t	replies_exceeded;	/* NFDBUS_STAT_REPLIES_EXCEEDED */
};

/* One rule of a dump. */
struct nfdbus_rule_info {
	uint64_t	peer;
	const char	*rule;
	int		has_sender_addr;
	uint64_t	sender_addr;
};

typedef int (*nfdbus_rule_cb)(const struct nfdbus_rule_info *info,
			      void *data);

/*
 * Open a netlink socket (close-on-exec) and find the family; NULL and
 * errno on failure: ENOENT when the kernel has no nfdbus family, EPROTO
 * when the reply with its id never came (only the acknowledgement did).
 * The kernel lets the socket manage a bus if whoever opened it could (the
 * bus master's uid, or CAP_NET_ADMIN), whatever the credentials of the
 * process that uses it later: open it before dropping privileges, and
 * hand it only to processes that may manage the bus.
 */
struct nfdbus *nfdbus_open(void);
/*
 * The allocator of the handles and of the requests too big for a
 * handle's buffer (policies): zalloc returns zeroed memory or NULL,
 * release frees it; NULL for calloc and free (the default).  A program
 * with its own allocator (dbus-daemon: dbus_malloc0 and dbus_free, whose
 * failure injection then reaches libnfdbus) sets it before anything
 * else, once.  libmnl's socket itself comes from malloc.
 */
void nfdbus_set_allocator(void *(*zalloc)(size_t size),
			  void (*release)(void *ptr));
/*
 * A handle on a netlink socket received from another process (or
 * inherited), bound and of family NETLINK_GENERIC. The handle takes the
 * fd over: nfdbus_close() closes it, and so does a failure (NULL and
 * errno).
 */
struct nfdbus *nfdbus_fdopen(int fd);
/* The handle's socket, to pass to another process. */
int nfdbus_fd(const struct nfdbus *h);
void nfdbus_close(struct nfdbus *h);
/* The kernel's extended ack message of the last failure, or "". */
const char *nfdbus_error(const struct nfdbus *h);

/*
 * "/some/path" is a filesystem path (with its NUL), "@name" the abstract
 * name "\0name". Returns 0 or -EINVAL (empty or too long).
 */
int nfdbus_bus_parse(struct nfdbus_bus *bus, const char *text);
/*
 * The bus of an AF_BUS socket of its master (the bound socket or an
 * accepted one), which every request for the bus then names: what lets
 * the master manage its bus without CAP_NET_ADMIN.  Returns 0 or
 * -errno (of getsockname(), or -EINVAL for another kind of socket).
 */
int nfdbus_bus_from_master(struct nfdbus_bus *bus, int fd);
/* Name @fd, a socket of the master, in the requests for @bus. */
void nfdbus_bus_set_master(struct nfdbus_bus *bus, int fd);

int nfdbus_add_match(struct nfdbus *h, const struct nfdbus_bus *bus,
		     uint64_t peer, const char *rule,
		     const uint64_t *sender_addr);
int nfdbus_remove_match(struct nfdbus *h, const struct nfdbus_bus *bus,
			uint64_t peer, const char *rule);
int nfdbus_flush(struct nfdbus *h, const struct nfdbus_bus *bus,
		 uint64_t peer);
/* Calls cb for each rule of the bus (of peer, if not NULL); returns how
 * many there were, or a negative errno (or what cb returned, if < 0).
 * Once cb returned < 0, it is called no more, but the rest of the dump
 * is read all the same: the handle stays usable for the next request.
 */
int nfdbus_list(struct nfdbus *h, const struct nfdbus_bus *bus,
		const uint64_t *peer, nfdbus_rule_cb cb, void *data);
int nfdbus_get_stats(struct nfdbus *h, struct nfdbus_stats *stats);

/* The NFDBUS_BUS_* flags of a bus (NFDBUS_BUS_CHECK_SENDER): set them
 * all at once (the bus is managed from then on), or read them.
 */
int nfdbus_set_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t flags);
int nfdbus_get_bus_flags(struct nfdbus *h, const struct nfdbus_bus *bus,
			 uint32_t *flags);
/*
 * The same, with the reply tracking of NFDBUS_BUS_REPLIES: how many
 * method calls one client may await replies to at once (max_replies, 1
 * to NFDBUS_MAX_REPLIES_MAX; 0 leaves the kernel's value, by default
 * NFDBUS_MAX_REPLIES_DEFAULT) and after how many milliseconds a reply is
 * no longer awaited (reply_timeout_ms, 0 for never). Both are sent only
 * with NFDBUS_BUS_REPLIES in flags, so that a kernel without reply
 * tracking gets the request nfdbus_set_bus_flags() would send (and
 * refuses the flag with EINVAL).
 */
int nfdbus_set_bus(struct nfdbus *h, const struct nfdbus_bus *bus,
		   uint32_t flags, uint32_t max_replies,
		   uint32_t reply_timeout_ms);
/*
 * The same, naming the bus's type (NFDBUS_A_BUS_TYPE) as dbus-daemon's
 * configuration does (<type>system</type>; at most NFDBUS_BUS_TYPE_MAX - 1
 * bytes), or not (NULL): the bus= of the LSMs' D-Bus rules, AppArmor's,
 * which the kernel matches messages between clients against. The type is
 * set once: another one fails with EBUSY, the same one again is fine.
 */
int nfdbus_set_bus_type(struct nfdbus *h, const struct nfdbus_bus *bus,
			uint32_t flags, uint32_t max_replies,
			uint32_t reply_timeout_ms, const char *type);
/* Any of the pointers may be NULL; *max_replies is 0 when the kernel does
 * not say (no reply tracking).
 */
int nfdbus_get_bus(struct nfdbus *h, const struct nfdbus_bus *bus,
		   uint32_t *flags, uint32_t *max_replies,
		   uint32_t *reply_timeout_ms);

/* One rule of a policy (NFDBUS_POLICY_A_*); strings are NULL when absent. */
struct nfdbus_policy_rule {
	uint8_t		direction;	/* NFDBUS_POLICY_SEND or _RECEIVE */
	uint8_t		allow;		/* 1 allow, 0 deny */
	uint8_t		type;		/* D-Bus message type, 0 for any */
	uint32_t	flags;		/* NFDBUS_POLICY_F_* */
	const char	*path;
	const char	*interface;
	const char	*member;
	const char	*error;
	int		has_addr;
	uint64_t	addr;		/* recipient's (send), sender's (receive) */
};

/*
 * The most bytes the rules of one policy take in a request: the length
 * of the netlink attribute that holds them is 16 bits.
 */
#define NFDBUS_POLICY_SIZE_MAX	65535

/*
 * The bytes the n rules take in a request (NFDBUS_A_POLICY_RULES, with
 * its header): at most NFDBUS_POLICY_SIZE_MAX for nfdbus_set_policy().
 */
size_t nfdbus_policy_size(const struct nfdbus_policy_rule *rules, size_t n);
/*
 * Create policy id of the bus, or replace its rules, with the n rules.
 * -E2BIG for more than NFDBUS_POLICY_RULES_MAX rules and -EMSGSIZE for
 * more than NFDBUS_POLICY_SIZE_MAX bytes of them, without asking the
 * kernel (nfdbus_error() says how many).
 */
int nfdbus_set_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id, const struct nfdbus_policy_rule *rules,
		      size_t n);
int nfdbus_del_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id);
/* Make peer use policy id; 0 for none. */
int nfdbus_set_peer_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
			   uint64_t peer, uint32_t id);
/*
 * Set the NFDBUS_PEER_* flags of the connected client peer, all at once
 * (NFDBUS_PEER_MONITOR: the master's method calls to it are copies, and
 * await no reply). -ENOENT when no client has that address (unless flags
 * is 0), -EINVAL for an unknown flag, -EOPNOTSUPP (or -EINVAL) from a
 * kernel without the command.
 */
int nfdbus_set_peer(struct nfdbus *h, const struct nfdbus_bus *bus,
		    uint64_t peer, uint32_t flags);
/* How many rules policy id has, and how many peers use it. */
int nfdbus_get_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id, uint32_t *nrules, uint32_t *refs);
/* The policy peer uses, 0 for none. */
int nfdbus_get_peer_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
			   uint64_t peer, uint32_t *id);
/*
 * Parse the text form of a policy rule, comma-separated words: "allow" or
 * "deny", "send" or "receive", then any of type=TYPE (method_call,
 * method_return, error, signal), path=, interface=, member=, error=,
 * addr=ADDRESS, broadcast, not-broadcast, not-replies, requested-only.
 * The strings point into text, which is changed. Returns 0 or -EINVAL.
 */
int nfdbus_policy_rule_parse(struct nfdbus_policy_rule *rule, char *text);

/*
 * For tests that send what the functions above cannot (fuzzers): a
 * request of the family with command cmd, NLM_F_ACK and the extra flags
 * (NLM_F_DUMP, say), whose attributes are the len bytes at attrs,
 * already in netlink attribute format and sent as they are. Returns the
 * number of messages of the reply before the ack or the end of the dump,
 * or a negative errno.
 */
int nfdbus_request_raw(struct nfdbus *h, uint8_t cmd, uint16_t flags,
		       const void *attrs, size_t len);

#endif /* LIBNFDBUS_H */
