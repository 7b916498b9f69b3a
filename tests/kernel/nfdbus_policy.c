// SPDX-License-Identifier: GPL-2.0
/*
 * nfdbus policies (Documentation/networking/nfdbus.rst, "Policy"): on a
 * D-Bus bus with NFDBUS_BUS_POLICY, a message from a client to a client
 * needs the sender's send rules and the recipient's receive rules to
 * allow it, with D-Bus's semantics (last applicable rule wins, nothing
 * applicable denies). A unicast they refuse fails with EPERM at sendmsg;
 * a multicast just skips the recipients they refuse. The netlink
 * commands, their errors and limits, and policies going away with their
 * peers and bus.
 *
 * Peers: 0 sends and uses policy 1; 1 receives and uses policy 2; 2
 * uses policy 3; 3 eavesdrops (some tests). Rules are written in the
 * text form of nfdbus_policy_rule_parse(), with @N for the address of
 * peer N and @W for a well-known name's address.
 */
#include "nfdbus_test.h"

#include <sys/wait.h>

#include <libmnl/libmnl.h>

#define WK_ADDR	bus_mkaddr(1, 0x51)
#define NRULES	4

FIXTURE(policy) {
	struct nfd_bus b;
	char name[4][32];
};

FIXTURE_SETUP(policy)
{
	int i;

	nfd_setup(_metadata, &self->b, 4);
	for (i = 0; i < 4; i++)
		snprintf(self->name[i], sizeof(self->name[i]), ":0.%llx",
			 (unsigned long long)self->b.p[i].addr);
	NFD_ADD(&self->b, 1, "type='signal'", 0);
	NFD_ADD(&self->b, 2, "type='signal'", 0);
}

FIXTURE_TEARDOWN(policy)
{
	nfd_teardown(&self->b);
}

/* Set policy id to rules (NULL-terminated, text form); expect err. */
static int set_policy(struct __test_metadata *_metadata, struct nfd_bus *b,
		      uint32_t id, const char *const *rules)
{
	struct nfdbus_policy_rule r[NRULES];
	char text[NRULES][256], *at;
	int n, err;

	for (n = 0; rules && rules[n]; n++) {
		ASSERT_LT(n, NRULES);
		snprintf(text[n], sizeof(text[n]), "%s", rules[n]);
		at = strchr(rules[n], '@');
		if (at) {
			uint64_t a = at[1] == 'W' ? WK_ADDR :
				     b->p[at[1] - '0'].addr;

			snprintf(text[n], sizeof(text[n]), "%.*s0x%llx%s",
				 (int)(at - rules[n]), rules[n],
				 (unsigned long long)a, at + 2);
		}
		ASSERT_EQ(0, nfdbus_policy_rule_parse(&r[n], text[n]))
			TH_LOG("rule %s", rules[n]);
	}
	err = nfdbus_set_policy(b->h, &b->nb, id, r, n);
	return err;
}

#define SET_POLICY(b, id, ...) do {					\
	static const char *const __r[] = { __VA_ARGS__, NULL };		\
	int __e = set_policy(_metadata, (b), (id), __r);		\
	ASSERT_EQ(0, __e) TH_LOG("policy %u: %s (%s)", (id),		\
				 strerror(-__e), nfdbus_error((b)->h)); \
} while (0)

/* Peers 0, 1, 2 use policies 1, 2, 3 (which must exist), then the flag. */
static void use_policies(struct __test_metadata *_metadata, struct nfd_bus *b)
{
	int i;

	for (i = 0; i < 3; i++)
		ASSERT_OK(nfdbus_set_peer_policy(b->h, &b->nb, b->p[i].addr,
						 i + 1));
	ASSERT_OK(nfdbus_set_bus_flags(b->h, &b->nb, NFDBUS_BUS_POLICY));
}

static uint64_t denied(struct __test_metadata *_metadata, struct nfd_bus *b)
{
	return nfd_stats(_metadata, b).denied;
}

/* The messages of the tests, from peer 0 (to peer 1 if unicast). */
enum { CALL, CALL_NO_IFACE, RETURN, ERROR_MSG, SIGNAL_TO, SIGNAL };

static struct nfd_blob msg(struct __test_metadata *_metadata,
			   FIXTURE_DATA(policy) *self, int kind)
{
	struct nfd_msg m = {
		.type = DBUS_MESSAGE_TYPE_METHOD_CALL, .path = "/org/ex/Obj",
		.iface = "org.ex.Iface", .member = "Get",
		.sender = self->name[0], .dest = self->name[1],
		.sig = "s", .args = { "x" },
	};

	switch (kind) {
	case CALL_NO_IFACE:
		m.iface = NULL;
		break;
	case RETURN:
		m.type = DBUS_MESSAGE_TYPE_METHOD_RETURN;
		m.path = m.iface = m.member = NULL;
		break;
	case ERROR_MSG:	/* nfd_marshal names it org.ex.Error */
		m.type = DBUS_MESSAGE_TYPE_ERROR;
		m.path = m.iface = m.member = NULL;
		break;
	case SIGNAL_TO:
		m.type = DBUS_MESSAGE_TYPE_SIGNAL;
		m.member = "Changed";
		break;
	case SIGNAL:
		m.type = DBUS_MESSAGE_TYPE_SIGNAL;
		m.member = "Changed";
		m.dest = NULL;
		break;
	}
	return nfd_marshal(_metadata, &m, false);
}

/* Peer 0 sends a message of kind to peer 1: delivered, or EPERM. */
static void expect_unicast(struct __test_metadata *_metadata,
			   FIXTURE_DATA(policy) *self, int kind, bool ok,
			   const char *what)
{
	struct nfd_blob m = msg(_metadata, self, kind);
	uint64_t before = denied(_metadata, &self->b);
	int err;

	err = bus_errno_of(bus_sendto(self->b.p[0].cfd, &self->b.bus,
				      self->b.p[1].addr, m.data, m.len, 0));
	ASSERT_EQ(ok ? 0 : EPERM, err) TH_LOG("%s", what);
	ASSERT_EQ(ok ? 0x2 : 0, nfd_receivers(_metadata, &self->b, m.data,
					      m.len)) TH_LOG("%s", what);
	ASSERT_EQ(before + !ok, denied(_metadata, &self->b)) TH_LOG("%s", what);
	free(m.data);
}

struct row {
	const char *send[NRULES];	/* peer 0's policy */
	const char *recv[NRULES];	/* peer 1's policy */
	int kind;
	bool ok;
};

#define ALL_SEND	"allow,send"
#define ALL_RECV	"allow,receive"

static const struct row rows[] = {
	{ { ALL_SEND }, { ALL_RECV }, CALL, true },
	{ { NULL }, { ALL_RECV }, CALL, false },	/* nothing allows */
	{ { ALL_SEND }, { NULL }, CALL, false },
	{ { ALL_RECV }, { ALL_SEND }, CALL, false },	/* wrong direction */
	/* send_type */
	{ { "allow,send,type=method_call" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,type=signal" }, { ALL_RECV }, CALL, false },
	{ { "allow,send,type=signal" }, { ALL_RECV }, SIGNAL_TO, true },
	/* send_interface: no interface matches deny rules only */
	{ { "allow,send,interface=org.ex.Iface" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,interface=org.ex.Other" }, { ALL_RECV }, CALL, false },
	{ { "allow,send,interface=org.ex.Iface" }, { ALL_RECV },
	  CALL_NO_IFACE, false },
	{ { ALL_SEND, "deny,send,interface=org.ex.Other" }, { ALL_RECV },
	  CALL_NO_IFACE, false },
	{ { ALL_SEND, "deny,send,interface=org.ex.Other" }, { ALL_RECV },
	  CALL, true },
	/* send_member, send_path, send_error */
	{ { "allow,send,member=Get" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,member=Set" }, { ALL_RECV }, CALL, false },
	{ { "allow,send,path=/org/ex/Obj" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,path=/org/ex" }, { ALL_RECV }, CALL, false },
	{ { ALL_SEND, "deny,send,error=org.ex.Error" }, { ALL_RECV },
	  ERROR_MSG, false },
	{ { ALL_SEND, "deny,send,error=org.ex.Other" }, { ALL_RECV },
	  ERROR_MSG, true },
	/* a message without the field matches the rule (as dbus-daemon) */
	{ { "allow,send,member=Get" }, { ALL_RECV }, RETURN, true },
	/* send_destination: the recipient's address */
	{ { "allow,send,addr=@1" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,addr=@2" }, { ALL_RECV }, CALL, false },
	{ { "allow,send,addr=@W" }, { ALL_RECV }, CALL, false },
	/* the last rule that applies wins */
	{ { ALL_SEND, "deny,send,member=Get" }, { ALL_RECV }, CALL, false },
	{ { "deny,send", "allow,send,member=Get" }, { ALL_RECV }, CALL, true },
	{ { "allow,send,member=Get", "deny,send" }, { ALL_RECV }, CALL, false },
	/* replies: requested ones, with send_requested_reply='false' deny */
	{ { ALL_SEND, "deny,send,not-replies" }, { ALL_RECV }, RETURN, true },
	{ { ALL_SEND, "deny,send,not-replies" }, { ALL_RECV }, ERROR_MSG, true },
	{ { ALL_SEND, "deny,send,not-replies" }, { ALL_RECV }, CALL, false },
	{ { "allow,send,type=method_call" }, { ALL_RECV }, RETURN, false },
	/* send_broadcast: a signal with a destination is none */
	{ { "allow,send,broadcast" }, { ALL_RECV }, SIGNAL_TO, false },
	{ { "allow,send,not-broadcast" }, { ALL_RECV }, SIGNAL_TO, true },
	/* receive rules: receive_sender is the sender's address */
	{ { ALL_SEND }, { "allow,receive,addr=@0" }, CALL, true },
	{ { ALL_SEND }, { "allow,receive,addr=@2" }, CALL, false },
	{ { ALL_SEND }, { "allow,receive,type=method_call,member=Get" }, CALL,
	  true },
	{ { ALL_SEND }, { "allow,receive,interface=org.ex.Other" }, CALL,
	  false },
	{ { ALL_SEND }, { ALL_RECV, "deny,receive,path=/org/ex/Obj" }, CALL,
	  false },
	{ { ALL_SEND }, { ALL_RECV, "deny,receive,type=error" }, ERROR_MSG,
	  false },
	{ { ALL_SEND }, { ALL_RECV, "deny,receive,type=error,not-replies" },
	  ERROR_MSG, true },
};

TEST_F(policy, unicast_rules)
{
	unsigned int i;

	SET_POLICY(&self->b, 1, ALL_SEND);
	SET_POLICY(&self->b, 2, ALL_RECV);
	SET_POLICY(&self->b, 3, ALL_SEND, ALL_RECV);
	use_policies(_metadata, &self->b);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ASSERT_EQ(0, set_policy(_metadata, &self->b, 1, rows[i].send));
		ASSERT_EQ(0, set_policy(_metadata, &self->b, 2, rows[i].recv));
		expect_unicast(_metadata, self, rows[i].kind, rows[i].ok,
			       rows[i].send[0] ? rows[i].send[0] : "(none)");
	}
}

/* A send_destination on a well-known name follows the name's owner. */
TEST_F(policy, well_known_destination)
{
	SET_POLICY(&self->b, 1, "allow,send,addr=@W");
	SET_POLICY(&self->b, 2, ALL_RECV);
	SET_POLICY(&self->b, 3, ALL_RECV);
	use_policies(_metadata, &self->b);
	expect_unicast(_metadata, self, CALL, false, "nobody owns the name");
	ASSERT_OK(bus_addr_opt(self->b.p[1].afd, BUS_ADD_ADDR, WK_ADDR));
	expect_unicast(_metadata, self, CALL, true, "peer 1 owns it");
	ASSERT_OK(bus_addr_opt(self->b.p[1].afd, BUS_DEL_ADDR, WK_ADDR));
	ASSERT_OK(bus_addr_opt(self->b.p[2].afd, BUS_ADD_ADDR, WK_ADDR));
	expect_unicast(_metadata, self, CALL, false, "peer 2 owns it");
}

/* Multicasts: each recipient that its match rules let through is
 * checked; the sender is never told.
 */
TEST_F(policy, multicast)
{
	struct nfd_blob m = msg(_metadata, self, SIGNAL);
	uint64_t before;

	SET_POLICY(&self->b, 1, "allow,send,type=signal");
	SET_POLICY(&self->b, 2, ALL_RECV);
	SET_POLICY(&self->b, 3, ALL_RECV);
	use_policies(_metadata, &self->b);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x6, nfd_receivers(_metadata, &self->b, m.data, m.len));

	before = denied(_metadata, &self->b);
	SET_POLICY(&self->b, 3, "deny,receive");
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, m.data, m.len));
	/* (AF_BUS may route a message more than once) */
	ASSERT_LE(before + 1, denied(_metadata, &self->b));

	SET_POLICY(&self->b, 3, ALL_RECV);
	SET_POLICY(&self->b, 1, "allow,send,addr=@2");
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x4, nfd_receivers(_metadata, &self->b, m.data, m.len));

	SET_POLICY(&self->b, 1, "allow,send,broadcast");
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x6, nfd_receivers(_metadata, &self->b, m.data, m.len));
	SET_POLICY(&self->b, 1, "allow,send,not-broadcast");
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* A peer without a policy may not talk to clients; the master is not
 * checked either way, nor are eavesdroppers' copies.
 */
TEST_F(policy, no_policy_and_master)
{
	struct nfd_blob m = msg(_metadata, self, CALL);
	char buf[512];

	SET_POLICY(&self->b, 2, ALL_RECV);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[1].addr, 2));
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb,
				       NFDBUS_BUS_POLICY));
	ASSERT_ERRNO(EPERM, bus_sendto(self->b.p[0].cfd, &self->b.bus,
				       self->b.p[1].addr, m.data, m.len, 0));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));

	/* to the master, by no address, address 0, or nobody's */
	ASSERT_EQ((ssize_t)m.len, send(self->b.p[0].cfd, m.data, m.len,
				       MSG_NOSIGNAL));
	ASSERT_EQ((ssize_t)m.len, recv(self->b.p[0].afd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	ASSERT_EQ((ssize_t)m.len, bus_sendto(self->b.p[0].cfd, &self->b.bus,
					     bus_mkaddr(0, 0x999), m.data,
					     m.len, 0));
	ASSERT_EQ((ssize_t)m.len, recv(self->b.p[0].afd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	/* from the master to a peer without a policy */
	ASSERT_EQ((ssize_t)m.len, bus_sendto(self->b.p[1].afd, &self->b.bus,
					     self->b.p[0].addr, m.data,
					     m.len, 0));
	ASSERT_EQ(0x1, nfd_receivers(_metadata, &self->b, m.data, m.len));

	/* allowed: the eavesdropper (no policy) gets its copy */
	ASSERT_OK(setsockopt(self->b.p[3].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	SET_POLICY(&self->b, 1, ALL_SEND);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[0].addr, 1));
	ASSERT_EQ((ssize_t)m.len, bus_sendto(self->b.p[0].cfd, &self->b.bus,
					     self->b.p[1].addr, m.data,
					     m.len, 0));
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* New rules for a policy (a configuration reload) hold for all of its
 * peers at once; without NFDBUS_BUS_POLICY nothing is checked.
 */
TEST_F(policy, replace_and_flag)
{
	struct nfd_blob m = msg(_metadata, self, CALL);
	uint32_t n, refs;

	SET_POLICY(&self->b, 1, ALL_SEND, ALL_RECV);
	SET_POLICY(&self->b, 2, ALL_SEND);
	SET_POLICY(&self->b, 3, ALL_SEND);
	use_policies(_metadata, &self->b);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[1].addr, 1));
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 1, &n, &refs));
	ASSERT_EQ(2, n);
	ASSERT_EQ(2, refs);
	expect_unicast(_metadata, self, CALL, true, "allowed");
	SET_POLICY(&self->b, 1, ALL_SEND);
	expect_unicast(_metadata, self, CALL, false, "peer 1 may not receive");
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb, 0));
	ASSERT_EQ(0, bus_errno_of(bus_sendto(self->b.p[0].cfd, &self->b.bus,
					     self->b.p[1].addr, m.data,
					     m.len, 0)));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/*
 * Requests libnfdbus does not make: 0, a rule without direction; 1, a
 * list entry that is not a rule; 2, no policy id (nor peer); 3, both.
 */
static int raw_policy(struct nfd_bus *b, uint8_t cmd, int what)
{
	char buf[1024] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nlattr *list, *rule;

	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, b->nb.len, b->nb.path);
	if (what != 2)
		mnl_attr_put_u32(nlh, NFDBUS_A_POLICY_ID, 8);
	if (what == 3)
		mnl_attr_put_u64(nlh, NFDBUS_A_PEER, b->p[0].addr);
	if (cmd == NFDBUS_CMD_SET_POLICY) {
		list = mnl_attr_nest_start(nlh, NFDBUS_A_POLICY_RULES);
		if (what == 1) {
			mnl_attr_put_u64(nlh, NFDBUS_A_PEER, 1);
		} else {
			rule = mnl_attr_nest_start(nlh, NFDBUS_A_POLICY_RULE);
			mnl_attr_put_u8(nlh, NFDBUS_POLICY_A_ALLOW, 1);
			if (what)
				mnl_attr_put_u8(nlh, NFDBUS_POLICY_A_DIRECTION,
						NFDBUS_POLICY_SEND);
			mnl_attr_nest_end(nlh, rule);
		}
		mnl_attr_nest_end(nlh, list);
	}
	return nfdbus_request_raw(b->h, cmd, 0, mnl_nlmsg_get_payload(nlh),
				  nlh->nlmsg_len - MNL_NLMSG_HDRLEN);
}

TEST_F(policy, netlink)
{
	struct nfd_bus *b = &self->b;
	static const char *const bad_rules[][2] = {
		{ "allow,send,broadcast,not-broadcast", NULL },
	};
	struct nfdbus_policy_rule r[2];
	char text[64];
	uint32_t n, refs, id;

	SET_POLICY(b, 7, ALL_SEND, "deny,receive,member=X");
	ASSERT_OK(nfdbus_get_policy(b->h, &b->nb, 7, &n, &refs));
	ASSERT_EQ(2, n);
	ASSERT_EQ(0, refs);
	ASSERT_OK(nfdbus_get_peer_policy(b->h, &b->nb, b->p[0].addr, &id));
	ASSERT_EQ(0, id);
	ASSERT_OK(nfdbus_set_peer_policy(b->h, &b->nb, b->p[0].addr, 7));
	ASSERT_OK(nfdbus_get_peer_policy(b->h, &b->nb, b->p[0].addr, &id));
	ASSERT_EQ(7, id);
	ASSERT_OK(nfdbus_get_policy(b->h, &b->nb, 7, &n, &refs));
	ASSERT_EQ(1, refs);
	ASSERT_EQ(-EBUSY, nfdbus_del_policy(b->h, &b->nb, 7));
	ASSERT_EQ(-ENOENT, nfdbus_set_peer_policy(b->h, &b->nb, b->p[1].addr,
						  8));
	/* a policy with no rules denies everything */
	ASSERT_OK(nfdbus_set_policy(b->h, &b->nb, 8, NULL, 0));
	ASSERT_OK(nfdbus_get_policy(b->h, &b->nb, 8, &n, &refs));
	ASSERT_EQ(0, n);
	/* match rules and policy of a peer are independent */
	NFD_ADD(b, 0, "member='A'", 0);
	ASSERT_OK(nfdbus_flush(b->h, &b->nb, b->p[0].addr));
	ASSERT_OK(nfdbus_get_peer_policy(b->h, &b->nb, b->p[0].addr, &id));
	ASSERT_EQ(7, id);
	ASSERT_OK(nfdbus_set_peer_policy(b->h, &b->nb, b->p[0].addr, 0));
	ASSERT_OK(nfdbus_get_policy(b->h, &b->nb, 7, &n, &refs));
	ASSERT_EQ(0, refs);
	ASSERT_OK(nfdbus_del_policy(b->h, &b->nb, 7));
	ASSERT_EQ(-ENOENT, nfdbus_get_policy(b->h, &b->nb, 7, &n, &refs));
	ASSERT_EQ(-ENOENT, nfdbus_del_policy(b->h, &b->nb, 7));

	/* bad rules: the policy stays as it was */
	ASSERT_EQ(-EINVAL, set_policy(_metadata, b, 8, bad_rules[0]));
	memset(r, 0, sizeof(r));
	r[0].direction = NFDBUS_POLICY_SEND;
	r[0].allow = 2;
	ASSERT_EQ(-ERANGE, nfdbus_set_policy(b->h, &b->nb, 8, r, 1));
	r[0].allow = 1;
	r[0].type = 5;
	ASSERT_EQ(-ERANGE, nfdbus_set_policy(b->h, &b->nb, 8, r, 1));
	r[0].type = 0;
	r[0].direction = 3;
	ASSERT_EQ(-ERANGE, nfdbus_set_policy(b->h, &b->nb, 8, r, 1));
	r[0].direction = 0;
	ASSERT_EQ(-ERANGE, nfdbus_set_policy(b->h, &b->nb, 8, r, 1));
	ASSERT_EQ(-EINVAL, raw_policy(b, NFDBUS_CMD_SET_POLICY, 0));
	ASSERT_EQ(-EINVAL, raw_policy(b, NFDBUS_CMD_SET_POLICY, 1));
	ASSERT_EQ(-EINVAL, raw_policy(b, NFDBUS_CMD_SET_POLICY, 2));
	ASSERT_EQ(-EINVAL, raw_policy(b, NFDBUS_CMD_GET_POLICY, 2));
	ASSERT_EQ(-EINVAL, raw_policy(b, NFDBUS_CMD_GET_POLICY, 3));
	r[0].direction = NFDBUS_POLICY_SEND;
	r[0].flags = 1U << 7;
	ASSERT_EQ(-EINVAL, nfdbus_set_policy(b->h, &b->nb, 8, r, 1));
	r[0].flags = 0;
	memset(text, 'a', sizeof(text));
	text[sizeof(text) - 1] = '\0';
	r[0].interface = text;
	ASSERT_OK(nfdbus_set_policy(b->h, &b->nb, 9, r, 1));
	ASSERT_EQ(-ERANGE, nfdbus_set_policy(b->h, &b->nb, 0, r, 1));
	ASSERT_OK(nfdbus_get_policy(b->h, &b->nb, 8, &n, &refs));
	ASSERT_EQ(0, n);

	/* the text form */
	snprintf(text, sizeof(text), "allow,send,type=bogus");
	ASSERT_EQ(-EINVAL, nfdbus_policy_rule_parse(&r[0], text));
	snprintf(text, sizeof(text), "allow,deny,send");
	ASSERT_EQ(-EINVAL, nfdbus_policy_rule_parse(&r[0], text));
	snprintf(text, sizeof(text), "allow");
	ASSERT_EQ(-EINVAL, nfdbus_policy_rule_parse(&r[0], text));
}

/* Names past NFDBUS_POLICY_NAME_MAX, paths past NFDBUS_POLICY_PATH_MAX. */
TEST_F(policy, string_limits)
{
	struct nfdbus_policy_rule r = {
		.direction = NFDBUS_POLICY_SEND, .allow = 1,
	};
	char *s = malloc(NFDBUS_POLICY_PATH_MAX + 2);

	ASSERT_NE(NULL, s);
	memset(s, 'a', NFDBUS_POLICY_PATH_MAX + 1);
	s[NFDBUS_POLICY_NAME_MAX] = '\0';
	r.member = s;
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, 1, &r, 1));
	s[NFDBUS_POLICY_NAME_MAX] = 'a';
	s[NFDBUS_POLICY_NAME_MAX + 1] = '\0';
	ASSERT_EQ(-EINVAL, nfdbus_set_policy(self->b.h, &self->b.nb, 1, &r, 1));
	r.member = NULL;
	s[0] = '/';
	s[NFDBUS_POLICY_NAME_MAX + 1] = 'a';
	s[NFDBUS_POLICY_PATH_MAX] = '\0';
	r.path = s;
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, 1, &r, 1));
	s[NFDBUS_POLICY_PATH_MAX] = 'a';
	s[NFDBUS_POLICY_PATH_MAX + 1] = '\0';
	ASSERT_EQ(-EINVAL, nfdbus_set_policy(self->b.h, &self->b.nb, 1, &r, 1));
	free(s);
}

/* NFDBUS_POLICY_RULES_MAX rules in a policy, NFDBUS_BUS_POLICIES_MAX
 * policies on a bus.
 */
TEST_F(policy, count_limits)
{
	struct nfdbus_policy_rule *r;
	uint32_t i, n, refs;

	r = calloc(NFDBUS_POLICY_RULES_MAX + 1, sizeof(*r));
	ASSERT_NE(NULL, r);
	for (i = 0; i <= NFDBUS_POLICY_RULES_MAX; i++) {
		r[i].direction = NFDBUS_POLICY_RECEIVE;
		r[i].member = "M";
	}
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, 1, r,
				    NFDBUS_POLICY_RULES_MAX));
	ASSERT_EQ(-E2BIG, nfdbus_set_policy(self->b.h, &self->b.nb, 1, r,
					    NFDBUS_POLICY_RULES_MAX + 1));
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 1, &n, &refs));
	ASSERT_EQ(NFDBUS_POLICY_RULES_MAX, n);
	free(r);

	for (i = 2; i <= NFDBUS_BUS_POLICIES_MAX; i++)
		ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, i, NULL, 0));
	ASSERT_EQ(-ENOSPC, nfdbus_set_policy(self->b.h, &self->b.nb, i, NULL,
					     0));
	/* replacing an existing one is no new policy */
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, 5, NULL, 0));
	ASSERT_OK(nfdbus_del_policy(self->b.h, &self->b.nb, 5));
	ASSERT_OK(nfdbus_set_policy(self->b.h, &self->b.nb, i, NULL, 0));
}

/* A peer's choice goes with the peer; policies with their bus. */
TEST_F(policy, lifetime)
{
	uint32_t n, refs;
	int i;

	SET_POLICY(&self->b, 1, ALL_SEND);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[0].addr, 1));
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[1].addr, 1));
	bus_peer_close(&self->b.p[0]);
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 1, &n, &refs));
	ASSERT_EQ(1, refs);
	close(self->b.p[1].afd);	/* the master drops the client */
	self->b.p[1].afd = -1;
	ASSERT_OK(nfdbus_get_policy(self->b.h, &self->b.nb, 1, &n, &refs));
	ASSERT_EQ(0, refs);
	ASSERT_OK(nfdbus_set_peer_policy(self->b.h, &self->b.nb,
					 self->b.p[2].addr, 1));

	for (i = 0; i < self->b.n; i++)
		bus_peer_close(&self->b.p[i]);
	close(self->b.m);
	self->b.m = bus_master_proto(_metadata, &self->b.bus, BUS_PROTO_DBUS);
	ASSERT_EQ(-ENOENT, nfdbus_get_policy(self->b.h, &self->b.nb, 1, &n,
					     &refs));
}

/* Only the master's uid (or CAP_NET_ADMIN) sets and reads policies. */
static int stranger(struct nfd_bus *b)
{
	struct nfdbus *h = nfdbus_open();
	uint32_t n, refs;
	int bad = 0;

	if (!h)
		return 101;
	bad |= nfdbus_set_policy(h, &b->nb, 1, NULL, 0) != -EPERM;
	bad |= (nfdbus_del_policy(h, &b->nb, 1) != -EPERM) << 1;
	bad |= (nfdbus_set_peer_policy(h, &b->nb, b->p[0].addr, 1) != -EPERM) << 2;
	bad |= (nfdbus_get_policy(h, &b->nb, 1, &n, &refs) != -EPERM) << 3;
	nfdbus_close(h);
	return bad;
}

TEST_F(policy, permissions)
{
	pid_t pid;
	int status;

	SET_POLICY(&self->b, 1, ALL_SEND);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(100);
		_exit(stranger(&self->b));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
