// SPDX-License-Identifier: GPL-2.0
/*
 * The nfdbus netlink interface (Documentation/networking/nfdbus.rst,
 * "The netlink interface" and "Errors"), through libnfdbus: adding,
 * removing (RemoveMatch semantics), flushing and dumping rules, malformed
 * rules, the per-peer caps, permissions, and rules going away with their
 * peer and their bus; the flags of a bus (NFDBUS_CMD_SET_BUS, GET_BUS).
 * Permissions go with the netlink socket, by the credentials it was
 * opened with: kept after dropping privileges, passed with the socket,
 * never gained by a socket opened without them.
 */
#include "nfdbus_test.h"

#include <grp.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <libmnl/libmnl.h>
#include <linux/capability.h>

FIXTURE(ctl) {
	struct nfd_bus b;
};

FIXTURE_SETUP(ctl)
{
	nfd_setup(_metadata, &self->b, 3);
}

FIXTURE_TEARDOWN(ctl)
{
	nfd_teardown(&self->b);
}

struct collect {
	int n;
	char rules[8][128];
	uint64_t peers[8];
};

static int collect_cb(const struct nfdbus_rule_info *info, void *data)
{
	struct collect *c = data;

	if (c->n < 8) {
		snprintf(c->rules[c->n], sizeof(c->rules[0]), "%s", info->rule);
		c->peers[c->n] = info->peer;
	}
	c->n++;
	return 0;
}

/* Number of rules of peer i (all peers if i < 0). */
static int count_rules(struct __test_metadata *_metadata, struct nfd_bus *b,
		       int i)
{
	uint64_t peer = i < 0 ? 0 : b->p[i].addr;
	int n = nfdbus_list(b->h, &b->nb, i < 0 ? NULL : &peer, NULL, NULL);

	ASSERT_LE(0, n) TH_LOG("list: %s", strerror(-n));
	return n;
}

TEST_F(ctl, add_list_remove)
{
	struct collect c = { 0 };
	uint64_t peer;

	NFD_ADD(&self->b, 1, "type='signal',member='A'", 0);
	NFD_ADD(&self->b, 1, "member='B'", 0);
	NFD_ADD(&self->b, 1, "type='signal',member='A'", 0);
	NFD_ADD(&self->b, 2, "member='C'", 0);
	ASSERT_EQ(4, nfdbus_list(self->b.h, &self->b.nb, NULL, collect_cb, &c));
	ASSERT_EQ(4, c.n);
	ASSERT_EQ(3, count_rules(_metadata, &self->b, 1));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 2));
	ASSERT_EQ(0, count_rules(_metadata, &self->b, 0));

	memset(&c, 0, sizeof(c));
	peer = self->b.p[2].addr;
	ASSERT_EQ(1, nfdbus_list(self->b.h, &self->b.nb, &peer, collect_cb,
				 &c));
	ASSERT_STREQ("member='C'", c.rules[0]);
	ASSERT_EQ(self->b.p[2].addr, c.peers[0]);

	/* equal whatever the order and quoting; one copy at a time */
	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr,
					 "member=A,type=signal"));
	ASSERT_EQ(2, count_rules(_metadata, &self->b, 1));
	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr,
					 "type='signal',member='A'"));
	ASSERT_EQ(-ENOENT, nfdbus_remove_match(self->b.h, &self->b.nb,
					       self->b.p[1].addr,
					       "type='signal',member='A'"));
	/* a rule of another peer is not this peer's */
	ASSERT_EQ(-ENOENT, nfdbus_remove_match(self->b.h, &self->b.nb,
					       self->b.p[1].addr,
					       "member='C'"));
	/* a subset is not equal */
	ASSERT_EQ(-ENOENT, nfdbus_remove_match(self->b.h, &self->b.nb,
					       self->b.p[2].addr, ""));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 1));

	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[1].addr));
	ASSERT_EQ(0, count_rules(_metadata, &self->b, 1));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 2));
}

static const char *const bad_rules[] = {
	"type='bogus'",
	"foo='bar'",
	"member='x",
	"member",
	"='x'",
	"member=''",
	"member='a',member='b'",
	"arg64='x'",
	"arg01='x'",
	"argx='x'",
	"arg0pat='x'",
	"arg0='a',arg0path='b'",
	"path='/a/'",
	"path='a'",
	"path='/a//b'",
	"path='/a-b'",
	"path='/a',path_namespace='/b'",
	"eavesdrop='maybe'",
	"type='signal',,",
};

TEST_F(ctl, malformed_rules_einval)
{
	unsigned int i;

	NFD_ADD(&self->b, 1, "member='Keep'", 0);
	for (i = 0; i < sizeof(bad_rules) / sizeof(bad_rules[0]); i++) {
		NFD_ADD(&self->b, 1, bad_rules[i], EINVAL);
		ASSERT_EQ(-EINVAL, nfdbus_remove_match(self->b.h, &self->b.nb,
						       self->b.p[1].addr,
						       bad_rules[i]));
	}
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 1));
	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr, "member='Keep'"));
}

TEST_F(ctl, rule_size_and_count_caps)
{
	char rule[NFDBUS_RULE_MAX + 2];
	int i;

	/* exactly NFDBUS_RULE_MAX bytes is fine, one more is not */
	memset(rule, 'x', sizeof(rule));
	memcpy(rule, "arg0='", 6);
	rule[NFDBUS_RULE_MAX - 1] = '\'';
	rule[NFDBUS_RULE_MAX] = '\0';
	NFD_ADD(&self->b, 1, rule, 0);
	rule[NFDBUS_RULE_MAX - 1] = 'x';
	rule[NFDBUS_RULE_MAX] = '\'';
	rule[NFDBUS_RULE_MAX + 1] = '\0';
	NFD_ADD(&self->b, 1, rule, EMSGSIZE);

	for (i = 1; i < NFDBUS_PEER_RULES_MAX; i++) {
		snprintf(rule, sizeof(rule), "member='M%d'", i);
		NFD_ADD(&self->b, 1, rule, 0);
	}
	NFD_ADD(&self->b, 1, "member='OneTooMany'", ENOSPC);
	ASSERT_EQ(NFDBUS_PEER_RULES_MAX, count_rules(_metadata, &self->b, 1));
	/* the cap is per peer */
	NFD_ADD(&self->b, 2, "member='Fine'", 0);
	/* room again after a removal */
	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr, "member='M1'"));
	NFD_ADD(&self->b, 1, "member='OneTooMany'", 0);
}

TEST_F(ctl, unknown_and_non_dbus_bus)
{
	struct bus_name other = bus_name_abstract();
	struct nfdbus_bus nb = nfd_name(&other);
	int m;

	ASSERT_EQ(-ENOENT, nfdbus_add_match(self->b.h, &nb, 1, "", NULL));
	ASSERT_EQ(-ENOENT, nfdbus_list(self->b.h, &nb, NULL, NULL, NULL));
	m = bus_master(_metadata, &other);
	ASSERT_EQ(-EPROTONOSUPPORT,
		  nfdbus_add_match(self->b.h, &nb, 1, "", NULL));
	close(m);
	nb.len = 0;
	ASSERT_EQ(-EINVAL, nfdbus_add_match(self->b.h, &nb, 1, "", NULL));
}

/* The flags of the bus, which must be readable. */
static uint32_t bus_flags(struct __test_metadata *_metadata, struct nfd_bus *b)
{
	uint32_t flags = 0xdead;

	ASSERT_OK(nfdbus_get_bus_flags(b->h, &b->nb, &flags));
	return flags;
}

/* A request of cmd for the test's bus with extra attributes (libmnl). */
static int raw_bus_request(struct nfd_bus *b, uint8_t cmd, bool with_flags,
			   uint32_t flags, int extra_type)
{
	char buf[MNL_SOCKET_BUFFER_SIZE] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, b->nb.len, b->nb.path);
	if (with_flags)
		mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FLAGS, flags);
	if (extra_type)
		mnl_attr_put_u32(nlh, extra_type, 0);
	return nfdbus_request_raw(b->h, cmd, 0, mnl_nlmsg_get_payload(nlh),
				  nlh->nlmsg_len - MNL_NLMSG_HDRLEN);
}

TEST_F(ctl, bus_flags)
{
	struct bus_name other = bus_name_abstract();
	struct nfdbus_bus nb = nfd_name(&other);
	struct nfd_bus *b = &self->b;
	uint32_t flags;
	int m;

	/* a bus nfdbus does not manage has none */
	ASSERT_EQ(0, bus_flags(_metadata, b));
	ASSERT_OK(nfdbus_set_bus_flags(b->h, &b->nb, NFDBUS_BUS_CHECK_SENDER));
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, b));
	/* flags are replaced, not added */
	ASSERT_OK(nfdbus_set_bus_flags(b->h, &b->nb, 0));
	ASSERT_EQ(0, bus_flags(_metadata, b));
	ASSERT_OK(nfdbus_set_bus_flags(b->h, &b->nb, NFDBUS_BUS_CHECK_SENDER));

	/* unknown flags (the first bit no flag has, all bits), a missing or
	 * unknown attribute: EINVAL, no change
	 */
	ASSERT_EQ(-EINVAL, nfdbus_set_bus_flags(b->h, &b->nb,
						 NFDBUS_BUS_FLAGS_ALL + 1));
	ASSERT_EQ(-EINVAL, nfdbus_set_bus_flags(b->h, &b->nb, ~0U));
	ASSERT_EQ(-EINVAL, raw_bus_request(b, NFDBUS_CMD_SET_BUS, false, 0, 0));
	ASSERT_EQ(-EINVAL, raw_bus_request(b, NFDBUS_CMD_SET_BUS, true, 0,
					   NFDBUS_A_MAX + 1));
	ASSERT_EQ(-EINVAL, raw_bus_request(b, NFDBUS_CMD_GET_BUS, false, 0,
					   NFDBUS_A_MAX + 1));
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, b));
	/* the reply to GET_BUS is one message */
	ASSERT_EQ(1, raw_bus_request(b, NFDBUS_CMD_GET_BUS, false, 0, 0));

	/* setting the flags does not touch the rules */
	NFD_ADD(b, 1, "member='A'", 0);
	ASSERT_OK(nfdbus_set_bus_flags(b->h, &b->nb, 0));
	ASSERT_EQ(1, count_rules(_metadata, b, 1));

	ASSERT_EQ(-ENOENT, nfdbus_set_bus_flags(b->h, &nb, 0));
	ASSERT_EQ(-ENOENT, nfdbus_get_bus_flags(b->h, &nb, &flags));
	m = bus_master(_metadata, &other);
	ASSERT_EQ(-EPROTONOSUPPORT, nfdbus_set_bus_flags(b->h, &nb, 0));
	ASSERT_EQ(-EPROTONOSUPPORT, nfdbus_get_bus_flags(b->h, &nb, &flags));
	close(m);
}

/*
 * Run fn in a child, with the given uid (all capabilities dropped) unless
 * uid is -1; its exit status.
 */
static int as_uid(uid_t uid, int (*fn)(struct nfd_bus *), struct nfd_bus *b)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (uid != (uid_t)-1 &&
		    (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(100);
		_exit(fn(b));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int in_child(int (*fn)(struct nfd_bus *), struct nfd_bus *b)
{
	return as_uid((uid_t)-1, fn, b);
}

/* As a uid that is neither the master's nor privileged. */
static int stranger(struct nfd_bus *b)
{
	struct nfdbus_stats st;
	struct nfdbus *h = nfdbus_open();
	uint32_t flags;
	int bad = 0;

	if (!h)
		return 101;
	bad |= nfdbus_add_match(h, &b->nb, b->p[1].addr, "", NULL) != -EPERM;
	bad |= (nfdbus_remove_match(h, &b->nb, b->p[1].addr, "member='A'") !=
		-EPERM) << 1;
	bad |= (nfdbus_flush(h, &b->nb, b->p[1].addr) != -EPERM) << 2;
	bad |= (nfdbus_list(h, &b->nb, NULL, NULL, NULL) != -EPERM) << 3;
	/* the counters tell about every bus: CAP_NET_ADMIN only */
	bad |= (nfdbus_get_stats(h, &st) != -EPERM) << 4;
	bad |= (nfdbus_set_bus_flags(h, &b->nb, 0) != -EPERM) << 5;
	bad |= (nfdbus_get_bus_flags(h, &b->nb, &flags) != -EPERM) << 6;
	nfdbus_close(h);
	return bad;
}

TEST_F(ctl, permissions)
{
	NFD_ADD(&self->b, 1, "member='A'", 0);
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb,
				       NFDBUS_BUS_CHECK_SENDER));
	ASSERT_EQ(0, as_uid(65534, stranger, &self->b));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 1));
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, &self->b));
}

static int manage(struct nfdbus *h, const struct nfdbus_bus *nb,
		  uint64_t peer, int want);

/*
 * In a child, where the harness cannot assert: a master on @bus, and one
 * client that it accepted (@p).  0, or the code the child exits with.
 */
static int child_bus(const struct bus_name *bus, int *m, struct bus_peer *p)
{
	*m = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
	if (*m < 0 || bus_bind_name(*m, bus) || listen(*m, 4))
		return 102;
	p->cfd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
	if (p->cfd < 0 || bus_connect_name(p->cfd, bus))
		return 103;
	p->afd = accept(*m, NULL, NULL);
	return p->afd < 0 ? 104 : 0;
}

/* The bus name @nb, naming @fd as the master's socket. */
static struct nfdbus_bus with_fd(const struct nfdbus_bus *nb, int fd)
{
	struct nfdbus_bus named = *nb;

	nfdbus_bus_set_master(&named, fd);
	return named;
}

/*
 * A master of uid 1000 manages its bus through its own sockets: a request
 * that names its bound socket, or an accepted one, in NFDBUS_A_BUS_FD.
 * The uid is not enough, nor is a client's socket of the bus, another
 * file, or a descriptor the process does not have.
 */
static int unprivileged_master(struct nfd_bus *unused)
{
	struct bus_peer p = { -1, -1, 0 };
	struct bus_name bus = bus_name_abstract();
	struct nfdbus_bus nb = nfd_name(&bus), by_m, by_a, fromfd;
	struct nfdbus_bus bad_nb[3];
	struct nfdbus *h;
	uint32_t flags;
	int m, bad, i;

	(void)unused;
	bad = child_bus(&bus, &m, &p);
	if (bad)
		return bad;
	h = nfdbus_open();
	if (!h)
		return 105;
	by_m = with_fd(&nb, m);
	by_a = with_fd(&nb, p.afd);
	bad |= nfdbus_add_match(h, &by_m, 1, "member='A'", NULL) != 0;
	bad |= (nfdbus_list(h, &by_a, NULL, NULL, NULL) != 1) << 1;
	bad |= (nfdbus_remove_match(h, &by_a, 1, "member='A'") != 0) << 2;
	bad |= (nfdbus_set_bus_flags(h, &by_m, NFDBUS_BUS_CHECK_SENDER) != 0)
	       << 3;
	bad |= (nfdbus_get_bus_flags(h, &by_m, &flags) != 0 ||
		flags != NFDBUS_BUS_CHECK_SENDER) << 4;
	/* libnfdbus names it from the socket as well */
	bad |= (nfdbus_bus_from_master(&fromfd, m) != 0 ||
		nfdbus_set_bus_flags(h, &fromfd, 0) != 0) << 5;
	bad_nb[0] = nb;
	bad_nb[1] = with_fd(&nb, p.cfd);
	bad_nb[2] = with_fd(&nb, 12345);
	for (i = 0; i < 3; i++)
		bad |= (manage(h, &bad_nb[i], 1, -EPERM) != 0) << (6 + i);
	bad |= (nfdbus_bus_from_master(&fromfd, STDIN_FILENO) == 0) << 9;
	nfdbus_close(h);
	close(p.afd);
	close(p.cfd);
	close(m);
	return bad;
}

TEST_F(ctl, master_socket_may)
{
	ASSERT_EQ(0, as_uid(1000, unprivileged_master, &self->b));
}

/*
 * The issue 36 case: a bus daemon of uid 65534, and another process of
 * that uid, which does not hold the daemon's sockets, cannot change its
 * bus: neither its flags nor a client's rules.
 */
static int same_uid_other_process(struct nfd_bus *unused)
{
	struct bus_peer p = { -1, -1, 0 };
	struct bus_name bus = bus_name_abstract();
	struct nfdbus_bus nb = nfd_name(&bus), mine;
	struct nfdbus *h;
	uint32_t flags;
	int m, bad, status;
	pid_t pid;

	(void)unused;
	bad = child_bus(&bus, &m, &p);
	if (bad)
		return bad;
	h = nfdbus_open();
	if (!h)
		return 105;
	mine = with_fd(&nb, m);
	if (nfdbus_set_bus_flags(h, &mine, NFDBUS_BUS_CHECK_SENDER |
				 NFDBUS_BUS_REPLIES) ||
	    nfdbus_add_match(h, &mine, 1, "member='A'", NULL))
		return 106;
	pid = fork();
	if (pid == 0) {
		struct nfdbus *other;
		struct nfdbus_bus guess;
		int err = 0;

		/* another process: none of the daemon's sockets */
		close(m);
		close(p.afd);
		other = nfdbus_open();
		if (!other)
			_exit(101);
		guess = with_fd(&nb, m);
		err |= nfdbus_set_bus_flags(other, &nb, 0) != -EPERM;
		err |= (nfdbus_set_bus_flags(other, &guess, 0) != -EPERM) << 1;
		err |= (nfdbus_flush(other, &nb, 1) != -EPERM) << 2;
		/* its own client socket of the bus is no master's */
		guess = with_fd(&nb, p.cfd);
		err |= (nfdbus_set_bus_flags(other, &guess, 0) != -EPERM) << 3;
		nfdbus_close(other);
		_exit(err);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 107;
	bad |= WEXITSTATUS(status) << 8;
	bad |= (nfdbus_get_bus_flags(h, &mine, &flags) != 0 ||
		flags != (NFDBUS_BUS_CHECK_SENDER | NFDBUS_BUS_REPLIES)) << 4;
	bad |= (nfdbus_list(h, &mine, NULL, NULL, NULL) != 1) << 5;
	nfdbus_close(h);
	close(p.afd);
	close(p.cfd);
	close(m);
	return bad;
}

TEST_F(ctl, same_uid_not_master)
{
	ASSERT_EQ(0, as_uid(65534, same_uid_other_process, &self->b));
}

/*
 * Without the master's socket, a request takes CAP_NET_ADMIN both in the
 * process that opened the netlink socket and in the one that sends on it
 * (nfdbus.rst, "Who manages a bus").
 */

/*
 * Every kind of command that names a bus, on h, for peer: 0 if each gave
 * want (0 or -EPERM), else a bit per command that did not.
 */
static int manage(struct nfdbus *h, const struct nfdbus_bus *nb,
		  uint64_t peer, int want)
{
	uint32_t flags;
	int bad = 0;

	bad |= nfdbus_add_match(h, nb, peer, "member='Z'", NULL) != want;
	bad |= (nfdbus_list(h, nb, &peer, NULL, NULL) != (want ? want : 1)) << 1;
	bad |= (nfdbus_remove_match(h, nb, peer, "member='Z'") != want) << 2;
	bad |= (nfdbus_set_bus_flags(h, nb, NFDBUS_BUS_CHECK_SENDER) !=
		want) << 3;
	bad |= (nfdbus_get_bus_flags(h, nb, &flags) != want) << 4;
	return bad;
}

/* Whether the task has no capability left, effective or permitted. */
static bool no_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, d))
		return false;
	return !(d[0].effective | d[1].effective | d[0].permitted |
		 d[1].permitted);
}

/* All ids to uid, for good: every capability goes. */
static bool drop_to(uid_t uid)
{
	return !setgroups(0, NULL) && !setresgid(uid, uid, uid) &&
	       !setresuid(uid, uid, uid) && no_caps();
}

/*
 * Opened as root, then root dropped for good: the socket carries no
 * right of its own any more; the master's socket, which the process
 * holds, does.
 */
static int open_then_drop(struct nfd_bus *b)
{
	struct nfdbus *h = nfdbus_open(), *now;
	struct nfdbus_bus by_m = with_fd(&b->nb, b->m);
	int bad;

	if (!h)
		return 101;
	if (!drop_to(65534))
		return 100;
	now = nfdbus_open();
	if (!now)
		return 102;
	bad = manage(now, &b->nb, b->p[1].addr, -EPERM) ? 1 : 0;
	bad |= manage(h, &b->nb, b->p[1].addr, -EPERM) ? 2 : 0;
	bad |= manage(h, &by_m, b->p[1].addr, 0) ? 4 : 0;
	nfdbus_close(now);
	nfdbus_close(h);
	return bad;
}

TEST_F(ctl, opened_then_privileges_dropped)
{
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb, 0));
	ASSERT_EQ(0, in_child(open_then_drop, &self->b));
	/* what the child did is done */
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, &self->b));
}

/*
 * Opened while root's effective uid was 65534: the socket never gets
 * root's rights, not when its task is root again, not when root sends
 * on it.
 */
static int open_unprivileged_then_regain(struct nfd_bus *b)
{
	struct nfdbus *h, *now;
	int bad;

	if (setegid(65534) || seteuid(65534))
		return 100;
	h = nfdbus_open();
	if (seteuid(0) || setegid(0))
		return 100;
	if (!h)
		return 101;
	bad = manage(h, &b->nb, b->p[1].addr, -EPERM) ? 1 : 0;
	/* the task has root's rights again, and its new socket too */
	now = nfdbus_open();
	if (!now)
		return 102;
	bad |= manage(now, &b->nb, b->p[1].addr, 0) ? 2 : 0;
	nfdbus_close(now);
	nfdbus_close(h);
	return bad;
}

TEST_F(ctl, opened_unprivileged_then_privileges_regained)
{
	ASSERT_EQ(0, in_child(open_unprivileged_then_regain, &self->b));
	ASSERT_EQ(0, count_rules(_metadata, &self->b, -1));
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * The socket passed with SCM_RIGHTS, both ways, between root (the
 * master's uid) and a process of uid 65534: root's socket does not
 * manage the bus in the other process, which lacks CAP_NET_ADMIN (the
 * master's socket, which it inherited, does), and the other's socket
 * does not in root's.
 */
TEST_F(ctl, socket_passed_to_another_process)
{
	struct nfdbus *theirs, *mine = self->b.h;
	int sv[2], status;
	pid_t pid;

	ASSERT_OK(nfdbus_set_bus_flags(mine, &self->b.nb, 0));
	ASSERT_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct nfdbus *got, *own;
		struct nfdbus_bus named;
		int fd, bad;

		close(sv[0]);
		if (!drop_to(65534))
			_exit(100);
		own = nfdbus_open();
		fd = recv_fd(sv[1]);
		got = fd < 0 ? NULL : nfdbus_fdopen(fd);
		if (!own || !got)
			_exit(101);
		bad = manage(own, &self->b.nb, self->b.p[1].addr, -EPERM) ?
		      1 : 0;
		bad |= manage(got, &self->b.nb, self->b.p[2].addr, -EPERM) ?
		       2 : 0;
		named = with_fd(&self->b.nb, self->b.m);
		bad |= manage(got, &named, self->b.p[2].addr, 0) ? 8 : 0;
		/* the parent's socket stays open in the parent */
		nfdbus_close(got);
		/* in flight, the socket outlives this process */
		if (send_fd(sv[1], nfdbus_fd(own)))
			bad |= 4;
		nfdbus_close(own);
		_exit(bad);
	}
	close(sv[1]);
	ASSERT_OK(send_fd(sv[0], nfdbus_fd(mine)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* the child's work is done, and the parent's socket still works */
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, &self->b));
	/* root, the master's uid, sending on the stranger's socket */
	theirs = nfdbus_fdopen(recv_fd(sv[0]));
	ASSERT_NE(NULL, theirs) TH_LOG("fdopen: %s", strerror(errno));
	ASSERT_EQ(0, manage(theirs, &self->b.nb, self->b.p[1].addr, -EPERM));
	nfdbus_close(theirs);
	close(sv[0]);
	ASSERT_EQ(0, count_rules(_metadata, &self->b, -1));
}

/*
 * A bus whose master is uid 1000: neither a socket opened by uid 1000 nor
 * one opened by root manages it once their task is uid 65534 without
 * capabilities, unless the request names the master's socket, which the
 * task holds.
 */
static int uid_and_capability(struct nfd_bus *unused)
{
	struct bus_peer p = { -1, -1, 0 };
	struct bus_name bus = bus_name_abstract();
	struct nfdbus_bus nb = nfd_name(&bus);
	struct nfdbus *by_root, *by_uid, *now;
	int m, bad;

	(void)unused;
	by_root = nfdbus_open();
	if (!by_root)
		return 101;
	if (setegid(1000) || seteuid(1000))
		return 100;
	bad = child_bus(&bus, &m, &p);
	if (bad)
		return bad;
	by_uid = nfdbus_open();
	if (!by_uid)
		return 104;
	if (seteuid(0) || setegid(0) || !drop_to(65534))
		return 100;
	now = nfdbus_open();
	if (!now)
		return 105;
	bad |= manage(by_uid, &nb, 1, -EPERM) ? 1 : 0;
	bad |= manage(by_root, &nb, 1, -EPERM) ? 2 : 0;
	bad |= manage(now, &nb, 1, -EPERM) ? 4 : 0;
	nb = with_fd(&nb, m);
	bad |= manage(by_uid, &nb, 1, 0) ? 8 : 0;
	bad |= manage(now, &nb, 1, 0) ? 16 : 0;
	nfdbus_close(now);
	nfdbus_close(by_uid);
	nfdbus_close(by_root);
	close(p.afd);
	close(p.cfd);
	close(m);
	return bad;
}

TEST_F(ctl, master_socket_not_uid_nor_opener)
{
	ASSERT_EQ(0, in_child(uid_and_capability, &self->b));
}

TEST_F(ctl, rules_go_with_peer)
{
	NFD_ADD(&self->b, 1, "member='A'", 0);
	NFD_ADD(&self->b, 1, "member='B'", 0);
	NFD_ADD(&self->b, 2, "member='C'", 0);
	bus_peer_close(&self->b.p[1]);
	ASSERT_EQ(1, count_rules(_metadata, &self->b, -1));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 2));
	/* the master disconnecting a client (closing its end) too */
	close(self->b.p[2].afd);
	self->b.p[2].afd = -1;
	ASSERT_EQ(0, count_rules(_metadata, &self->b, -1));
}

/* A request for a client that left, or never was, makes nothing. */
TEST_F(ctl, no_rules_for_gone_peers)
{
	struct nfdbus_policy_rule allow = { 0 };
	uint64_t gone = self->b.p[1].addr;
	struct bus_peer *p = &self->b.p[1];
	uint32_t nrules, refs;

	allow.direction = NFDBUS_POLICY_SEND;
	allow.allow = true;
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, 7, &allow, 1));
	bus_peer_close(&self->b.p[1]);
	ASSERT_EQ(-ENOENT, nfdbus_add_match(self->b.h, &self->b.nb, gone,
					    "member='A'", NULL));
	ASSERT_EQ(-ENOENT, nfdbus_set_peer_policy(self->b.h, &self->b.nb,
						  gone, 7));
	/* an address nobody was given, and the master's */
	ASSERT_EQ(-ENOENT, nfdbus_add_match(self->b.h, &self->b.nb, 0x1234,
					    "member='A'", NULL));
	ASSERT_EQ(-ENOENT, nfdbus_add_match(self->b.h, &self->b.nb, 0,
					    "member='A'", NULL));
	ASSERT_EQ(-ENOENT, nfdbus_set_peer_policy(self->b.h, &self->b.nb,
						  0x1234, 7));
	ASSERT_EQ(0, count_rules(_metadata, &self->b, -1));
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 7, &nrules,
				    &refs));
	ASSERT_EQ(0, refs) TH_LOG("peers using the policy");
	/* taking a policy away from anybody is harmless */
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb, gone, 0));
	/* a client that connected but has not joined may be given both */
	p->cfd = bus_socket(_metadata, BUS_PROTO_DBUS);
	ASSERT_OK(bus_connect_name(p->cfd, &self->b.bus));
	p->afd = bus_accept(_metadata, self->b.m);
	p->addr = bus_local_addr(_metadata, p->cfd);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb, p->addr, 7));
	ASSERT_OK(nfdbus_add_match(self->b.h, &self->b.nb, p->addr,
				   "member='A'", NULL));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 1));
}

/*
 * NFDBUS_A_BUS_PATH is taken as connect(2) takes sbus_path: a filesystem
 * path ends at its NUL, and one without a NUL is refused.
 */
TEST_F(ctl, bus_path_normalised)
{
	struct bus_name fs = bus_name_tmp();
	struct nfdbus_bus nb = nfd_name(&fs), bad;
	struct bus_peer p = { -1, -1, 0 };
	int m = bus_master_proto(_metadata, &fs, BUS_PROTO_DBUS);

	p.cfd = bus_socket(_metadata, BUS_PROTO_DBUS);
	ASSERT_OK(bus_connect_name(p.cfd, &fs));
	p.afd = bus_accept(_metadata, m);
	p.addr = bus_local_addr(_metadata, p.cfd);
	ASSERT_OK(nfdbus_add_match(self->b.h, &nb, p.addr, "member='A'", NULL));
	/* bytes after the NUL are not part of the name */
	bad = nb;
	memcpy(bad.path + nb.len, "junk", 4);
	bad.len = nb.len + 4;
	ASSERT_EQ(1, nfdbus_list(self->b.h, &bad, NULL, NULL, NULL));
	/* all BUS_PATH_MAX bytes and no NUL */
	memset(bad.path, 'x', BUS_PATH_MAX);
	memcpy(bad.path, nb.path, nb.len - 1);
	bad.len = BUS_PATH_MAX;
	ASSERT_EQ(-EINVAL, nfdbus_add_match(self->b.h, &bad, p.addr,
					    "member='B'", NULL));
	ASSERT_EQ(-EINVAL, nfdbus_list(self->b.h, &bad, NULL, NULL, NULL));
	ASSERT_EQ(1, nfdbus_list(self->b.h, &nb, NULL, NULL, NULL));
	bus_peer_close(&p);
	close(m);
	unlink(fs.sa.sbus_path);
}

/* Every command validates strictly, and the socket is close-on-exec. */
TEST_F(ctl, strict_and_cloexec)
{
	struct nfd_bus *b = &self->b;

	ASSERT_EQ(FD_CLOEXEC, fcntl(nfdbus_fd(b->h), F_GETFD) & FD_CLOEXEC);
	/* the commands that came first (add, remove, flush, dump, stats)
	 * refuse an unknown attribute as the later ones do
	 */
	ASSERT_EQ(-EINVAL, raw_bus_request(b, NFDBUS_CMD_GET_STATS, false, 0,
					   NFDBUS_A_MAX + 1));
	ASSERT_EQ(-EINVAL, raw_bus_request(b, NFDBUS_CMD_FLUSH, false, 0,
					   NFDBUS_A_MAX + 1));
	ASSERT_EQ(1, raw_bus_request(b, NFDBUS_CMD_GET_STATS, false, 0, 0));
}

TEST_F(ctl, rules_go_with_bus)
{
	int i;

	NFD_ADD(&self->b, 1, "member='A'", 0);
	NFD_ADD(&self->b, 2, "member='B'", 0);
	for (i = 0; i < self->b.n; i++)
		bus_peer_close(&self->b.p[i]);
	close(self->b.m);
	/* a new bus of the same name starts without rules */
	self->b.m = bus_master_proto(_metadata, &self->b.bus, BUS_PROTO_DBUS);
	ASSERT_EQ(0, count_rules(_metadata, &self->b, -1));
	nfd_peer_open(_metadata, &self->b, &self->b.p[0]);
	ASSERT_EQ(1, self->b.p[0].addr);
	ASSERT_EQ(0, count_rules(_metadata, &self->b, 0));
}

/* nfdbus-ctl, the tool in the guest, on the same bus */
TEST_F(ctl, nfdbus_ctl_tool)
{
	char cmd[512], out[256], want[256];
	const char *name = self->b.bus.sa.sbus_path + 1;
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "nfdbus-ctl add @%s 0x%llx \"member='X'\"", name,
		 (unsigned long long)self->b.p[1].addr);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(1, count_rules(_metadata, &self->b, 1));

	snprintf(cmd, sizeof(cmd), "nfdbus-ctl list @%s", name);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	ASSERT_EQ(0, pclose(f));
	snprintf(want, sizeof(want), "0x%016llx\tmember='X'\n",
		 (unsigned long long)self->b.p[1].addr);
	ASSERT_STREQ(want, out);

	/* a bad rule: exit status 1, and the rules are as they were */
	snprintf(cmd, sizeof(cmd),
		 "nfdbus-ctl add @%s 0x%llx \"type='bogus'\" 2>/dev/null",
		 name, (unsigned long long)self->b.p[1].addr);
	ASSERT_EQ(1, WEXITSTATUS(system(cmd)));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl remove @%s 0x%llx member=X",
		 name, (unsigned long long)self->b.p[1].addr);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, count_rules(_metadata, &self->b, 1));

	/* the flags of the bus */
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl bus @%s check-sender", name);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER, bus_flags(_metadata, &self->b));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl bus @%s", name);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	ASSERT_EQ(0, pclose(f));
	ASSERT_STREQ("check-sender\n", out);
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl bus @%s bogus 2>/dev/null", name);
	ASSERT_EQ(2, WEXITSTATUS(system(cmd)));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl bus @%s none", name);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, bus_flags(_metadata, &self->b));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl bus @%s policy check-sender", name);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(NFDBUS_BUS_CHECK_SENDER | NFDBUS_BUS_POLICY,
		  bus_flags(_metadata, &self->b));
}

/* The output of a command, which must exit 0. */
static void run_out(struct __test_metadata *_metadata, const char *cmd,
		    char *out, size_t size)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	ASSERT_NE(NULL, f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	ASSERT_EQ(0, pclose(f)) TH_LOG("%s", cmd);
}

/* A failed request leaves a bus as it was: unmanaged, every multicast
 * delivered.
 */
TEST_F(ctl, failed_policy_requests_leave_bus_unmanaged)
{
	static const char msg[] = "not D-Bus";
	uint32_t id;

	ASSERT_EQ(-ENOENT, nfdbus_set_peer_policy(self->b.h, &self->b.nb,
						  self->b.p[1].addr, 3));
	ASSERT_EQ(-ENOENT, nfdbus_del_policy(self->b.h, &self->b.nb, 3));
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[1].addr, 0));
	ASSERT_OK(nfdbus_get_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[1].addr, &id));
	ASSERT_EQ(0, id);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, msg, sizeof(msg)));
	ASSERT_EQ(0x7, nfd_receivers(_metadata, &self->b, msg, sizeof(msg)));
	ASSERT_EQ(0, nfd_stats(_metadata, &self->b).parsed);
}

/* nfdbus-ctl's policy commands */
TEST_F(ctl, nfdbus_ctl_policy)
{
	const char *name = self->b.bus.sa.sbus_path + 1;
	unsigned long long a1 = self->b.p[1].addr;
	uint32_t nrules, refs, id;
	char cmd[512], out[256];

	snprintf(cmd, sizeof(cmd),
		 "nfdbus-ctl policy @%s 5 allow,send,type=method_call,path=/a,member=X "
		 "deny,receive,addr=0x%llx,not-replies,interface=a.b", name, a1);
	ASSERT_EQ(0, system(cmd));
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 5, &nrules, &refs));
	ASSERT_EQ(2, nrules);
	ASSERT_EQ(0, refs);
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl peer-policy @%s 0x%llx 5", name, a1);
	ASSERT_EQ(0, system(cmd));
	ASSERT_OK(nfdbus_get_peer_policy(self->b.h, &self->b.nb, a1, &id));
	ASSERT_EQ(5, id);
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl peer-policy @%s 0x%llx", name, a1);
	run_out(_metadata, cmd, out, sizeof(out));
	ASSERT_STREQ("5\n", out);
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl policy-info @%s 5", name);
	run_out(_metadata, cmd, out, sizeof(out));
	ASSERT_STREQ("rules 2\npeers 1\n", out);

	/* a bad rule, a policy in use: exit status 1, nothing changes */
	snprintf(cmd, sizeof(cmd),
		 "nfdbus-ctl policy @%s 5 allow,sideways 2>/dev/null", name);
	ASSERT_EQ(1, WEXITSTATUS(system(cmd)));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl policy-del @%s 5 2>/dev/null", name);
	ASSERT_EQ(1, WEXITSTATUS(system(cmd)));
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 5, &nrules, &refs));
	ASSERT_EQ(2, nrules);

	snprintf(cmd, sizeof(cmd), "nfdbus-ctl peer-policy @%s 0x%llx 0", name, a1);
	ASSERT_EQ(0, system(cmd));
	snprintf(cmd, sizeof(cmd), "nfdbus-ctl policy-del @%s 5", name);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(-ENOENT, nfdbus_get_policy(self->b.h, &self->b.nb, 5, &nrules,
					     &refs));
}

TEST_HARNESS_MAIN
