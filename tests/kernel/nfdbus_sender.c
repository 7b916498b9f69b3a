// SPDX-License-Identifier: GPL-2.0
/*
 * nfdbus sender check (Documentation/networking/nfdbus.rst, "Senders"):
 * on a D-Bus bus whose master set NFDBUS_BUS_CHECK_SENDER, a client's
 * message to anybody but the master goes out only if its SENDER is the
 * client's unique name, ":0." and its address in lowercase hexadecimal;
 * anything else fails with EPERM, reaches nobody and is counted. The
 * master's messages, and messages to the master, are not checked.
 *
 * Peers: 0 sends, 1 receives unicasts and has type='signal', 2 and 3 have
 * no rule.
 */
#include "nfdbus_test.h"

FIXTURE(sender) {
	struct nfd_bus b;
	char name[4][32];	/* the peers' unique names */
};

FIXTURE_VARIANT(sender) {
	bool big;
};

FIXTURE_VARIANT_ADD(sender, little) {
	.big = false,
};

FIXTURE_VARIANT_ADD(sender, big) {
	.big = true,
};

FIXTURE_SETUP(sender)
{
	int i;

	nfd_setup(_metadata, &self->b, 4);
	for (i = 0; i < 4; i++)
		snprintf(self->name[i], sizeof(self->name[i]), ":0.%llx",
			 (unsigned long long)self->b.p[i].addr);
	NFD_ADD(&self->b, 1, "type='signal'", 0);
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb,
				       NFDBUS_BUS_CHECK_SENDER));
}

FIXTURE_TEARDOWN(sender)
{
	nfd_teardown(&self->b);
}

/* A method call to peer 1 with the given SENDER (NULL: none). */
static struct nfd_blob call_from(struct __test_metadata *_metadata,
				 const char *sender, bool big)
{
	const struct nfd_msg spec = {
		.type = DBUS_MESSAGE_TYPE_METHOD_CALL, .path = "/org/ex/Obj",
		.iface = "org.ex.Iface", .member = "Get", .sender = sender,
		.dest = ":0.2", .sig = "s", .args = { "x" },
	};

	return nfd_marshal(_metadata, &spec, big);
}

/* sendto(fd, addr): 0 or the errno. */
static int send_to(struct nfd_bus *b, int fd, uint64_t addr,
		   const struct nfd_blob *m)
{
	return bus_errno_of(bus_sendto(fd, &b->bus, addr, m->data, m->len, 0));
}

/* fd has exactly m queued, which is taken off. */
static void expect_on(struct __test_metadata *_metadata, int fd,
		      const struct nfd_blob *m)
{
	char buf[8192];

	ASSERT_EQ((ssize_t)m->len, recv(fd, buf, sizeof(buf), MSG_DONTWAIT))
		TH_LOG("recv: %s", strerror(errno));
	ASSERT_EQ(0, memcmp(buf, m->data, m->len));
	bus_expect_none(_metadata, fd);
}

/* Peer 0 sends m to peer 1: err 0 if it must get it, else nobody does. */
static void unicast(struct __test_metadata *_metadata, struct nfd_bus *b,
		    const struct nfd_blob *m, int err, const char *what)
{
	struct nfdbus_stats before = nfd_stats(_metadata, b), after;

	ASSERT_EQ(err, send_to(b, b->p[0].cfd, b->p[1].addr, m))
		TH_LOG("%s", what);
	ASSERT_EQ(err ? 0 : 0x2, nfd_receivers(_metadata, b, m->data, m->len))
		TH_LOG("%s", what);
	after = nfd_stats(_metadata, b);
	ASSERT_EQ(before.forged + !!err, after.forged) TH_LOG("%s", what);
	ASSERT_EQ(before.malformed, after.malformed) TH_LOG("%s", what);
}

TEST_F(sender, unicast)
{
	static const char *const forged[] = {
		":0.2",			/* peer 1's name */
		"org.freedesktop.DBus",	/* the bus */
		":1.1",			/* another naming */
		":0.01",		/* leading zero */
		":0.10",		/* a longer one */
		"org.ex.Mine",		/* a well-known name peer 0 owns */
	};
	struct nfd_blob m;
	unsigned int i;

	ASSERT_EQ(1, self->b.p[0].addr);
	ASSERT_EQ(2, self->b.p[1].addr);
	m = call_from(_metadata, self->name[0], variant->big);
	unicast(_metadata, &self->b, &m, 0, "own unique name");
	free(m.data);

	ASSERT_OK(bus_addr_opt(self->b.p[0].afd, BUS_ADD_ADDR,
			       bus_mkaddr(1, 0x42)));
	for (i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		m = call_from(_metadata, forged[i], variant->big);
		unicast(_metadata, &self->b, &m, EPERM, forged[i]);
		free(m.data);
	}
	m = call_from(_metadata, NULL, variant->big);
	unicast(_metadata, &self->b, &m, EPERM, "no SENDER");
	free(m.data);
}

/* Hexadecimal digits are lowercase: client 0xab is :0.ab, not :0.AB. */
TEST_F(sender, hex_lowercase)
{
	struct nfd_bus *b = &self->b;
	struct bus_peer *p = &b->p[3];
	struct nfd_blob m;

	/* clients get addresses in order: close peer 3, open until 0xab */
	bus_peer_close(p);
	do {
		if (p->cfd >= 0)
			bus_peer_close(p);
		nfd_peer_open(_metadata, b, p);
	} while (p->addr < 0xab);
	ASSERT_EQ(0xab, p->addr);

	m = call_from(_metadata, ":0.AB", variant->big);
	ASSERT_EQ(EPERM, send_to(b, p->cfd, b->p[1].addr, &m));
	free(m.data);
	m = call_from(_metadata, ":0.ab", variant->big);
	ASSERT_EQ(0, send_to(b, p->cfd, b->p[1].addr, &m));
	expect_on(_metadata, b->p[1].cfd, &m);
	free(m.data);
}

/* Malformed: refused as before, counted as malformed, not as forged. */
TEST_F(sender, malformed_unicast)
{
	static char junk[] = "not a D-Bus message at all";
	struct nfd_blob m = { junk, sizeof(junk) };
	struct nfdbus_stats before = nfd_stats(_metadata, &self->b), after;

	ASSERT_EQ(EPERM, send_to(&self->b, self->b.p[0].cfd,
				 self->b.p[1].addr, &m));
	bus_expect_none(_metadata, self->b.p[1].cfd);
	after = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(before.malformed + 1, after.malformed);
	ASSERT_EQ(before.forged, after.forged);
}

/* A header nfdbus cannot see whole cannot show its sender: refused. The
 * master may still send it.
 */
TEST_F(sender, oversized_header)
{
	struct nfd_msg spec = {
		.path = NULL, .iface = "org.ex.Iface", .member = "Changed",
		.sender = self->name[0],
	};
	char *path = malloc(NFDBUS_PARSE_MAX + 2);
	struct nfdbus_stats before, after;
	struct nfd_blob m;

	ASSERT_NE(NULL, path);
	memset(path, 'a', NFDBUS_PARSE_MAX + 1);
	path[0] = '/';
	path[NFDBUS_PARSE_MAX + 1] = '\0';
	spec.path = path;
	m = nfd_marshal(_metadata, &spec, variant->big);
	before = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(EPERM, send_to(&self->b, self->b.p[0].cfd,
				 self->b.p[1].addr, &m));
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	after = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(before.forged + 2, after.forged);
	ASSERT_EQ(before.oversized + 2, after.oversized);

	ASSERT_EQ(0, send_to(&self->b, self->b.p[0].afd, self->b.p[1].addr,
			     &m));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
	free(path);
}

/* Multicasts: checked too, then filtered by the rules as ever. */
TEST_F(sender, multicast)
{
	struct nfd_msg spec = {
		.path = "/org/ex/Obj", .iface = "org.ex.Iface",
		.member = "Changed", .sender = self->name[0],
	};
	struct nfdbus_stats before = nfd_stats(_metadata, &self->b), after;
	struct nfd_blob m = nfd_marshal(_metadata, &spec, variant->big);

	ASSERT_EQ(0, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);

	spec.sender = self->name[2];
	m = nfd_marshal(_metadata, &spec, variant->big);
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);

	spec.sender = NULL;
	m = nfd_marshal(_metadata, &spec, variant->big);
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
	after = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(before.forged + 2, after.forged);
}

/*
 * To the master (no address, or address 0) anything goes: it writes
 * SENDER itself. An address nobody owns is routed to the master, but
 * the sender named a client address: checked.
 */
TEST_F(sender, to_master_unchecked)
{
	struct nfd_blob forged = call_from(_metadata, "org.freedesktop.DBus",
					   variant->big);
	struct nfd_blob honest = call_from(_metadata, self->name[0],
					   variant->big);
	uint64_t nobody = bus_mkaddr(0, 0x7777);
	int fd = self->b.p[0].cfd;

	ASSERT_EQ((ssize_t)forged.len, send(fd, forged.data, forged.len,
					    MSG_NOSIGNAL));
	expect_on(_metadata, self->b.p[0].afd, &forged);
	ASSERT_EQ(0, send_to(&self->b, fd, 0, &forged));
	expect_on(_metadata, self->b.p[0].afd, &forged);

	ASSERT_EQ(EPERM, send_to(&self->b, fd, nobody, &forged));
	bus_expect_none(_metadata, self->b.p[0].afd);
	ASSERT_EQ(0, send_to(&self->b, fd, nobody, &honest));
	expect_on(_metadata, self->b.p[0].afd, &honest);
	ASSERT_EQ(1, nfd_stats(_metadata, &self->b).forged);
	free(forged.data);
	free(honest.data);
}

/* The master relays with any SENDER, to a client address or a multicast. */
TEST_F(sender, master_may_relay)
{
	struct nfd_blob m = call_from(_metadata, self->name[3], variant->big);
	struct nfd_msg spec = {
		.path = "/org/ex/Obj", .iface = "org.ex.Iface",
		.member = "Changed", .sender = "org.freedesktop.DBus",
	};
	struct nfd_blob sig = nfd_marshal(_metadata, &spec, variant->big);

	ASSERT_EQ(0, send_to(&self->b, self->b.p[0].afd, self->b.p[1].addr,
			     &m));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ((ssize_t)m.len, send(self->b.p[2].afd, m.data, m.len,
				       MSG_NOSIGNAL));
	ASSERT_EQ(0x4, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(0, send_to(&self->b, self->b.p[0].afd, bus_mcast(0), &sig));
	ASSERT_EQ(0x2, nfd_receivers(_metadata, &self->b, sig.data, sig.len));
	ASSERT_EQ(0, nfd_stats(_metadata, &self->b).forged);
	free(m.data);
	free(sig.data);
}

/* Without the flag (the default, or cleared) SENDER is not checked. */
TEST_F(sender, flag_cleared)
{
	struct nfd_blob m = call_from(_metadata, self->name[2], variant->big);

	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb, 0));
	unicast(_metadata, &self->b, &m, 0, "unchecked");
	ASSERT_OK(nfdbus_set_bus_flags(self->b.h, &self->b.nb,
				       NFDBUS_BUS_CHECK_SENDER));
	unicast(_metadata, &self->b, &m, EPERM, "checked again");
	free(m.data);
}

TEST_HARNESS_MAIN
