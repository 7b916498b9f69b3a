// SPDX-License-Identifier: GPL-2.0
/*
 * nfdbus message parser (Documentation/networking/nfdbus.rst,
 * "Messages"), seen through multicasts on a D-Bus bus: real messages
 * marshalled by libdbus, little and big endian, reach the peers whose
 * rules match their header fields and arguments (signals from a client,
 * the other types from the master, as clients multicast only signals); hand-made malformed
 * ones are refused with EPERM at sendmsg, reach nobody and are counted;
 * headers past NFDBUS_PARSE_MAX go unfiltered to every peer with rules.
 *
 * Peers: 0 sends and has no rule, 1 has type='signal', 2 has a rule on
 * every field of the message.
 */
#include "nfdbus_test.h"

FIXTURE(parse) {
	struct nfd_bus b;
};

FIXTURE_VARIANT(parse) {
	bool big;
};

FIXTURE_VARIANT_ADD(parse, little) {
	.big = false,
};

FIXTURE_VARIANT_ADD(parse, big) {
	.big = true,
};

FIXTURE_SETUP(parse)
{
	nfd_setup(_metadata, &self->b, 3);
	NFD_ADD(&self->b, 1, "type='signal'", 0);
}

FIXTURE_TEARDOWN(parse)
{
	nfd_teardown(&self->b);
}

static const struct nfd_msg sig_msg = {
	.path = "/org/ex/Obj", .iface = "org.ex.Iface", .member = "Changed",
	.sender = ":1.1", .sig = "sos",
	.args = { "hello", "/org/ex/Obj/child", "x" },
};

/* The multicast mcast reaches exactly the peers in want; sent count. */
static void expect_mcast(struct __test_metadata *_metadata,
			 struct nfd_bus *b, const struct nfd_blob *msg,
			 unsigned int want)
{
	ASSERT_EQ(0, nfd_mcast(b, 0, msg->data, msg->len));
	ASSERT_EQ(want, nfd_receivers(_metadata, b, msg->data, msg->len));
}

TEST_F(parse, signal_fields_and_args)
{
	struct nfd_blob m = nfd_marshal(_metadata, &sig_msg, variant->big);
	struct nfdbus_stats st;
	cpu_set_t cpus;

	/* on one CPU, so that the route hooks find the send hook's parse */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	ASSERT_OK(sched_setaffinity(0, sizeof(cpus), &cpus));
	NFD_ADD(&self->b, 2, "type='signal',sender=':1.1',"
		"interface='org.ex.Iface',member='Changed',path='/org/ex/Obj',"
		"arg0='hello',arg1path='/org/ex/',arg2='x'", 0);
	expect_mcast(_metadata, &self->b, &m, 0x6);
	st = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(0, st.malformed);
	ASSERT_EQ(0, st.oversized);
	/* parsed once, at the send hook, though routed to 3 peers */
	ASSERT_EQ(1, st.parsed);
	/* peer 0 has no rule: AF_BUS does not even ask about it */
	ASSERT_EQ(0, st.filtered);
	free(m.data);
}

TEST_F(parse, one_field_differs)
{
	struct nfd_msg spec = sig_msg;
	struct nfd_blob m;

	NFD_ADD(&self->b, 2, "member='Changed',arg2='x'", 0);
	spec.args[2] = "y";
	m = nfd_marshal(_metadata, &spec, variant->big);
	expect_mcast(_metadata, &self->b, &m, 0x2);
	free(m.data);
	spec = sig_msg;
	spec.member = "Other";
	m = nfd_marshal(_metadata, &spec, variant->big);
	expect_mcast(_metadata, &self->b, &m, 0x2);
	free(m.data);
}

/*
 * A client may multicast only signals: a call or an error to everybody
 * is refused and counted as denied.  The master's multicasts of any type
 * are filtered by the rules on their type and arguments.
 */
TEST_F(parse, method_call_and_return_multicast)
{
	struct nfd_msg spec = {
		.type = DBUS_MESSAGE_TYPE_METHOD_CALL, .path = "/a",
		.member = "Ping", .sig = "s", .args = { "v" },
	};
	struct nfdbus_stats before;
	struct nfd_blob m;

	NFD_ADD(&self->b, 2, "type='method_call',member='Ping',arg0='v'", 0);
	m = nfd_marshal(_metadata, &spec, variant->big);
	before = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(before.denied + 1, nfd_stats(_metadata, &self->b).denied);
	ASSERT_EQ(0, nfd_mcast_master(&self->b, 0, m.data, m.len));
	ASSERT_EQ(0x4, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);

	spec.type = DBUS_MESSAGE_TYPE_ERROR;
	spec.member = NULL;
	NFD_ADD(&self->b, 0, "type='error',arg0='v'", 0);
	m = nfd_marshal(_metadata, &spec, variant->big);
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 1, m.data, m.len));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, m.data, m.len));
	ASSERT_EQ(0, nfd_mcast_master(&self->b, 1, m.data, m.len));
	ASSERT_EQ(0x1, nfd_receivers(_metadata, &self->b, m.data, m.len));
	free(m.data);
}

/* Arguments after containers: arrays, dicts of variants, structs. */
TEST_F(parse, args_after_containers)
{
	DBusMessageIter it, arr, dict, var, st;
	const char *k = "key", *s = "last", *o = "/p";
	dbus_uint32_t u = 5;
	struct nfd_blob m = { 0 };
	DBusMessage *msg;
	dbus_uint64_t t = 1;
	char *data;
	int len;

	msg = dbus_message_new_signal("/a", "org.ex.I", "M");
	ASSERT_NE(NULL, msg);
	dbus_message_iter_init_append(msg, &it);
	/* arg0: a{sv} */
	ASSERT_TRUE(dbus_message_iter_open_container(&it, 'a', "{sv}", &arr));
	ASSERT_TRUE(dbus_message_iter_open_container(&arr, 'e', NULL, &dict));
	ASSERT_TRUE(dbus_message_iter_append_basic(&dict, 's', &k));
	ASSERT_TRUE(dbus_message_iter_open_container(&dict, 'v', "(ts)", &var));
	ASSERT_TRUE(dbus_message_iter_open_container(&var, 'r', NULL, &st));
	ASSERT_TRUE(dbus_message_iter_append_basic(&st, 't', &t));
	ASSERT_TRUE(dbus_message_iter_append_basic(&st, 's', &k));
	ASSERT_TRUE(dbus_message_iter_close_container(&var, &st));
	ASSERT_TRUE(dbus_message_iter_close_container(&dict, &var));
	ASSERT_TRUE(dbus_message_iter_close_container(&arr, &dict));
	ASSERT_TRUE(dbus_message_iter_close_container(&it, &arr));
	/* arg1: (uo) */
	ASSERT_TRUE(dbus_message_iter_open_container(&it, 'r', NULL, &st));
	ASSERT_TRUE(dbus_message_iter_append_basic(&st, 'u', &u));
	ASSERT_TRUE(dbus_message_iter_append_basic(&st, 'o', &o));
	ASSERT_TRUE(dbus_message_iter_close_container(&it, &st));
	/* arg2: variant of a string, arg3: a string */
	ASSERT_TRUE(dbus_message_iter_open_container(&it, 'v', "s", &var));
	ASSERT_TRUE(dbus_message_iter_append_basic(&var, 's', &k));
	ASSERT_TRUE(dbus_message_iter_close_container(&it, &var));
	ASSERT_TRUE(dbus_message_iter_append_basic(&it, 's', &s));
	dbus_message_set_serial(msg, 9);
	ASSERT_TRUE(dbus_message_marshal(msg, &data, &len));
	dbus_message_unref(msg);
	if (variant->big) {
		m = nfd_to_big(_metadata, data, len);
	} else {
		m.data = malloc(len);
		memcpy(m.data, data, len);
		m.len = len;
	}
	dbus_free(data);

	NFD_ADD(&self->b, 2, "arg3='last'", 0);
	/* arg2 is a variant, not a string: argN does not look inside */
	NFD_ADD(&self->b, 0, "arg2='key'", 0);
	expect_mcast(_metadata, &self->b, &m, 0x6);
	free(m.data);
}

/* A header longer than NFDBUS_PARSE_MAX is delivered to everyone. */
TEST_F(parse, oversized_header_unfiltered)
{
	struct nfd_msg spec = sig_msg;
	char *path = malloc(NFDBUS_PARSE_MAX + 2);
	struct nfdbus_stats st;
	struct nfd_blob m;

	ASSERT_NE(NULL, path);
	memset(path, 'a', NFDBUS_PARSE_MAX + 1);
	path[0] = '/';
	path[NFDBUS_PARSE_MAX + 1] = '\0';
	spec.path = path;
	NFD_ADD(&self->b, 2, "member='Nothing'", 0);
	m = nfd_marshal(_metadata, &spec, variant->big);
	/* 0, the sender, has no rule */
	expect_mcast(_metadata, &self->b, &m, 0x6);
	st = nfd_stats(_metadata, &self->b);
	ASSERT_EQ(1, st.oversized);
	ASSERT_EQ(0, st.malformed);
	free(m.data);
	free(path);
}

/* A large body (a non-linear skb) is matched on its first arguments. */
TEST_F(parse, large_body)
{
	/* within the default send buffer, beyond a linear skb */
	size_t big = 100 * 1024;
	char *blob = malloc(big + 1);
	struct nfd_msg spec = {
		.path = "/a", .iface = "org.ex.I", .member = "M",
		.sig = "ss",
	};
	struct nfd_blob m;

	ASSERT_NE(NULL, blob);
	memset(blob, 'z', big);
	blob[big] = '\0';
	spec.args[0] = "key";
	spec.args[1] = blob;
	NFD_ADD(&self->b, 2, "arg0='key'", 0);
	NFD_ADD(&self->b, 0, "arg0='other'", 0);
	m = nfd_marshal(_metadata, &spec, variant->big);
	expect_mcast(_metadata, &self->b, &m, 0x6);
	free(m.data);
	free(blob);
}

/* Unicast is never parsed: any bytes at all reach the recipient. */
TEST_F(parse, unicast_not_parsed)
{
	struct bus_name to = bus_dest(&self->b.bus, self->b.p[2].addr);
	static const char junk[] = "\0AUTH EXTERNAL 30\r\n";

	ASSERT_EQ((ssize_t)sizeof(junk),
		  sendto(self->b.p[0].cfd, junk, sizeof(junk), 0,
			 (struct sockaddr *)&to.sa, to.len));
	ASSERT_EQ(0x4, nfd_receivers(_metadata, &self->b, junk, sizeof(junk)));
	ASSERT_EQ(0, nfd_stats(_metadata, &self->b).parsed);
}

/*
 * Hand-made messages. A small writer in the variant's byte order for the
 * fixed header and header fields, so that each case breaks one thing.
 */
struct hm {
	uint8_t b[512];
	size_t n;
	bool big;
};

static void hm_u32_at(struct hm *h, size_t at, uint32_t v)
{
	uint32_t x = h->big ? htobe32(v) : htole32(v);

	memcpy(h->b + at, &x, 4);
}

static void hm_pad(struct hm *h, size_t a)
{
	while (h->n % a)
		h->b[h->n++] = 0;
}

static void hm_u32(struct hm *h, uint32_t v)
{
	hm_pad(h, 4);
	hm_u32_at(h, h->n, v);
	h->n += 4;
}

/* header field: code, signature sig, value str ('s', 'o') or num ('u') */
static void hm_field(struct hm *h, int code, const char *sig,
		     const char *str, uint32_t num)
{
	size_t l;

	hm_pad(h, 8);
	h->b[h->n++] = code;
	h->b[h->n++] = strlen(sig);
	memcpy(h->b + h->n, sig, strlen(sig) + 1);
	h->n += strlen(sig) + 1;
	if (sig[0] == 'u') {
		hm_u32(h, num);
	} else if (sig[0] == 'g') {
		l = strlen(str);
		h->b[h->n++] = l;
		memcpy(h->b + h->n, str, l + 1);
		h->n += l + 1;
	} else {
		l = strlen(str);
		hm_u32(h, l);
		memcpy(h->b + h->n, str, l + 1);
		h->n += l + 1;
	}
}

/* Fixed header of a message of type t; fields follow at 16. */
static void hm_start(struct hm *h, bool big, int t)
{
	memset(h, 0, sizeof(*h));
	h->big = big;
	h->b[0] = big ? 'B' : 'l';
	h->b[1] = t;
	h->b[3] = 1;
	hm_u32_at(h, 8, 42);	/* serial */
	h->n = 16;
}

/* Set the field array length and pad to the body (empty). */
static void hm_end(struct hm *h)
{
	hm_u32_at(h, 12, h->n - 16);
	hm_pad(h, 8);
}

/* A valid signal, from which the malformed cases are made. */
static void hm_signal(struct hm *h, bool big)
{
	hm_start(h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_field(h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_end(h);
}

/* Send h: err 0 means it must reach peer 1 (type='signal'), else nobody. */
static void hm_expect(struct __test_metadata *_metadata, struct nfd_bus *b,
		      const struct hm *h, int err, const char *what)
{
	struct nfdbus_stats before = nfd_stats(_metadata, b), after;

	ASSERT_EQ(err, nfd_mcast(b, 0, h->b, h->n)) TH_LOG("%s", what);
	ASSERT_EQ(err ? 0 : 0x2, nfd_receivers(_metadata, b, h->b, h->n))
		TH_LOG("%s", what);
	after = nfd_stats(_metadata, b);
	ASSERT_EQ(before.malformed + !!err, after.malformed) TH_LOG("%s", what);
}

TEST_F(parse, handmade_valid)
{
	struct hm h;

	hm_signal(&h, variant->big);
	hm_expect(_metadata, &self->b, &h, 0, "valid signal");

	/* an unknown header field, of any type, is skipped */
	hm_start(&h, variant->big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(&h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_pad(&h, 8);
	h.b[h.n++] = 200;
	h.b[h.n++] = 4;
	memcpy(h.b + h.n, "(us)", 5);
	h.n += 5;
	hm_pad(&h, 8);
	hm_u32(&h, 7);
	hm_u32(&h, 1);
	h.b[h.n++] = 'x';
	h.b[h.n++] = 0;
	hm_field(&h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, 0, "unknown field (us)");

	/* an unknown message type is not malformed; it is no signal
	 * either, so a client may not multicast it, and the master's
	 * multicast of it matches no type='signal' rule
	 */
	hm_signal(&h, variant->big);
	h.b[1] = 9;
	ASSERT_EQ(EPERM, nfd_mcast(&self->b, 0, h.b, h.n));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, h.b, h.n));
	ASSERT_EQ(0, nfd_mcast_master(&self->b, 0, h.b, h.n));
	ASSERT_EQ(0, nfd_receivers(_metadata, &self->b, h.b, h.n));
	ASSERT_EQ(0, nfd_stats(_metadata, &self->b).malformed);
}

/*
 * A signal whose unknown header field 200 nests one kind of container n
 * deep: arrays in a row, structs, dict entries, 32 arrays then n structs,
 * or n variants in a chain (the first being the field's own value).
 */
enum deep { DEEP_ARRAYS, DEEP_STRUCTS, DEEP_DICTS, DEEP_MIXED, DEEP_VARIANTS };

static void hm_deep(struct hm *h, bool big, enum deep kind, int n)
{
	char sig[256];
	size_t l = 0;
	int i;

	switch (kind) {
	case DEEP_ARRAYS:
		l += sprintf(sig, "%.*sy", n, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
		break;
	case DEEP_MIXED:
		l += sprintf(sig, "%.*s", 32, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
		/* fall through */
	case DEEP_STRUCTS:
		for (i = 0; i < n; i++)
			sig[l++] = '(';
		sig[l++] = 'y';
		for (i = 0; i < n; i++)
			sig[l++] = ')';
		break;
	case DEEP_DICTS:
		for (i = 0; i < n; i++)
			l += sprintf(sig + l, "a{y");
		sig[l++] = 'y';
		for (i = 0; i < n; i++)
			sig[l++] = '}';
		break;
	case DEEP_VARIANTS:
		sig[l++] = 'v';
		break;
	}
	sig[l] = 0;

	hm_start(h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_field(h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_pad(h, 8);
	h->b[h->n++] = 200;
	h->b[h->n++] = l;
	memcpy(h->b + h->n, sig, l + 1);
	h->n += l + 1;
	switch (kind) {
	case DEEP_ARRAYS:
		hm_u32(h, 0);			/* empty, bytes need no padding */
		break;
	case DEEP_STRUCTS:
		hm_pad(h, 8);
		h->b[h->n++] = 7;
		break;
	case DEEP_DICTS:
		hm_u32(h, 0);			/* empty, padded to its element */
		hm_pad(h, 8);
		break;
	case DEEP_MIXED:
		hm_u32(h, 0);			/* empty, its elements arrays */
		break;
	case DEEP_VARIANTS:
		for (i = 1; i < n; i++) {
			h->b[h->n++] = 1;
			h->b[h->n++] = 'v';
			h->b[h->n++] = 0;
		}
		h->b[h->n++] = 1;
		h->b[h->n++] = 'y';
		h->b[h->n++] = 0;
		h->b[h->n++] = 7;
		break;
	}
	hm_end(h);
}

/* Does libdbus take h as a message? */
static bool libdbus_takes(const struct hm *h)
{
	DBusMessage *msg;
	DBusError err;

	dbus_error_init(&err);
	msg = dbus_message_demarshal((const char *)h->b, h->n, &err);
	dbus_error_free(&err);
	if (!msg)
		return false;
	dbus_message_unref(msg);
	return true;
}

/*
 * The nesting limits of the D-Bus specification, as libdbus counts them:
 * 32 arrays in a row, 32 structs, 32 dict entries (each one in another),
 * 32 arrays and 32 structs in one signature, and 64 containers around a
 * value, variants included; the value of a header field is inside three
 * already (the field array, its struct, its variant), so a chain of 61
 * variants is the most it may hold. At each limit the message passes (and
 * libdbus takes it), one more and it is malformed (libdbus refuses it).
 */
TEST_F(parse, nesting_limits)
{
	static const struct {
		enum deep kind;
		int max;
		const char *what;
	} limits[] = {
		{ DEEP_ARRAYS, 32, "arrays in a row" },
		{ DEEP_STRUCTS, 32, "structs" },
		{ DEEP_DICTS, 32, "dict entries" },
		{ DEEP_MIXED, 32, "32 arrays, then structs" },
		{ DEEP_VARIANTS, 61, "variants in a header field" },
	};
	char what[64];
	struct hm h;
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		hm_deep(&h, variant->big, limits[i].kind, limits[i].max);
		snprintf(what, sizeof(what), "%d %s", limits[i].max,
			 limits[i].what);
		ASSERT_TRUE(libdbus_takes(&h)) TH_LOG("libdbus refuses %s", what);
		hm_expect(_metadata, &self->b, &h, 0, what);

		hm_deep(&h, variant->big, limits[i].kind, limits[i].max + 1);
		snprintf(what, sizeof(what), "%d %s", limits[i].max + 1,
			 limits[i].what);
		ASSERT_FALSE(libdbus_takes(&h)) TH_LOG("libdbus takes %s", what);
		hm_expect(_metadata, &self->b, &h, EPERM, what);
	}
}

TEST_F(parse, handmade_malformed)
{
	bool big = variant->big;
	struct hm h;

	hm_signal(&h, big);
	h.n = 12;
	hm_expect(_metadata, &self->b, &h, EPERM, "shorter than 16 bytes");

	hm_signal(&h, big);
	h.n -= 8;
	hm_expect(_metadata, &self->b, &h, EPERM, "truncated header");

	hm_signal(&h, big);
	h.n += 8;
	hm_expect(_metadata, &self->b, &h, EPERM, "trailing bytes");

	hm_signal(&h, big);
	h.b[0] = 'X';
	hm_expect(_metadata, &self->b, &h, EPERM, "bad endianness flag");

	hm_signal(&h, big);
	h.b[0] = big ? 'l' : 'B';
	hm_expect(_metadata, &self->b, &h, EPERM, "wrong endianness flag");

	hm_signal(&h, big);
	h.b[3] = 2;
	hm_expect(_metadata, &self->b, &h, EPERM, "protocol version 2");

	hm_signal(&h, big);
	h.b[1] = 0;
	hm_expect(_metadata, &self->b, &h, EPERM, "message type 0");

	hm_signal(&h, big);
	hm_u32_at(&h, 8, 0);
	hm_expect(_metadata, &self->b, &h, EPERM, "serial 0");

	hm_signal(&h, big);
	hm_u32_at(&h, 12, 0x7ffffff0);
	hm_expect(_metadata, &self->b, &h, EPERM, "huge field array length");

	hm_signal(&h, big);
	hm_u32_at(&h, 4, 0xfffffff0);
	hm_expect(_metadata, &self->b, &h, EPERM, "huge body length");

	hm_signal(&h, big);
	hm_u32_at(&h, 20, 0x1000);	/* PATH's length */
	hm_expect(_metadata, &self->b, &h, EPERM, "string past the end");

	hm_signal(&h, big);
	hm_u32_at(&h, 20, 0xffffffff);
	hm_expect(_metadata, &self->b, &h, EPERM, "string length wraps");

	hm_signal(&h, big);
	h.b[26] = 'x';			/* PATH's NUL */
	hm_expect(_metadata, &self->b, &h, EPERM, "string without NUL");

	hm_signal(&h, big);
	h.b[16] = 0;
	hm_expect(_metadata, &self->b, &h, EPERM, "field code 0");

	hm_signal(&h, big);
	h.b[18] = 's';			/* PATH must be 'o' */
	hm_expect(_metadata, &self->b, &h, EPERM, "wrong field signature");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(&h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(&h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "signal without MEMBER");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(&h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "signal without INTERFACE");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_METHOD_CALL);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "method call without PATH");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_ERROR);
	hm_field(&h, DBUS_HEADER_FIELD_ERROR_NAME, "s", "a.E", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "error without REPLY_SERIAL");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(&h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(&h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "N", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "MEMBER twice");

	hm_signal(&h, big);
	hm_u32_at(&h, 4, 8);
	memset(h.b + h.n, 0, 8);
	h.n += 8;
	hm_expect(_metadata, &self->b, &h, EPERM, "body without SIGNATURE");

	hm_start(&h, big, DBUS_MESSAGE_TYPE_SIGNAL);
	hm_field(&h, DBUS_HEADER_FIELD_PATH, "o", "/a", 0);
	hm_field(&h, DBUS_HEADER_FIELD_INTERFACE, "s", "a.b", 0);
	hm_field(&h, DBUS_HEADER_FIELD_MEMBER, "s", "M", 0);
	hm_field(&h, 200, "a{sv", "", 0);
	hm_end(&h);
	hm_expect(_metadata, &self->b, &h, EPERM, "bad unknown-field signature");

	ASSERT_EQ(22, nfd_stats(_metadata, &self->b).malformed);
}

TEST_HARNESS_MAIN
