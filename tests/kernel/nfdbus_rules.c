// SPDX-License-Identifier: GPL-2.0
/*
 * nfdbus match rules (Documentation/networking/nfdbus.rst, "Match
 * rules"), every key checked through real multicasts on a D-Bus bus:
 * exactly the peers whose rules match receive, eavesdroppers get
 * everything, peers without rules nothing (they are not even asked), and
 * unicast is not filtered.
 *
 * Peers: 0 sends, 1 gets the rule under test, 2 has no rule, 3 is an
 * eavesdropper (no rule), 4 owns the well-known name's address in some
 * cases.
 */
#include "nfdbus_test.h"

#define WK_ADDR	bus_mkaddr(1, 0x77)

FIXTURE(rules) {
	struct nfd_bus b;
};

FIXTURE_SETUP(rules)
{
	nfd_setup(_metadata, &self->b, 5);
	ASSERT_OK(setsockopt(self->b.p[3].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
}

FIXTURE_TEARDOWN(rules)
{
	nfd_teardown(&self->b);
}

/* The message most rows are about. */
static const struct nfd_msg m1 = {
	.path = "/org/ex/Obj", .iface = "org.ex.Iface", .member = "Changed",
	.sender = ":1.5", .sig = "sosu",
	.args = { "org.ex.Name", "/org/ex/Obj/child", "it's,here", "7" },
};

/* The same with a destination, and a string arg1. */
static const struct nfd_msg m2 = {
	.path = "/", .iface = "org.ex.Iface", .member = "Changed",
	.sender = ":1.5", .dest = ":1.9", .sig = "ss",
	.args = { "org.ex", "/org/ex/" },
};

static const struct nfd_msg m_call = {
	.type = DBUS_MESSAGE_TYPE_METHOD_CALL, .path = "/org/ex/Obj",
	.member = "Get",
};

struct row {
	const char *rule;
	const struct nfd_msg *msg;
	bool match;
};

static const struct row rows[] = {
	{ "", &m1, true },
	{ "type='signal'", &m1, true },
	{ "type='method_call'", &m1, false },
	{ "type='method_call'", &m_call, true },
	{ "type='method_return'", &m_call, false },
	{ "type='error'", &m_call, false },
	{ "sender=':1.5'", &m1, true },
	{ "sender=':1.6'", &m1, false },
	{ "interface='org.ex.Iface'", &m1, true },
	{ "interface='org.ex.Other'", &m1, false },
	{ "interface='org.ex.Iface'", &m_call, false },
	{ "member='Changed'", &m1, true },
	{ "member='Change'", &m1, false },
	{ "path='/org/ex/Obj'", &m1, true },
	{ "path='/org/ex'", &m1, false },
	{ "path='/org/ex/Obj/child'", &m1, false },
	{ "path_namespace='/org/ex'", &m1, true },
	{ "path_namespace='/org/ex/Obj'", &m1, true },
	{ "path_namespace='/org/e'", &m1, false },
	{ "path_namespace='/'", &m1, true },
	{ "path_namespace='/org'", &m2, false },
	{ "destination=':1.9'", &m1, false },
	{ "destination=':1.9'", &m2, true },
	{ "destination=':1.8'", &m2, false },
	{ "arg0='org.ex.Name'", &m1, true },
	{ "arg0='org.ex'", &m1, false },
	{ "arg2='it'\\''s,here'", &m1, true },
	{ "arg2=it\\'s','here", &m1, true },
	{ "arg2='its,here'", &m1, false },
	{ "arg3='7'", &m1, false },		/* a uint32, not a string */
	{ "arg4='x'", &m1, false },		/* no such argument */
	{ "arg1='/org/ex/Obj/child'", &m1, false },	/* an object path */
	{ "arg0='org.ex.Name',arg2='it'\\''s,here'", &m1, true },
	{ "arg0='org.ex.Name',arg2='x'", &m1, false },
	{ "arg1path='/org/ex/Obj/child'", &m1, true },
	{ "arg1path='/org/ex/'", &m1, true },
	{ "arg1path='/'", &m1, true },
	{ "arg1path='/org/ex'", &m1, false },
	{ "arg1path='/org/ex/Obj/child/'", &m1, false },
	{ "arg0path='org.ex.Name'", &m1, true },
	{ "arg1path='/org/ex/Obj/'", &m2, true },	/* arg is the prefix */
	{ "arg1path='/org/'", &m2, true },
	{ "arg1path='/org'", &m2, false },
	{ "arg0namespace='org.ex'", &m1, true },
	{ "arg0namespace='org.ex.Name'", &m1, true },
	{ "arg0namespace='org.e'", &m1, false },
	{ "arg0namespace='org.ex.Name.Sub'", &m1, false },
	{ "arg0namespace='org.ex'", &m_call, false },
	{ "type='signal',interface='org.ex.Iface',member='Changed',"
	  "path='/org/ex/Obj'", &m1, true },
	{ "type='signal',interface='org.ex.Iface',member='Other'", &m1, false },
	{ "member=Changed,type=signal", &m1, true },
	{ "eavesdrop='true'", &m1, true },
};

TEST_F(rules, table)
{
	struct nfd_blob m;
	unsigned int i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb,
					  self->b.p[1].addr));
		NFD_ADD(&self->b, 1, rows[i].rule, 0);
		m = nfd_marshal(_metadata, rows[i].msg, false);
		/* a client multicasts only signals; the master anything */
		if (rows[i].msg->type) {
			ASSERT_EQ(0, nfd_mcast_master(&self->b, 0, m.data,
						      m.len));
		} else {
			ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
		}
		/* peer 3 eavesdrops: it gets everything */
		ASSERT_EQ(rows[i].match ? 0xa : 0x8,
			  nfd_receivers(_metadata, &self->b, m.data, m.len))
			TH_LOG("rule %s", rows[i].rule);
		free(m.data);
	}
}

/*
 * A bus whose master never added a rule is left alone: everyone gets
 * every multicast, malformed ones too. The first rule changes that.
 */
TEST_F(rules, unmanaged_bus_unfiltered)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	static const char junk[] = "not D-Bus";

	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x1f, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, junk, sizeof(junk)));
	ASSERT_EQ(0x1f, nfd_receivers(_metadata, &self->b, junk,
				      sizeof(junk)));
	ASSERT_EQ(0, nfd_stats(_metadata, &self->b).parsed);

	NFD_ADD(&self->b, 1, "member='Other'", 0);
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, junk, sizeof(junk)));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));
	/* still managed once the rules are gone */
	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[1].addr));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/*
 * A client without rules is not asked about at all (AF_BUS skips it:
 * afbus_mcast_opt_in()), so it is not counted as filtered; it gets no
 * multicast, not even one whose header nfdbus cannot read. A client
 * whose last rule goes, by RemoveMatch or by a flush, is the same again.
 */
TEST_F(rules, no_rules_not_asked)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	struct nfd_msg spec = m1;
	struct nfdbus_stats st;
	struct nfd_blob big;
	char *path;

	NFD_ADD(&self->b, 1, "member='Changed'", 0);
	NFD_ADD(&self->b, 4, "member='Other'", 0);
	st = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	/* 1 matches, 3 eavesdrops; 4 is asked and kept from it; 0 and 2,
	 * without rules, are not asked
	 */
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(st.filtered + 1, nfd_stats(_metadata, &self->b).filtered);

	path = malloc(NFDBUS_PARSE_MAX + 2);
	ASSERT_NE(NULL, path);
	memset(path, 'a', NFDBUS_PARSE_MAX + 1);
	path[0] = '/';
	path[NFDBUS_PARSE_MAX + 1] = '\0';
	spec.path = path;
	big = nfd_marshal(_metadata, &spec, false);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, big.data, big.len));
	/* unreadable: to every client with rules, and the eavesdropper */
	ASSERT_EQ(0x1a, nfd_receivers(_metadata, &self->b, big.data,
				      big.len));

	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr, "member='Changed'"));
	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[4].addr));
	st = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, big.data, big.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, big.data,
				     big.len));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(st.filtered, nfd_stats(_metadata, &self->b).filtered);

	/* a rule again: asked again */
	NFD_ADD(&self->b, 1, "member='Changed'", 0);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(big.data);
	free(path);
	free(m.data);
}

/* Does peer 1 get a signal like m1 with @member? */
static bool member_reaches_1(struct __test_metadata *_metadata,
			     struct nfd_bus *b, const char *member)
{
	struct nfd_msg spec = m1;
	struct nfd_blob m;
	unsigned int got;

	spec.member = member;
	m = nfd_marshal(_metadata, &spec, false);
	EXPECT_EQ(0, nfd_mcast(b, 0, m.data, m.len));
	got = nfd_receivers(_metadata, b, m.data, m.len);
	free(m.data);
	return got & 0x2;
}

/*
 * Rules are looked up by the member they name (hashed), and rules that
 * name none are always tried: with 64 rules on as many members (which
 * share hash lists), a signal reaches the peer exactly when one names
 * its member, or when a rule without a member matches it; removing one
 * rule leaves the others of its list.
 */
TEST_F(rules, member_index)
{
	char rule[64], member[16];
	int i;

	for (i = 0; i < 64; i++) {
		snprintf(rule, sizeof(rule), "member='M%d'", i);
		NFD_ADD(&self->b, 1, rule, 0);
	}
	for (i = 0; i < 64; i++) {
		snprintf(member, sizeof(member), "M%d", i);
		ASSERT_TRUE(member_reaches_1(_metadata, &self->b, member))
			TH_LOG("member %s", member);
	}
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "M64"));
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "M"));
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "Changed"));

	ASSERT_EQ(0, nfdbus_remove_match(self->b.h, &self->b.nb,
					 self->b.p[1].addr, "member='M17'"));
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "M17"));
	ASSERT_TRUE(member_reaches_1(_metadata, &self->b, "M16"));
	ASSERT_TRUE(member_reaches_1(_metadata, &self->b, "M63"));

	/* no member named: tried for every member */
	NFD_ADD(&self->b, 1, "interface='org.ex.Iface',path='/org/ex/Obj'", 0);
	ASSERT_TRUE(member_reaches_1(_metadata, &self->b, "M17"));
	ASSERT_TRUE(member_reaches_1(_metadata, &self->b, "Changed"));

	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[1].addr));
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "M16"));
	ASSERT_FALSE(member_reaches_1(_metadata, &self->b, "Changed"));
}

/* Several peers with different rules: one message, the exact set. */
TEST_F(rules, several_peers)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, true);

	NFD_ADD(&self->b, 1, "member='Changed'", 0);
	NFD_ADD(&self->b, 1, "member='Other'", 0);
	NFD_ADD(&self->b, 2, "member='Other'", 0);
	NFD_ADD(&self->b, 2, "interface='org.ex.Other'", 0);
	NFD_ADD(&self->b, 4, "arg0namespace='org'", 0);
	NFD_ADD(&self->b, 0, "path='/x'", 0);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x1a, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* A well-known sender name follows the owner of the name's address. */
TEST_F(rules, well_known_sender)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	uint64_t wk = WK_ADDR;

	ASSERT_EQ(0, nfdbus_add_match(self->b.h, &self->b.nb,
				      self->b.p[1].addr,
				      "sender='org.ex.Service'", &wk));
	/* without an address a well-known name does not match */
	NFD_ADD(&self->b, 2, "sender='org.ex.Service'", 0);

	/* nobody owns the address yet */
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));

	/* peer 4 owns it: a message from peer 0 still does not match */
	ASSERT_OK(bus_addr_opt(self->b.p[4].afd, BUS_ADD_ADDR, wk));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));

	/* the name moves to peer 0: the same rule now matches */
	ASSERT_OK(bus_addr_opt(self->b.p[4].afd, BUS_DEL_ADDR, wk));
	ASSERT_OK(bus_addr_opt(self->b.p[0].afd, BUS_ADD_ADDR, wk));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* With an address, a unique sender name is the sender's address. */
TEST_F(rules, unique_sender_by_address)
{
	/* SENDER says :1.5, whoever sends it */
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	uint64_t a0 = self->b.p[0].addr, a4 = self->b.p[4].addr;

	ASSERT_EQ(0, nfdbus_add_match(self->b.h, &self->b.nb,
				      self->b.p[1].addr, "sender=':1.0'",
				      &a0));
	ASSERT_EQ(0, nfdbus_add_match(self->b.h, &self->b.nb,
				      self->b.p[2].addr, "sender=':1.5'",
				      &a4));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(0, nfd_mcast(&self->b, 4, m.data, m.len));
	ASSERT_EQ(0xc, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* Unicast and messages to the master are never filtered. */
TEST_F(rules, unicast_not_filtered)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	struct bus_name to = bus_dest(&self->b.bus, self->b.p[2].addr);
	char buf[512];

	NFD_ADD(&self->b, 2, "member='Other'", 0);
	ASSERT_EQ((ssize_t)m.len, sendto(self->b.p[0].cfd, m.data, m.len, 0,
					 (struct sockaddr *)&to.sa, to.len));
	ASSERT_EQ(0xc, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ((ssize_t)m.len, send(self->b.p[0].cfd, m.data, m.len, 0));
	ASSERT_EQ((ssize_t)m.len, recv(self->b.p[0].afd, buf, sizeof(buf),
				       MSG_DONTWAIT));
	free(m.data);
}

/* A peer with many rules, the matching one last. */
TEST_F(rules, many_rules)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);
	char rule[64];
	int i;

	for (i = 0; i < 200; i++) {
		snprintf(rule, sizeof(rule), "member='M%d'", i);
		NFD_ADD(&self->b, 1, rule, 0);
		NFD_ADD(&self->b, 2, rule, 0);
	}
	NFD_ADD(&self->b, 1, "member='Changed'", 0);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xa, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/*
 * The clients opted in to multicasts (those with rules) are on a list of
 * their own, which a multicast walks with the eavesdroppers' list: an
 * eavesdropper with a rule is on both and gets one copy; one that stops
 * eavesdropping keeps what its rule matches; a client that leaves with
 * its rules is off the list (a multicast after it reaches the others;
 * the debug kernel's KASAN would see a use after free); a client whose
 * rules are flushed is off it too, and an eavesdropper without rules is
 * reached through the eavesdroppers' list.
 */
TEST_F(rules, opted_in_list)
{
	struct nfd_blob m = nfd_marshal(_metadata, &m1, false);

	NFD_ADD(&self->b, 3, "member='Changed'", 0);
	NFD_ADD(&self->b, 1, "member='Changed'", 0);
	NFD_ADD(&self->b, 2, "member='Changed'", 0);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xe, nfd_receivers(_metadata, &self->b, m.data, m.len));

	ASSERT_OK(setsockopt(self->b.p[3].afd, SOL_BUS, BUS_UNSET_EAVESDROP,
			     NULL, 0));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xe, nfd_receivers(_metadata, &self->b, m.data, m.len));

	bus_peer_close(&self->b.p[1]);
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0xc, nfd_receivers(_metadata, &self->b, m.data, m.len));

	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[2].addr));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));

	ASSERT_EQ(0, nfdbus_flush(self->b.h, &self->b.nb, self->b.p[3].addr));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));

	ASSERT_OK(setsockopt(self->b.p[3].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x8, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

TEST_HARNESS_MAIN
