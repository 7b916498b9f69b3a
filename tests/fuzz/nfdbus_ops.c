// SPDX-License-Identifier: GPL-2.0
/*
 * The nfdbus operations of the AF_BUS fuzzer (af_bus_fuzz.c): netlink
 * commands of the nfdbus family, D-Bus match rules, and D-Bus messages
 * for the multicasts of BUS_PROTO_DBUS buses.  See
 * Documentation/networking/nfdbus.rst.
 *
 * Requests go through libnfdbus on a netlink socket opened for each
 * operation (in the thread's current network namespace; a long-lived
 * socket would meet the other threads' close races on its descriptor
 * number), to real buses (named as getsockname(2) gives them, or from
 * the shared pool) and bogus ones, for real peers (the addresses of
 * clients) and random ones.  Rules are valid (built from random keys
 * and values, in random order and quoting), invalid in one known way
 * (unknown key, key twice, bad type, path or name, argN past 63, path
 * with path_namespace, unterminated quote, ...), too long, or mutated
 * garbage; raw requests (libmnl attributes sent as they are) add
 * malformed attributes, unknown commands, rules without a NUL and rules
 * with bytes after their NUL.
 *
 * D-Bus messages are marshalled by libdbus from random fields and
 * arguments (re-marshalled big endian by GDBus), then sent as they are,
 * mutated at random, or broken in a way nfdbus must refuse.
 *
 * Besides the documented errno of every request, it checks:
 * - a policy rule out of range is never accepted (policies are set,
 *   given to peers, deleted and read, but a bus is never made to apply
 *   them);
 * - a valid rule is never refused as invalid (EINVAL) or too long
 *   (EMSGSIZE) on a real bus, and a rule with bytes after its NUL is
 *   taken as the rule before the NUL;
 * - an invalid rule, one over NFDBUS_RULE_MAX bytes, and a rule
 *   attribute without a NUL are never accepted;
 * - a dump for one peer lists rules of that peer only, at most
 *   NFDBUS_PEER_RULES_MAX, none longer than NFDBUS_RULE_MAX;
 * - the counters of a network namespace never go down;
 * - a live bus never refuses (EPERM) a request that names, in
 *   NFDBUS_A_BUS_FD, a socket of its master that the worker holds; and
 *   without one, a request always is refused: workers have no
 *   CAP_NET_ADMIN, and the master's uid is no right (issue 36);
 * - a valid D-Bus signal is never refused (EPERM), and a multicast
 *   broken in a known way, or a client's multicast that is not a signal
 *   (a forged reply, say), is never accepted on a bus this thread has
 *   just given a rule (abstract names only: a filesystem path can be
 *   taken over by a new master while the old bus lives).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include <dbus/dbus.h>
#include <gio/gio.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfdbus.h>

#include "../../nfdbus/libnfdbus.h"
#include "af_bus_fuzz.h"

/* What nfdbus.rst lists for its commands. */
#define NL_ERRS		EINVAL, EMSGSIZE, ENOSPC, ENOENT, EPROTONOSUPPORT, ENOMEM

struct fuzz_nfdbus {
	struct nfdbus *h;		/* the socket of this operation */
	bool broken;			/* ... is out of step */
};

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

static struct fuzz_nfdbus *state(struct thread_ctx *t)
{
	if (!t->nfd)
		t->nfd = calloc(1, sizeof(*t->nfd));
	return t->nfd;
}

void nfdbus_thread_end(struct thread_ctx *t)
{
	free(t->nfd);
	t->nfd = NULL;
}

/*
 * A handle for one operation.  nfdbus is built in (CONFIG_NFDBUS=y in
 * af_bus.config): a missing family (ENOENT) is a failure.
 */
static struct nfdbus *nl_open(struct thread_ctx *t)
{
	struct fuzz_nfdbus *s = state(t);
	struct nfdbus *h;

	if (!s)
		return NULL;
	s->broken = false;
	h = nfdbus_open();
	if (!h && (errno == EINTR || errno == ESRCH || errno == EPROTO ||
		   errno == EBADF || errno == ENOTSOCK || errno == EINVAL)) {
		/*
		 * The ticker's signals, or another thread's close race on a
		 * stale descriptor number that was the new netlink socket's
		 * (bind() of an AF_BUS socket to a netlink address gives
		 * EINVAL; a recv on the stale number takes the family's
		 * reply and leaves the ack, EPROTO): counted like a resync,
		 * not a failure.
		 */
		count(&sh->nl_resync);
	} else if (!h) {
		check(t, "nfdbus_open", -1, E(EMFILE, ENFILE, ENOBUFS), NULL);
	}
	s->h = h;
	return h;
}

static void nl_close(struct thread_ctx *t, struct nfdbus *h)
{
	nfdbus_close(h);
	t->nfd->h = NULL;
}

/*
 * Check the result of a request.  An interrupted exchange (EINTR: the
 * ticker's signals) or replies another thread's close race took or
 * injected (ESRCH: sequence or port mismatch) leave the socket out of
 * step; the operation ends there and closes it.
 */
static bool nl_result(struct thread_ctx *t, const char *what, int ret,
		      const int *allowed, const char *detail)
{
	char text[160];
	int fd;

	count(&sh->nl_requests);
	if (ret >= 0) {
		count(&sh->nl_ok);
		t->nops++;
		return true;
	}
	if (ret == -EINTR || ret == -ESRCH) {
		count(&sh->nl_resync);
		t->nops++;
		t->nfd->broken = true;
		return false;
	}
	/* with the kernel's extended ack, which says which check it was */
	snprintf(text, sizeof(text), "%s [%s]", detail ? detail : "",
		 t->nfd && t->nfd->h ? nfdbus_error(t->nfd->h) : "");
	fd = t->fd;
	t->fd = -1;		/* not about the descriptor of the operation */
	errno = -ret;
	check(t, what, -1, allowed, text);
	t->fd = fd;
	return true;
}

/* ---- values: small pools, so that rules and messages meet ---- */

static const char *const pool_paths[] = {
	"/", "/a", "/a/b", "/org/ex", "/org/ex/Obj_1", "/org/ex/Obj_1/c",
};
static const char *const pool_ifaces[] = {
	"org.ex.A", "org.ex.B", "org.freedesktop.DBus.Properties", "a.b",
};
static const char *const pool_members[] = {
	"Changed", "Ping", "X", "PropertiesChanged",
};
static const char *const pool_names[] = {
	":0.1", ":0.2", ":1.42", "org.ex.Svc", "org.ex.A",
};
static const char *const pool_args[] = {
	"", "a", "org.ex", "org.ex.A", "/a", "/a/", "/a/b", "x,y", "it's",
	"a\\'b", " sp",
};

#define PICK(r, a)	((a)[below(r, sizeof(a) / sizeof((a)[0]))])

/* The first 53 may start an element of a name; digits may not. */
static const char alnum[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789";

/* n elements of [A-Za-z_][A-Za-z0-9_]*, joined by sep, in out. */
static void random_elements(struct rng *r, char *out, size_t size,
			    unsigned int n, char sep, bool digit_first)
{
	size_t len = 0, max = size - 1, k, elen;
	unsigned int i;

	for (i = 0; i < n && len + 2 < max; i++) {
		if (i)
			out[len++] = sep;
		elen = 1 + below(r, chance(r, 10) ? 60 : 8);
		for (k = 0; k < elen && len < max; k++)
			out[len++] = alnum[below(r, (k || digit_first) ? 63 : 53)];
	}
	out[len] = 0;
}

/*
 * Valid values of each kind: mostly from the pools, sometimes random.
 * libdbus checks what it is given (and aborts on an invalid name), so a
 * random one it would not take is replaced by one of the pool.
 */
static void v_path(struct rng *r, char *out, size_t size)
{
	if (chance(r, 20)) {
		out[0] = '/';
		random_elements(r, out + 1, size - 1, below(r, 5), '/', true);
		if (dbus_validate_path(out, NULL))
			return;
	}
	snprintf(out, size, "%s", PICK(r, pool_paths));
}

static void v_iface(struct rng *r, char *out, size_t size)
{
	if (chance(r, 20)) {
		random_elements(r, out, size < 256 ? size : 256, 2 + below(r, 3),
				'.', false);
		if (dbus_validate_interface(out, NULL))
			return;
	}
	snprintf(out, size, "%s", PICK(r, pool_ifaces));
}

static void v_member(struct rng *r, char *out, size_t size)
{
	if (chance(r, 20)) {
		random_elements(r, out, size < 256 ? size : 256, 1, '.', false);
		if (dbus_validate_member(out, NULL))
			return;
	}
	snprintf(out, size, "%s", PICK(r, pool_members));
}

static void v_busname(struct rng *r, char *out, size_t size)
{
	if (chance(r, 10)) {
		out[0] = ':';
		random_elements(r, out + 1, size < 255 ? size - 1 : 254,
				2 + below(r, 2), '.', true);
		if (dbus_validate_bus_name(out, NULL))
			return;
	} else if (chance(r, 10)) {
		random_elements(r, out, size < 256 ? size : 256, 2 + below(r, 3),
				'.', false);
		if (dbus_validate_bus_name(out, NULL))
			return;
	}
	snprintf(out, size, "%s", PICK(r, pool_names));
}

/* A string argument: printable ASCII (libdbus wants valid UTF-8). */
static void v_string(struct rng *r, char *out, size_t size)
{
	size_t i, n;

	if (chance(r, 70)) {
		snprintf(out, size, "%s", PICK(r, pool_args));
		return;
	}
	n = below(r, chance(r, 5) ? size : 40);
	for (i = 0; i < n && i + 1 < size; i++)
		out[i] = 0x20 + below(r, 0x5f);
	out[i] = 0;
}

/* ---- match rules ---- */

#define RULE_BUF	(NFDBUS_RULE_MAX * 4)

enum rule_kind { RULE_VALID, RULE_INVALID, RULE_LONG, RULE_GARBAGE };

static const char *const rule_kinds[] = { "valid", "invalid", "too long",
					  "garbage" };

struct rule_text {
	char s[RULE_BUF];
	size_t len;
};

static void put(struct rule_text *b, const char *s, size_t n)
{
	if (b->len + n >= sizeof(b->s))
		n = sizeof(b->s) - 1 - b->len;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void puts_(struct rule_text *b, const char *s)
{
	put(b, s, strlen(s));
}

/* key=value, the value quoted one of the ways the grammar allows. */
static void put_pair(struct rng *r, struct rule_text *b, const char *key,
		     const char *val)
{
	bool safe = !strpbrk(val, ",'\\");
	const char *p;

	if (chance(r, 20))
		put(b, "  \t", 1 + below(r, 3));	/* space before a key */
	puts_(b, key);
	puts_(b, "=");
	if (safe && *val && chance(r, 30)) {
		puts_(b, val);			/* unquoted */
		return;
	}
	puts_(b, "'");
	for (p = val; *p; p++) {
		if (*p == '\'')
			puts_(b, "'\\''");	/* close, \', reopen */
		else
			put(b, p, 1);
	}
	puts_(b, "'");
}

struct pair {
	char key[24];
	char val[300];
};

/* The key=value pairs of a random valid rule. */
static unsigned int valid_pairs(struct rng *r, struct pair *p)
{
	static const char *const types[] = { "signal", "method_call",
					     "method_return", "error" };
	unsigned int n = 0, i, nargs;
	uint64_t seen = 0;
	int arg;

	if (chance(r, 40)) {
		snprintf(p[n].key, sizeof(p->key), "type");
		snprintf(p[n++].val, sizeof(p->val), "%s", PICK(r, types));
	}
	if (chance(r, 20)) {
		snprintf(p[n].key, sizeof(p->key), "sender");
		v_busname(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 40)) {
		snprintf(p[n].key, sizeof(p->key), "interface");
		v_iface(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 40)) {
		snprintf(p[n].key, sizeof(p->key), "member");
		v_member(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 30)) {
		snprintf(p[n].key, sizeof(p->key), chance(r, 50) ?
			 "path" : "path_namespace");
		v_path(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 15)) {
		snprintf(p[n].key, sizeof(p->key), "destination");
		v_busname(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 10)) {
		snprintf(p[n].key, sizeof(p->key), "arg0namespace");
		v_iface(r, p[n++].val, sizeof(p->val));
	}
	if (chance(r, 10)) {
		snprintf(p[n].key, sizeof(p->key), "eavesdrop");
		snprintf(p[n++].val, sizeof(p->val), "%s",
			 chance(r, 50) ? "true" : "false");
	}
	nargs = chance(r, 40) ? below(r, 4) : 0;
	for (i = 0; i < nargs; i++) {
		arg = chance(r, 70) ? below(r, 4) : below(r, 64);
		if (seen & (1ULL << arg))
			continue;
		seen |= 1ULL << arg;
		if (chance(r, 30)) {
			snprintf(p[n].key, sizeof(p->key), "arg%dpath", arg);
			v_path(r, p[n].val, sizeof(p->val));
			if (chance(r, 30) && strlen(p[n].val) > 1)
				strcat(p[n].val, "/");
			n++;
		} else {
			snprintf(p[n].key, sizeof(p->key), "arg%d", arg);
			v_string(r, p[n++].val, sizeof(p->val));
		}
	}
	return n;
}

/* One way of making a rule invalid; each is invalid whatever else the
 * rule has.  The unterminated quote goes last.
 */
static const char *const defects[] = {
	"bogus='1'", "type='sig'", "type=''", "path='a/b'", "path='/a//b'",
	"path='/a/'", "path_namespace=''", "interface=''", "member=''",
	"arg64='x'", "arg99='x'", "arg01='x'", "arg7pat='x'", "arg3x='x'",
	"arg3='a',arg3path='/a/'", "path='/a',path_namespace='/b'",
	"member='a',member='b'", "eavesdrop='maybe'", "type", "='x'",
	"type='signal',type='error'", "arg='x'", "sender=''",
	"member='unterminated",
};

/* A random rule in b; returns its kind. */
static enum rule_kind random_rule(struct rng *r, struct rule_text *b)
{
	struct pair pairs[16];
	unsigned int n, i, j, defect = 0, at = 0, k;
	bool invalid = false;
	enum rule_kind kind;

	b->len = 0;
	b->s[0] = 0;
	n = valid_pairs(r, pairs);
	if (chance(r, 25)) {
		invalid = true;
		defect = below(r, sizeof(defects) / sizeof(defects[0]));
		at = below(r, n + 1);
		if (!strcmp(defects[defect], "member='unterminated"))
			at = n;
	}
	/* shuffle the keys */
	for (i = n; i > 1; i--) {
		j = below(r, i);
		struct pair tmp = pairs[i - 1];

		pairs[i - 1] = pairs[j];
		pairs[j] = tmp;
	}
	for (i = 0; i <= n; i++) {
		if (invalid && i == at) {
			if (b->len)
				puts_(b, ",");
			puts_(b, defects[defect]);
		}
		if (i == n)
			break;
		if (b->len)
			puts_(b, ",");
		put_pair(r, b, pairs[i].key, pairs[i].val);
	}
	if (!invalid && b->len && chance(r, 10))
		puts_(b, ",");			/* a trailing comma is fine */
	if (chance(r, 5)) {
		/* pad with leading spaces to the limit, or one past it */
		k = NFDBUS_RULE_MAX + below(r, 2);
		if (b->len < k) {
			memmove(b->s + k - b->len, b->s, b->len + 1);
			memset(b->s, ' ', k - b->len);
			b->len = k;
		}
	}
	kind = invalid ? RULE_INVALID : RULE_VALID;
	if (b->len > NFDBUS_RULE_MAX)
		kind = RULE_LONG;
	if (chance(r, 15)) {
		/* garbage: mutate what there is, or random bytes */
		if (chance(r, 30)) {
			b->len = below(r, chance(r, 20) ? sizeof(b->s) - 1 : 64);
			for (i = 0; i < b->len; i++)
				b->s[i] = 1 + below(r, 255);
			b->s[b->len] = 0;
		}
		for (k = 1 + below(r, 4); k > 0; k--) {
			i = below(r, b->len + 1);
			switch (below(r, 3)) {
			case 0:		/* overwrite */
				if (i < b->len)
					b->s[i] = 1 + below(r, 255);
				break;
			case 1:		/* insert */
				if (b->len + 2 < sizeof(b->s)) {
					memmove(b->s + i + 1, b->s + i, b->len - i + 1);
					b->s[i] = ",='\\ a0"[below(r, 7)];
					b->len++;
				}
				break;
			default:	/* delete */
				if (i < b->len) {
					memmove(b->s + i, b->s + i + 1, b->len - i);
					b->len--;
				}
			}
		}
		kind = b->len > NFDBUS_RULE_MAX ? RULE_LONG : RULE_GARBAGE;
	}
	return kind;
}

/*
 * The errors a rule request may give.  Those of the bus come first (a
 * bogus bus: EINVAL, ENOENT; a bus of another protocol:
 * EPROTONOSUPPORT); then a rule over NFDBUS_RULE_MAX is EMSGSIZE and an
 * invalid one EINVAL, and a valid one fails only for room (ENOSPC) or
 * memory.  ok tells whether success is allowed.
 */
static const int valid_errs[] = { ENOENT, EPROTONOSUPPORT, ENOSPC, ENOMEM, 0 };
/*
 * A bogus bus path may also fail its lookup with ENOTDIR, ELOOP or
 * ENAMETOOLONG: nfdbus passes the errors of the path lookup through as
 * connect(2) does (af_bus.rst: "ENOENT and other path lookup errors"),
 * although nfdbus.rst names ENOENT only.
 */
#define LOOKUP_ERRS	ENOTDIR, ELOOP, ENAMETOOLONG
static const int valid_bogus_errs[] = { EINVAL, ENOENT, EPROTONOSUPPORT, ENOSPC,
					ENOMEM, LOOKUP_ERRS, 0 };
static const int invalid_errs[] = { EINVAL, ENOENT, EPROTONOSUPPORT, ENOMEM,
				    LOOKUP_ERRS, 0 };
static const int long_errs[] = { EMSGSIZE, ENOENT, EPROTONOSUPPORT, ENOMEM, 0 };
static const int long_bogus_errs[] = { EMSGSIZE, EINVAL, ENOENT, EPROTONOSUPPORT,
				       ENOMEM, LOOKUP_ERRS, 0 };
static const int any_errs[] = { NL_ERRS, LOOKUP_ERRS, 0 };
static const int bus_errs[] = { ENOENT, EPROTONOSUPPORT, ENOMEM, 0 };
static const int bus_bogus_errs[] = { EINVAL, ENOENT, EPROTONOSUPPORT, ENOMEM,
				      LOOKUP_ERRS, 0 };

static const int *rule_errs(enum rule_kind kind, bool bogus_bus, bool *ok)
{
	*ok = kind == RULE_VALID || kind == RULE_GARBAGE;
	switch (kind) {
	case RULE_VALID:
		return bogus_bus ? valid_bogus_errs : valid_errs;
	case RULE_INVALID:
		return invalid_errs;
	case RULE_LONG:
		return bogus_bus ? long_bogus_errs : long_errs;
	default:
		return any_errs;
	}
}

static void rule_request(struct thread_ctx *t, const char *what, int ret,
			 enum rule_kind kind, bool bogus_bus,
			 const struct rule_text *rule)
{
	char detail[96];
	const int *errs;
	bool ok;

	errs = rule_errs(kind, bogus_bus, &ok);
	snprintf(detail, sizeof(detail), "%s rule (%zu bytes) \"%.40s\"%s",
		 rule_kinds[kind], rule->len, rule->s, bogus_bus ? " bogus bus" : "");
	if (ret >= 0 && !ok) {
		count(&sh->nl_requests);
		t->nops++;
		report("worker thread %u: %s accepted a %s", t->idx, what, detail);
		return;
	}
	nl_result(t, what, ret, errs, detail);
}

/* ---- buses and peers ---- */

/* The bus and client address of fd, as getsockname(2) gives them. */
static bool sock_bus(int fd, struct nfdbus_bus *b, uint64_t *addr,
		     bool *abstract)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) || sa.sbus_family != AF_BUS ||
	    len <= SA_NOPATH || len > sizeof(sa))
		return false;
	memset(b, 0, sizeof(*b));
	b->len = len - SA_NOPATH;
	memcpy(b->path, sa.sbus_path, b->len);
	*addr = sa.sbus_addr.s_addr;
	if (abstract)
		*abstract = sa.sbus_path[0] == 0;
	/* the master's bound socket or an accepted one: it manages the bus */
	if (!sa.sbus_addr.s_addr)
		nfdbus_bus_set_master(b, fd);
	return true;
}

/*
 * A socket of this worker that is the master's of the bus @b names (the
 * bound one or an accepted one), named in @b's requests; false if none.
 */
static bool find_master(struct nfdbus_bus *b)
{
	struct nfdbus_bus other;
	uint64_t addr;
	unsigned int i;

	for (i = 0; i < NSLOTS; i++) {
		if (sock_bus(slot_at(i), &other, &addr, NULL) &&
		    other.has_master_fd && other.len == b->len &&
		    !memcmp(other.path, b->path, b->len)) {
			nfdbus_bus_set_master(b, other.master_fd);
			return true;
		}
	}
	return false;
}

/* A bus to name: a real one mostly; *bogus when it may be anything. */
static void pick_bus(struct thread_ctx *t, struct nfdbus_bus *b, bool *bogus)
{
	struct rng *r = &t->r;
	struct sockaddr_bus sa;
	socklen_t len;
	uint64_t addr;
	size_t i;

	*bogus = false;
	switch (below(r, 10)) {
	case 0: case 1: case 2: case 3: case 4:
		if (sock_bus(slot_get(r), b, &addr, NULL)) {
			if (!b->has_master_fd && chance(r, 70))
				find_master(b);
			return;
		}
		/* fall through */
	case 5: case 6: case 7:
		pool_name(below(r, NNAMES), &sa, &len);
		memset(b, 0, sizeof(*b));
		b->len = len - SA_NOPATH;
		memcpy(b->path, sa.sbus_path, b->len);
		if (chance(r, 70))
			find_master(b);
		return;
	default:
		*bogus = true;
		memset(b, 0, sizeof(*b));
		b->len = below(r, sizeof(b->path) + 1);
		for (i = 0; i < b->len; i++)
			b->path[i] = rnd(r);
		if (chance(r, 30) && b->len)
			b->path[0] = 0;			/* abstract */
		else if (chance(r, 50))
			b->len = snprintf(b->path, sizeof(b->path), FUZZ_DIR "/%s",
					  chance(r, 50) ? "nobus" : "bus0/x") + 1;
	}
}

static uint64_t pick_peer(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	struct nfdbus_bus b;
	uint64_t addr;

	switch (below(r, 10)) {
	case 0: case 1: case 2: case 3:
		if (sock_bus(slot_get(r), &b, &addr, NULL))
			return addr;
		/* fall through */
	case 4: case 5: case 6:
		return below(r, 40);
	case 7:
		return random_addr(r);
	default:
		return rnd(r);
	}
}

/* Is fd a listening socket (a bus master's bound socket)? */
static bool sock_listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	return !getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) && on;
}

/*
 * EPERM for a request that names a socket of the master of a bus with
 * that path: tolerated, and counted, when the socket may be of another
 * bus than the one nfdbus found by the path (the master closed, the
 * descriptor was closed or reused meanwhile, it is an accepted socket,
 * which outlives its master, whose name a new master may have taken
 * since, a thread of this worker moved to a new network namespace (the
 * socket and the netlink socket may then be in different ones, and
 * nfdbus looks the path up in the netlink socket's), or the path is a
 * filesystem path, which a new master can take over while the
 * old bus lives), or when the bus is gone right after or a second
 * request is not refused.  Otherwise a live bus must never refuse a
 * request that names its master's socket.
 */
static bool perm_race(struct thread_ctx *t, struct nfdbus *h,
		      const struct nfdbus_bus *b, int ret)
{
	struct nfdbus_bus now;
	uint64_t peer = 0, addr;
	bool abstract;

	if (ret != -EPERM)
		return false;
	/* without a socket of the master: refused, as it must be */
	if (!b->has_master_fd) {
		count(&sh->perm_refused);
		t->nops++;
		return true;
	}
	/* the socket was closed meanwhile by another thread, its number
	 * taken by another file, or it is no master's of this bus any more
	 */
	if (!sock_bus(b->master_fd, &now, &addr, &abstract) || addr ||
	    now.len != b->len || memcmp(now.path, b->path, b->len) ||
	    !abstract || !sock_listening(b->master_fd) ||
	    __atomic_load_n(&worker_netns_moves, __ATOMIC_RELAXED)) {
		count(&sh->perm_races);
		t->nops++;
		return true;
	}
	/*
	 * Whether a socket controls a bus depends on nothing but the two:
	 * a second request with the same socket that is not refused shows
	 * that the descriptor or the bus changed between the first one and
	 * the checks above (closed, and its number and the bus's name taken
	 * by a new master, by another thread).
	 */
	if (nfdbus_list(h, b, &peer, NULL, NULL) == -EPERM)
		return false;
	count(&sh->perm_races);
	t->nops++;
	return true;
}

/* ---- netlink commands ---- */

struct list_ctx {
	struct thread_ctx *t;
	bool one_peer;
	uint64_t peer;
	unsigned int n;
	bool bad;
};

static int list_cb(const struct nfdbus_rule_info *info, void *data)
{
	struct list_ctx *c = data;
	size_t len = strlen(info->rule);

	c->n++;
	if (c->bad)
		return 0;
	if (c->one_peer && info->peer != c->peer) {
		c->bad = true;
		report("worker thread %u: dump for peer %#" PRIx64 " gave a rule of %#"
		       PRIx64, c->t->idx, c->peer, info->peer);
	} else if (len > NFDBUS_RULE_MAX) {
		c->bad = true;
		report("worker thread %u: dump gave a rule of %zu bytes", c->t->idx, len);
	}
	return 0;
}

static void cmd_list(struct thread_ctx *t, struct nfdbus *h,
		     const struct nfdbus_bus *b, bool bogus)
{
	struct list_ctx c = { .t = t, .one_peer = chance(&t->r, 60) };
	int ret;

	if (c.one_peer)
		c.peer = pick_peer(t);
	ret = nfdbus_list(h, b, c.one_peer ? &c.peer : NULL, list_cb, &c);
	if (perm_race(t, h, b, ret))
		return;
	if (!nl_result(t, "nfdbus list", ret, bogus ? bus_bogus_errs : bus_errs,
		       NULL))
		return;
	if (ret >= 0 && c.one_peer && c.n > NFDBUS_PEER_RULES_MAX && !c.bad)
		report("worker thread %u: dump for one peer gave %u rules", t->idx, c.n);
}

/*
 * The counters tell about every bus of the namespace: reading them needs
 * CAP_NET_ADMIN there, which workers do not have.
 */
static void cmd_stats(struct thread_ctx *t, struct nfdbus *h)
{
	struct nfdbus_stats st;
	int ret = nfdbus_get_stats(h, &st);

	if (ret != -EPERM)
		report("worker thread %u: nfdbus stats without CAP_NET_ADMIN gave %d",
		       t->idx, ret);
}

/* Add a rule; true when it was added. */
static bool cmd_add(struct thread_ctx *t, struct nfdbus *h,
		    const struct nfdbus_bus *b, bool bogus, uint64_t peer,
		    const struct rule_text *rule, enum rule_kind kind)
{
	uint64_t sender = chance(&t->r, 50) ? pick_peer(t) : random_addr(&t->r);
	int ret;

	ret = nfdbus_add_match(h, b, peer, rule->s,
			       chance(&t->r, 15) ? &sender : NULL);
	if (perm_race(t, h, b, ret))
		return false;
	rule_request(t, "nfdbus add", ret, kind, bogus, rule);
	if (ret == 0)
		count(&sh->rules_added);
	return ret == 0;
}

/* Up to several hundred rules for one peer: ENOSPC at 512, long dumps. */
static void cmd_add_many(struct thread_ctx *t, struct nfdbus *h,
			 const struct nfdbus_bus *b, bool bogus, uint64_t peer)
{
	struct rule_text rule;
	unsigned int n = 20 + below(&t->r, 580);
	enum rule_kind kind;
	int ret;

	while (n--) {
		rule.len = snprintf(rule.s, sizeof(rule.s),
				    "type='signal',member='M%u',arg%u='%u'",
				    n, n % 64, below(&t->r, 1000));
		kind = RULE_VALID;
		ret = nfdbus_add_match(h, b, peer, rule.s, NULL);
		if (perm_race(t, h, b, ret))
			return;
		rule_request(t, "nfdbus add", ret, kind, bogus, &rule);
		if (ret || t->nfd->broken)
			return;
		count(&sh->rules_added);
	}
}

/* ---- raw requests ---- */

static void raw_request(struct thread_ctx *t, struct nfdbus *h)
{
	static const int raw_errs[] = { NL_ERRS, LOOKUP_ERRS, ERANGE, EOPNOTSUPP, 0 };
	static const int stats_errs[] = { EPERM, 0 };
	static const int einval[] = { EINVAL, 0 };
	struct rng *r = &t->r;
	char buf[16384] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rule_text rule;
	struct nfdbus_bus b;
	unsigned char junk[300];
	bool bogus, nul_rule = false, no_nul = false, real_bus = false;
	bool clean = true;	/* every attribute but the rule well formed */
	enum rule_kind kind = RULE_GARBAGE;
	unsigned int n, i, cmd = chance(r, 90) ? 1 + below(r, 5) : below(r, 256);
	uint16_t flags = chance(r, cmd == NFDBUS_CMD_GET_MATCH ? 80 : 10) ?
			 NLM_F_DUMP : 0;
	const int *errs = raw_errs;
	char detail[64];
	size_t len;
	int ret;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rnd(r);
	/* the bus: as it should be, or too long, or empty */
	if (chance(r, 85)) {
		pick_bus(t, &b, &bogus);
		len = b.len;
		if (chance(r, 10))
			len = sizeof(b.path) + 1 + below(r, 100);
		real_bus = !bogus && len == b.len;
		mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, len,
			     len == b.len ? (void *)b.path : (void *)junk);
		/* the master's socket, as libnfdbus names it, mostly */
		if (b.has_master_fd && chance(r, 90))
			mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FD, b.master_fd);
		else
			b.has_master_fd = 0;
	}
	if (chance(r, 85) && chance(r, 85)) {
		mnl_attr_put_u64(nlh, NFDBUS_A_PEER, pick_peer(t));
	} else {
		clean = false;
		if (chance(r, 50))
			mnl_attr_put(nlh, NFDBUS_A_PEER, below(r, 17), junk);
	}
	if (chance(r, 80)) {
		kind = random_rule(r, &rule);
		switch (below(r, 4)) {
		case 0:		/* bytes after the NUL: the rule is what is before */
			if (rule.len + 66 > sizeof(rule.s))
				goto plain;
			memcpy(rule.s + rule.len + 1, junk, 64);
			mnl_attr_put(nlh, NFDBUS_A_RULE, rule.len + 2 + below(r, 63),
				     rule.s);
			nul_rule = true;
			break;
		case 1:		/* no NUL at all */
			if (rule.len) {
				mnl_attr_put(nlh, NFDBUS_A_RULE, rule.len, rule.s);
				no_nul = true;
				break;
			}
			/* fall through */
		default:
plain:
			mnl_attr_put(nlh, NFDBUS_A_RULE, rule.len + 1, rule.s);
		}
	}
	if (chance(r, 15)) {
		if (chance(r, 80)) {
			mnl_attr_put_u64(nlh, NFDBUS_A_SENDER_ADDR, random_addr(r));
		} else {
			mnl_attr_put(nlh, NFDBUS_A_SENDER_ADDR, below(r, 17), junk);
			clean = false;
		}
	}
	for (n = chance(r, 20) ? 1 + below(r, 3) : 0; n > 0; n--) {
		clean = false;
		/* stats (rejected), pad, unknown types, nested flags */
		uint16_t type = chance(r, 50) ? NFDBUS_A_STATS + below(r, 3)
					      : below(r, 0x8000) | (rnd(r) & NLA_F_NESTED);

		mnl_attr_put(nlh, type, below(r, 40), junk);
	}
	len = nlh->nlmsg_len - MNL_NLMSG_HDRLEN;
	if (chance(r, 5) && len)
		len -= 1 + below(r, len < 8 ? len : 8);	/* cut the last one */

	ret = nfdbus_request_raw(h, cmd, flags, mnl_nlmsg_get_payload(nlh), len);
	if (real_bus && perm_race(t, h, &b, ret))
		return;
	snprintf(detail, sizeof(detail), "raw cmd %u flags %#x, %zu bytes",
		 cmd, flags, len);
	/*
	 * The strict cases: well-formed add requests on a real bus whose
	 * rule attribute has no NUL (refused by the policy), or bytes
	 * after it (the rule is what comes before).
	 */
	if (cmd == NFDBUS_CMD_ADD_MATCH && !flags && real_bus &&
	    len == nlh->nlmsg_len - MNL_NLMSG_HDRLEN && (no_nul || nul_rule)) {
		if (no_nul) {
			errs = einval;
			if (ret >= 0)
				report("worker thread %u: %s: a rule without its NUL was accepted",
				       t->idx, detail);
		} else if (kind == RULE_VALID && clean) {
			errs = valid_errs;
		}
	}
	/* checked before anything else: workers lack CAP_NET_ADMIN */
	if (cmd == NFDBUS_CMD_GET_STATS) {
		errs = stats_errs;
		if (ret >= 0)
			report("worker thread %u: %s: counters read without CAP_NET_ADMIN",
			       t->idx, detail);
	}
	nl_result(t, "nfdbus raw request", ret, errs, detail);
}

/* ---- the operation ---- */

/*
 * Policies (Documentation/networking/nfdbus.rst, "Policy"), without
 * ever setting NFDBUS_BUS_POLICY, so that the valid D-Bus messages of
 * the other operations still go through: set one (ids 1 to 8) with
 * random rules, valid or with one value out of range (ERANGE) or both
 * broadcast flags (EINVAL), which must never be accepted; give one to a
 * peer; delete one (EBUSY while a peer uses it); read one.
 */
static void cmd_policy(struct thread_ctx *t, struct nfdbus *h,
		       const struct nfdbus_bus *b, bool bogus, uint64_t peer)
{
	static const int ok_errs[] = { ENOENT, EPROTONOSUPPORT, ENOSPC, ENOMEM, 0 };
	static const int ok_bogus_errs[] = { EINVAL, ENOENT, EPROTONOSUPPORT,
					     ENOSPC, ENOMEM, LOOKUP_ERRS, 0 };
	static const int bad_errs[] = { EINVAL, ERANGE, ENOENT, EPROTONOSUPPORT,
					ENOMEM, LOOKUP_ERRS, 0 };
	static const int del_errs[] = { ENOENT, EBUSY, EPROTONOSUPPORT, ENOMEM,
					EINVAL, LOOKUP_ERRS, 0 };
	struct nfdbus_policy_rule rules[6], *p;
	char str[6][3][256];
	struct rng *r = &t->r;
	uint32_t id = 1 + below(r, 8), nrules, refs;
	const int *errs = bogus ? ok_bogus_errs : ok_errs;
	const char *what;
	unsigned int n, i;
	bool bad = false;
	int ret;

	switch (below(r, 4)) {
	case 0:
		what = "nfdbus set policy";
		n = below(r, 7);
		for (i = 0; i < n; i++) {
			p = &rules[i];
			memset(p, 0, sizeof(*p));
			p->direction = 1 + below(r, 2);
			p->allow = below(r, 2);
			p->type = below(r, 5);
			p->flags = chance(r, 50) ? 1U << below(r, 3) : 0;
			if (chance(r, 40)) {
				v_path(r, str[i][0], sizeof(str[i][0]));
				p->path = str[i][0];
			}
			if (chance(r, 40)) {
				v_iface(r, str[i][1], sizeof(str[i][1]));
				p->interface = str[i][1];
			}
			if (chance(r, 40)) {
				v_member(r, str[i][2], sizeof(str[i][2]));
				p->member = str[i][2];
			}
			if (chance(r, 30)) {
				p->has_addr = 1;
				p->addr = pick_peer(t);
			}
		}
		if (n && chance(r, 10)) {
			bad = true;
			errs = bad_errs;
			if (chance(r, 40))
				rules[0].type = 5 + below(r, 250);
			else if (chance(r, 50))
				rules[0].direction = 3 + below(r, 250);
			else
				rules[0].flags = NFDBUS_POLICY_F_BROADCAST |
						 NFDBUS_POLICY_F_NOT_BROADCAST;
		}
		ret = nfdbus_set_policy(h, b, id, rules, n);
		if (bad && ret >= 0)
			report("worker thread %u: a policy rule out of range was accepted",
			       t->idx);
		break;
	case 1:
		what = "nfdbus set peer policy";
		ret = nfdbus_set_peer_policy(h, b, peer, below(r, 9));
		break;
	case 2:
		what = "nfdbus delete policy";
		errs = del_errs;
		ret = nfdbus_del_policy(h, b, id);
		break;
	default:
		what = "nfdbus get policy";
		ret = nfdbus_get_policy(h, b, id, &nrules, &refs);
		if (ret >= 0 && nrules > NFDBUS_POLICY_RULES_MAX)
			report("worker thread %u: policy %u has %u rules", t->idx,
			       id, nrules);
	}
	if (!perm_race(t, h, b, ret))
		nl_result(t, what, ret, errs, NULL);
}

void op_nfdbus(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	struct rule_text rule;
	struct nfdbus_bus b;
	enum rule_kind kind;
	struct nfdbus *h;
	unsigned int n;
	uint64_t peer;
	bool bogus;
	int ret;

	h = nl_open(t);
	if (!h)
		return;
	for (n = 1 + below(r, 4); n > 0 && !t->nfd->broken; n--) {
		pick_bus(t, &b, &bogus);
		peer = pick_peer(t);
		switch (below(r, 23)) {
		case 0: case 1: case 2: case 3: case 4: case 5: case 6:
			kind = random_rule(r, &rule);
			cmd_add(t, h, &b, bogus, peer, &rule, kind);
			break;
		case 20: case 21: case 22:
			cmd_policy(t, h, &b, bogus, peer);
			break;
		case 7: case 8: case 9:
			kind = random_rule(r, &rule);
			ret = nfdbus_remove_match(h, &b, peer, rule.s);
			if (!perm_race(t, h, &b, ret))
				rule_request(t, "nfdbus remove", ret, kind, bogus, &rule);
			break;
		case 10: case 11:
			ret = nfdbus_flush(h, &b, peer);
			if (!perm_race(t, h, &b, ret))
				nl_result(t, "nfdbus flush", ret,
					  bogus ? bus_bogus_errs : bus_errs, NULL);
			break;
		case 12: case 13: case 14:
			cmd_list(t, h, &b, bogus);
			break;
		case 15:
			cmd_stats(t, h);
			break;
		case 16:
			if (chance(r, 30))
				cmd_add_many(t, h, &b, bogus, peer);
			break;
		default:
			raw_request(t, h);
		}
	}
	nl_close(t, h);
}

void nfdbus_rules_for(struct thread_ctx *t, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	struct rule_text rule;
	struct nfdbus_bus b;
	enum rule_kind kind;
	struct nfdbus *h;
	unsigned int n;

	/* the accepted socket's peer is the client */
	if (getpeername(fd, (struct sockaddr *)&sa, &len) || len <= SA_NOPATH ||
	    len > sizeof(sa))
		return;
	memset(&b, 0, sizeof(b));
	b.len = len - SA_NOPATH;
	memcpy(b.path, sa.sbus_path, b.len);
	/* the master's accepted socket: it manages the bus */
	nfdbus_bus_set_master(&b, fd);
	h = nl_open(t);
	if (!h)
		return;
	for (n = 1 + below(&t->r, 3); n > 0; n--) {
		do
			kind = random_rule(&t->r, &rule);
		while (kind != RULE_VALID);
		if (!cmd_add(t, h, &b, false, sa.sbus_addr.s_addr, &rule, kind) ||
		    t->nfd->broken)
			break;
	}
	nl_close(t, h);
}

/* ---- D-Bus messages ---- */

enum msg_kind { MSG_VALID, MSG_MUTATED, MSG_BROKEN };

/* GDBus: the same message, big endian; 0 if GDBus would not. */
static size_t to_big(unsigned char *buf, size_t len, size_t size)
{
	GDBusMessage *g;
	guchar *blob;
	gsize n = 0;

	g = g_dbus_message_new_from_blob(buf, len, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING,
					 NULL);
	if (!g)
		return 0;
	g_dbus_message_set_byte_order(g, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN);
	blob = g_dbus_message_to_blob(g, &n, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING,
				      NULL);
	g_object_unref(g);
	if (!blob)
		return 0;
	if (n > size || blob[0] != 'B')
		n = 0;
	else
		memcpy(buf, blob, n);
	g_free(blob);
	return n;
}

static void append_args(struct rng *r, DBusMessageIter *it)
{
	static const char *const sigs[] = { "s", "as", "a{sv}", "", "(us)" };
	DBusMessageIter sub, var;
	char s[5000], o[300];
	const char *ps = s, *po = o, *pg;
	dbus_uint32_t u;
	unsigned int n;

	for (n = below(r, 6); n > 0; n--) {
		switch (below(r, 7)) {
		case 0: case 1: case 2:
			v_string(r, s, chance(r, 3) ? sizeof(s) : 300);
			dbus_message_iter_append_basic(it, DBUS_TYPE_STRING, &ps);
			break;
		case 3:
			v_path(r, o, sizeof(o));
			dbus_message_iter_append_basic(it, DBUS_TYPE_OBJECT_PATH, &po);
			break;
		case 4:
			u = rnd(r);
			dbus_message_iter_append_basic(it, DBUS_TYPE_UINT32, &u);
			break;
		case 5:
			pg = PICK(r, sigs);
			dbus_message_iter_append_basic(it, DBUS_TYPE_SIGNATURE, &pg);
			break;
		default:
			if (chance(r, 50)) {
				dbus_message_iter_open_container(it, DBUS_TYPE_ARRAY, "s", &sub);
				v_string(r, s, 300);
				dbus_message_iter_append_basic(&sub, DBUS_TYPE_STRING, &ps);
				dbus_message_iter_close_container(it, &sub);
			} else {
				dbus_message_iter_open_container(it, DBUS_TYPE_VARIANT, "s", &var);
				v_string(r, s, 300);
				dbus_message_iter_append_basic(&var, DBUS_TYPE_STRING, &ps);
				dbus_message_iter_close_container(it, &var);
			}
		}
	}
}

/* A valid D-Bus message from random fields, in buf; 0 if none. */
/* Marshals m into buf (0 when it does not fit) and frees it. */
static size_t marshal_into(DBusMessage *m, unsigned char *buf, size_t size)
{
	size_t n = 0;
	char *data;
	int len;

	if (dbus_message_marshal(m, &data, &len)) {
		if ((size_t)len <= size) {
			memcpy(buf, data, len);
			n = len;
		}
		dbus_free(data);
	}
	dbus_message_unref(m);
	return n;
}

static size_t valid_message(struct rng *r, unsigned char *buf, size_t size)
{
	static const int types[] = {
		DBUS_MESSAGE_TYPE_SIGNAL, DBUS_MESSAGE_TYPE_SIGNAL,
		DBUS_MESSAGE_TYPE_SIGNAL, DBUS_MESSAGE_TYPE_METHOD_CALL,
		DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR,
	};
	int type = PICK(r, types);
	char v[300];
	DBusMessageIter it;
	DBusMessage *m;
	size_t n = 0;

	m = dbus_message_new(type);
	if (!m)
		return 0;
	if (type == DBUS_MESSAGE_TYPE_SIGNAL || type == DBUS_MESSAGE_TYPE_METHOD_CALL ||
	    chance(r, 10)) {
		v_path(r, v, sizeof(v));
		dbus_message_set_path(m, v);
		v_member(r, v, sizeof(v));
		dbus_message_set_member(m, v);
	}
	if (type == DBUS_MESSAGE_TYPE_SIGNAL || chance(r, 30)) {
		v_iface(r, v, sizeof(v));
		dbus_message_set_interface(m, v);
	}
	if (type == DBUS_MESSAGE_TYPE_ERROR) {
		v_iface(r, v, sizeof(v));
		dbus_message_set_error_name(m, v);
	}
	if (type == DBUS_MESSAGE_TYPE_ERROR || type == DBUS_MESSAGE_TYPE_METHOD_RETURN)
		dbus_message_set_reply_serial(m, 1 + below(r, 1000));
	if (chance(r, 50)) {
		v_busname(r, v, sizeof(v));
		dbus_message_set_sender(m, v);
	}
	if (chance(r, 20)) {
		v_busname(r, v, sizeof(v));
		dbus_message_set_destination(m, v);
	}
	dbus_message_iter_init_append(m, &it);
	append_args(r, &it);
	dbus_message_set_serial(m, 1 + below(r, 0x7fffffff));
	n = marshal_into(m, buf, size);
	if (n && chance(r, 25)) {
		size_t big = to_big(buf, n, size);

		if (big)
			n = big;
	}
	return n;
}

static void mutate(struct rng *r, unsigned char *buf, size_t *len, size_t size)
{
	unsigned int k, i;
	uint32_t v;

	for (k = 1 + below(r, 3); k > 0; k--) {
		switch (below(r, 5)) {
		case 0:
			if (*len)
				buf[below(r, *len)] = rnd(r);
			break;
		case 1:		/* a length or serial */
			if (*len >= 4) {
				i = below(r, *len / 4) * 4;
				v = PICK(r, ((const uint32_t[]){ 0, 1, 0xffffffff,
						64 << 20, (64 << 20) + 1, 4096 }));
				if (chance(r, 30))
					v = rnd(r);
				memcpy(buf + i, &v, 4);
			}
			break;
		case 2:
			*len = below(r, *len + 1);
			break;
		case 3:
			for (i = below(r, 16); i > 0 && *len < size; i--)
				buf[(*len)++] = rnd(r);
			break;
		default:	/* the other byte order, without swapping */
			if (*len)
				buf[0] = buf[0] == 'l' ? 'B' : 'l';
		}
	}
}

/* Break a message in a way nfdbus.rst calls malformed. */
static void breakit(struct rng *r, unsigned char *buf, size_t *len, size_t size)
{
	unsigned int i;

	switch (*len < 16 ? 0 : below(r, 7)) {
	case 0:
		*len = below(r, *len < 16 ? *len + 1 : 16);
		break;
	case 1:
		do
			buf[0] = rnd(r);
		while (buf[0] == 'l' || buf[0] == 'B');
		break;
	case 2:
		buf[1] = 0;				/* type 0 */
		break;
	case 3:
		do
			buf[3] = rnd(r);
		while (buf[3] == 1);			/* protocol version */
		break;
	case 4:
		memset(buf + 8, 0, 4);			/* serial 0 */
		break;
	case 5:
		if (*len + 8 <= size) {
			for (i = 1 + below(r, 7); i > 0; i--)
				buf[(*len)++] = rnd(r);	/* bytes after it */
			break;
		}
		/* fall through */
	default:
		*len -= 1 + below(r, 8);		/* cut short */
	}
}

static size_t message(struct rng *r, unsigned char *buf, size_t size,
		      enum msg_kind kind)
{
	size_t len = valid_message(r, buf, size);

	if (kind == MSG_MUTATED)
		mutate(r, buf, &len, size);
	else if (kind == MSG_BROKEN)
		breakit(r, buf, &len, size);
	return len;
}

size_t dbus_payload(struct thread_ctx *t, unsigned char *buf, size_t size)
{
	return message(&t->r, buf, size, chance(&t->r, 60) ? MSG_VALID :
			chance(&t->r, 50) ? MSG_MUTATED : MSG_BROKEN);
}

/* Is the socket of inode ino in this thread's network namespace? */
static bool in_my_netns(ino_t ino)
{
	FILE *f = fopen("/proc/thread-self/net/bus", "r");
	unsigned long inode;
	bool found = false;
	char line[512];

	if (!f)
		return false;
	/* "Num Inode Proto ...", after a header line */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %lu", &inode) == 1 && inode == ino;
	fclose(f);
	return found;
}

void op_dbus_mcast(struct thread_ctx *t, int fd)
{
	static const char *const kinds[] = { "valid", "mutated", "broken" };
	struct rng *r = &t->r;
	unsigned char buf[8192];
	struct sockaddr_bus to = { .sbus_family = AF_BUS };
	socklen_t tolen = SA_NOPATH;
	struct stat st0, st1;
	struct rule_text rule;
	struct nfdbus_bus b;
	enum msg_kind kind;
	enum rule_kind rkind;
	bool abstract, managed = false, same, client;
	struct nfdbus *h;
	unsigned int n;
	uint64_t addr;
	size_t len;
	ssize_t ret;
	int err;

	if (fstat(fd, &st0) || !S_ISSOCK(st0.st_mode) ||
	    !sock_bus(fd, &b, &addr, &abstract))
		return;
	client = addr != 0;
	if (!b.has_master_fd)
		find_master(&b);
	if (chance(r, 60) && (h = nl_open(t))) {
		/* make the bus managed, if it is a D-Bus bus */
		do
			rkind = random_rule(r, &rule);
		while (rkind != RULE_VALID);
		managed = cmd_add(t, h, &b, false, chance(r, 70) ? addr : below(r, 40),
				  &rule, rkind);
		nl_close(t, h);
	}
	if (chance(r, 60)) {
		memcpy(to.sbus_path, b.path, b.len);
		tolen = SA_NOPATH + b.len;
	}
	for (n = 1 + below(r, 4); n > 0; n--) {
		kind = below(r, 10) < 5 ? MSG_VALID : chance(r, 60) ? MSG_BROKEN : MSG_MUTATED;
		len = message(r, buf, sizeof(buf), kind);
		to.sbus_addr.s_addr = chance(r, 80) ? BUS_CLIENT_MASK :
			((uint64_t)below(r, 3) << BUS_PREFIX_SHIFT) | BUS_CLIENT_MASK;
		ret = sendto(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			     (struct sockaddr *)&to, tolen);
		err = errno;
		same = !fstat(fd, &st1) && st1.st_ino == st0.st_ino &&
		       st1.st_dev == st0.st_dev;
		if (!same)
			return;		/* the descriptor was closed meanwhile */
		errno = err;
		check(t, "sendmsg", ret, E(ENOTCONN, EHOSTUNREACH, EMSGSIZE, EPIPE,
					   EAGAIN, ENOBUFS, EINVAL, EPERM,
					   ECONNRESET), kinds[kind]);
		if (ret >= 0)
			count(&sh->dbus_sent);
		else if (err == EPERM)
			count(&sh->dbus_refused);
		/* D-Bus broadcasts only signals: a client's multicast
		 * call, reply or error is refused on a managed bus
		 */
		if (kind == MSG_VALID && ret < 0 && err == EPERM &&
		    buf[1] == DBUS_MESSAGE_TYPE_SIGNAL)
			report("worker thread %u: a valid D-Bus signal (%zu bytes, byte order %c) was refused (EPERM)",
			       t->idx, len, buf[0]);
		if (kind == MSG_VALID && buf[1] != DBUS_MESSAGE_TYPE_SIGNAL &&
		    managed && abstract && client) {
			count(&sh->dbus_not_signal);
			if (ret >= 0 && in_my_netns(st0.st_ino))
				report("worker thread %u: a client's multicast of D-Bus type %u was accepted on a bus with rules",
				       t->idx, buf[1]);
		}
		if (kind == MSG_BROKEN && managed && abstract) {
			count(&sh->dbus_strict);
			if (ret >= 0 && in_my_netns(st0.st_ino))
				report("worker thread %u: a malformed D-Bus multicast (%zu bytes) was accepted on a bus with rules",
				       t->idx, len);
		}
	}
}

/* ---- calls the master forwards (issue 36) ---- */

/* A D-Bus message of type from the client with address @from, in buf. */
static size_t relay_message(unsigned char *buf, size_t size, int type,
			    uint64_t from, uint32_t serial,
			    uint32_t reply_serial)
{
	char sender[32];
	DBusMessage *m;

	m = dbus_message_new(type);
	if (!m)
		return 0;
	snprintf(sender, sizeof(sender), ":0.%" PRIx64, from);
	dbus_message_set_sender(m, sender);
	if (type == DBUS_MESSAGE_TYPE_METHOD_CALL) {
		dbus_message_set_path(m, "/org/ex/Obj");
		dbus_message_set_interface(m, "org.ex.Iface");
		dbus_message_set_member(m, "Do");
	} else {
		dbus_message_set_reply_serial(m, reply_serial);
	}
	dbus_message_set_serial(m, serial);
	return marshal_into(m, buf, size);
}

/*
 * Whether @a or @k (op_relay()'s sockets, not in the slots yet) was shut
 * down, closed, or replaced since @ino_a and @ino_k were taken: another
 * thread's operation on a slot's descriptor that was closed meanwhile and
 * whose number one of them got (op_shutdown(), or slot_put() closing the
 * slot's old number). Either end's shutdown makes the other's send fail
 * with EPIPE, which is then that race, not the kernel's.
 */
static bool relay_raced(int a, int k, ino_t ino_a, ino_t ino_k)
{
	struct pollfd p[2] = {
		{ .fd = a, .events = POLLRDHUP }, { .fd = k, .events = POLLRDHUP },
	};
	struct stat st;

	if (fstat(a, &st) || st.st_ino != ino_a ||
	    fstat(k, &st) || st.st_ino != ino_k || poll(p, 2, 0) < 0)
		return true;
	return (p[0].revents | p[1].revents) & (POLLRDHUP | POLLHUP | POLLNVAL);
}

/*
 * On a bus of its own (master m, a the accepted socket of the callee,
 * which never answers but once, c the caller): with reply tracking and a
 * random limit, the master forwards calls for c until the kernel refuses
 * them: exactly the limit go out, the rest fail with EDQUOT; an answer
 * makes room for one more; a client's multicast reply is refused.
 */
void op_relay_burst(struct thread_ctx *t, int m, int a, int c, int k)
{
	struct rng *r = &t->r;
	unsigned char buf[1024];
	unsigned int max = 1 + below(r, 8), n = max + 1 + below(r, 20), i;
	unsigned int ok = 0, quota = 0;
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	uint64_t caller, callee;
	struct nfdbus_bus b;
	struct nfdbus *h;
	size_t mlen;
	ino_t ino_a, ino_k;
	struct stat st;
	ssize_t ret;

	if (fstat(a, &st))
		return;
	ino_a = st.st_ino;
	if (fstat(k, &st))
		return;
	ino_k = st.st_ino;
	if (nfdbus_bus_from_master(&b, m) ||
	    getsockname(k, (struct sockaddr *)&sa, &len))
		return;
	callee = sa.sbus_addr.s_addr;
	len = sizeof(sa);
	if (getsockname(c, (struct sockaddr *)&sa, &len))
		return;
	caller = sa.sbus_addr.s_addr;
	h = nl_open(t);
	if (!h)
		return;
	if (nfdbus_set_bus(h, &b, NFDBUS_BUS_REPLIES, max, 0)) {
		report("worker thread %u: a master could not set reply tracking on its bus: %s",
		       t->idx, nfdbus_error(h));
		nl_close(t, h);
		return;
	}
	nl_close(t, h);
	for (i = 1; i <= n; i++) {
		mlen = relay_message(buf, sizeof(buf),
				     DBUS_MESSAGE_TYPE_METHOD_CALL, caller, i, 0);
		ret = send(a, buf, mlen, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (ret == (ssize_t)mlen)
			ok++;
		else if (errno == EDQUOT)
			quota++;
		else if (errno == EPIPE && relay_raced(a, k, ino_a, ino_k)) {
			__atomic_add_fetch(&sh->raced, 1, __ATOMIC_RELAXED);
			return;
		} else if (errno != EINTR)
			report("worker thread %u: forwarded call %u: %s", t->idx,
			       i, strerror(errno));
	}
	__atomic_add_fetch(&sh->relay_quota, quota, __ATOMIC_RELAXED);
	if (ok > max || (ok + quota == n && ok != max))
		report("worker thread %u: %u of %u calls forwarded to a callee that never answers went out, limit %u",
		       t->idx, ok, n, max);
	if (!ok)
		return;
	/* the callee answers call 1, which is awaited: room for one more */
	sa.sbus_addr.s_addr = caller;
	mlen = relay_message(buf, sizeof(buf), DBUS_MESSAGE_TYPE_METHOD_RETURN,
			     callee, 1, 1);
	ret = sendto(k, buf, mlen, MSG_DONTWAIT | MSG_NOSIGNAL,
		     (struct sockaddr *)&sa, len);
	if (ret < 0 && errno == EPIPE && relay_raced(a, k, ino_a, ino_k))
		__atomic_add_fetch(&sh->raced, 1, __ATOMIC_RELAXED);
	else if (ret < 0 && errno != EINTR)
		report("worker thread %u: the answer to a forwarded call: %s",
		       t->idx, strerror(errno));
	/* a client's multicast reply is refused: D-Bus broadcasts signals */
	sa.sbus_addr.s_addr = BUS_CLIENT_MASK;
	mlen = relay_message(buf, sizeof(buf), DBUS_MESSAGE_TYPE_METHOD_RETURN,
			     callee, 2, 2);
	ret = sendto(k, buf, mlen, MSG_DONTWAIT | MSG_NOSIGNAL,
		     (struct sockaddr *)&sa, len);
	if (ret >= 0)
		report("worker thread %u: a client's multicast method return was accepted",
		       t->idx);
	else if (errno != EPERM && errno != EINTR)
		report("worker thread %u: a client's multicast method return: %s",
		       t->idx, strerror(errno));
}
