/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the nfdbus tests (tests/kernel/nfdbus_*.c): a D-Bus
 * bus (BUS_PROTO_DBUS) in a fresh network namespace with joined clients,
 * D-Bus messages marshalled by libdbus (and re-marshalled big endian by
 * GDBus), multicasts, and who received them.
 *
 * Built with libnfdbus (nfdbus/), libmnl, libdbus-1 and gio-2.0; see
 * Makefile.am.
 */
#ifndef NFDBUS_TEST_H
#define NFDBUS_TEST_H

#include "af_bus_test.h"

#include <sched.h>
#include <stdint.h>

#include <dbus/dbus.h>
#include <gio/gio.h>
#include <linux/netfilter/nfdbus.h>

#include "../../nfdbus/libnfdbus.h"

#define NFD_MAX_PEERS	8

/* A D-Bus bus with n joined clients p[0..n-1], and an nfdbus handle. */
struct nfd_bus {
	struct bus_name bus;
	struct nfdbus_bus nb;
	int m;
	int n;
	struct bus_peer p[NFD_MAX_PEERS];
	struct nfdbus *h;
};

/* The netlink name of a bus: the sbus_path bytes it was bound with. */
static inline struct nfdbus_bus nfd_name(const struct bus_name *bus)
{
	struct nfdbus_bus nb;

	memset(&nb, 0, sizeof(nb));
	nb.len = bus->len - BUS_SA_NOPATH;
	memcpy(nb.path, bus->sa.sbus_path, nb.len);
	return nb;
}

static inline void nfd_peer_open(struct __test_metadata *_metadata,
				 struct nfd_bus *b, struct bus_peer *p)
{
	p->cfd = bus_socket(_metadata, BUS_PROTO_DBUS);
	ASSERT_OK(bus_connect_name(p->cfd, &b->bus));
	p->afd = bus_accept(_metadata, b->m);
	p->addr = bus_local_addr(_metadata, p->cfd);
	bus_join(_metadata, p->afd);
}

/*
 * A fresh network namespace (so the counters start at 0), a D-Bus bus
 * with n joined clients, and an nfdbus handle opened in the namespace.
 */
static inline void nfd_setup(struct __test_metadata *_metadata,
			     struct nfd_bus *b, int n)
{
	int i;

	b->m = -1;
	b->n = 0;
	b->h = NULL;
	ASSERT_OK(unshare(CLONE_NEWNET));
	b->bus = bus_name_abstract();
	b->nb = nfd_name(&b->bus);
	b->m = bus_master_proto(_metadata, &b->bus, BUS_PROTO_DBUS);
	for (i = 0; i < n; i++) {
		b->p[i].cfd = b->p[i].afd = -1;
		b->n++;
		nfd_peer_open(_metadata, b, &b->p[i]);
	}
	b->h = nfdbus_open();
	ASSERT_NE(NULL, b->h) TH_LOG("nfdbus_open: %s", strerror(errno));
}

static inline void nfd_teardown(struct nfd_bus *b)
{
	int i;

	nfdbus_close(b->h);
	b->h = NULL;
	for (i = 0; i < b->n; i++)
		bus_peer_close(&b->p[i]);
	if (b->m >= 0)
		close(b->m);
	b->m = -1;
}

/* Add a rule for peer i; expect err (0 or an errno). */
#define NFD_ADD(b, i, rule, err) do {					\
	int __e = nfdbus_add_match((b)->h, &(b)->nb, (b)->p[i].addr,	\
				   (rule), NULL);			\
	ASSERT_EQ(-(err), __e) TH_LOG("add %s: %s (%s)", (rule),	\
				      strerror(-__e),			\
				      nfdbus_error((b)->h));		\
} while (0)

static inline struct nfdbus_stats nfd_stats(struct __test_metadata *_metadata,
					    struct nfd_bus *b)
{
	struct nfdbus_stats st;

	ASSERT_EQ(0, nfdbus_get_stats(b->h, &st));
	return st;
}

/* What a test message says; unset fields are left out. */
struct nfd_msg {
	int type;		/* DBUS_MESSAGE_TYPE_*, default signal */
	const char *path, *iface, *member, *sender, *dest;
	const char *sig;	/* body: 's', 'o' or 'u' per argument */
	const char *args[8];
};

struct nfd_blob {
	char *data;
	size_t len;
};

/* GDBus: the same message, big endian. */
static inline struct nfd_blob nfd_to_big(struct __test_metadata *_metadata,
					 const char *data, size_t len)
{
	GDBusMessage *g;
	GError *err = NULL;
	struct nfd_blob b = { 0 };
	guchar *blob;
	gsize size;

	g = g_dbus_message_new_from_blob((guchar *)data, len,
					 G_DBUS_CAPABILITY_FLAGS_NONE, &err);
	ASSERT_NE(NULL, g) TH_LOG("GDBus: %s", err->message);
	g_dbus_message_set_byte_order(g, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN);
	blob = g_dbus_message_to_blob(g, &size, G_DBUS_CAPABILITY_FLAGS_NONE,
				      &err);
	ASSERT_NE(NULL, blob) TH_LOG("GDBus: %s", err->message);
	ASSERT_EQ('B', blob[0]);
	b.data = malloc(size);
	ASSERT_NE(NULL, b.data);
	memcpy(b.data, blob, size);
	b.len = size;
	g_free(blob);
	g_object_unref(g);
	return b;
}

/* libdbus marshals the message (little endian here), GDBus makes it big. */
static inline struct nfd_blob nfd_marshal(struct __test_metadata *_metadata,
					  const struct nfd_msg *spec, bool big)
{
	int type = spec->type ? spec->type : DBUS_MESSAGE_TYPE_SIGNAL;
	struct nfd_blob b = { 0 };
	DBusMessageIter it;
	DBusMessage *m;
	dbus_uint32_t u;
	char *data;
	int len, i;

	m = dbus_message_new(type);
	ASSERT_NE(NULL, m);
	if (spec->path)
		ASSERT_TRUE(dbus_message_set_path(m, spec->path));
	if (spec->iface)
		ASSERT_TRUE(dbus_message_set_interface(m, spec->iface));
	if (spec->member)
		ASSERT_TRUE(dbus_message_set_member(m, spec->member));
	if (spec->sender)
		ASSERT_TRUE(dbus_message_set_sender(m, spec->sender));
	if (spec->dest)
		ASSERT_TRUE(dbus_message_set_destination(m, spec->dest));
	if (type == DBUS_MESSAGE_TYPE_ERROR)
		ASSERT_TRUE(dbus_message_set_error_name(m, "org.ex.Error"));
	if (type == DBUS_MESSAGE_TYPE_ERROR ||
	    type == DBUS_MESSAGE_TYPE_METHOD_RETURN)
		ASSERT_TRUE(dbus_message_set_reply_serial(m, 3));
	dbus_message_iter_init_append(m, &it);
	for (i = 0; spec->sig && spec->sig[i]; i++) {
		if (spec->sig[i] == 'u') {
			u = strtoul(spec->args[i], NULL, 0);
			ASSERT_TRUE(dbus_message_iter_append_basic(&it, 'u', &u));
		} else {
			ASSERT_TRUE(dbus_message_iter_append_basic(&it,
					spec->sig[i], &spec->args[i]));
		}
	}
	dbus_message_set_serial(m, 7);
	ASSERT_TRUE(dbus_message_marshal(m, &data, &len));
	dbus_message_unref(m);
	ASSERT_EQ('l', data[0]);
	if (big) {
		b = nfd_to_big(_metadata, data, len);
		dbus_free(data);
		return b;
	}
	b.data = malloc(len);
	ASSERT_NE(NULL, b.data);
	memcpy(b.data, data, len);
	b.len = len;
	dbus_free(data);
	return b;
}

/* A method call (to /org/ex/Obj org.ex.Iface.Do), return or error (to
 * reply_serial) from sender, as its library would marshal it, with a
 * DESTINATION when dest is not NULL. */
static inline struct nfd_blob nfd_call_msg(struct __test_metadata *_metadata,
					   const char *sender, const char *dest,
					   int type, uint32_t serial,
					   uint32_t reply_serial, bool no_reply)
{
	struct nfd_blob out = { 0 };
	DBusMessage *m;
	char *data;
	int len;

	m = dbus_message_new(type);
	ASSERT_NE(NULL, m);
	ASSERT_TRUE(dbus_message_set_sender(m, sender));
	if (dest)
		ASSERT_TRUE(dbus_message_set_destination(m, dest));
	if (type == DBUS_MESSAGE_TYPE_METHOD_CALL) {
		ASSERT_TRUE(dbus_message_set_path(m, "/org/ex/Obj"));
		ASSERT_TRUE(dbus_message_set_interface(m, "org.ex.Iface"));
		ASSERT_TRUE(dbus_message_set_member(m, "Do"));
		dbus_message_set_no_reply(m, no_reply);
	} else {
		if (type == DBUS_MESSAGE_TYPE_ERROR)
			ASSERT_TRUE(dbus_message_set_error_name(m,
							"org.ex.Error"));
		ASSERT_TRUE(dbus_message_set_reply_serial(m, reply_serial));
	}
	dbus_message_set_serial(m, serial);
	ASSERT_TRUE(dbus_message_marshal(m, &data, &len));
	dbus_message_unref(m);
	out.data = malloc(len);
	ASSERT_NE(NULL, out.data);
	memcpy(out.data, data, len);
	out.len = len;
	dbus_free(data);
	return out;
}

/* Multicast from peer `from` to prefix 0; returns what sendto did (errno). */
static inline int nfd_mcast(struct nfd_bus *b, int from, const void *msg,
			    size_t len)
{
	struct bus_name to = bus_dest(&b->bus, bus_mcast(0));

	return bus_errno_of(sendto(b->p[from].cfd, msg, len, MSG_NOSIGNAL,
				   (struct sockaddr *)&to.sa, to.len));
}

/*
 * The master multicasts msg, on peer from's accepted socket: nfdbus
 * filters it by the rules but does not check it as a client's (a client
 * may multicast only signals).
 */
static inline int nfd_mcast_master(struct nfd_bus *b, int from,
				   const void *msg, size_t len)
{
	struct bus_name to = bus_dest(&b->bus, bus_mcast(0));

	return bus_errno_of(sendto(b->p[from].afd, msg, len, MSG_NOSIGNAL,
				   (struct sockaddr *)&to.sa, to.len));
}

/*
 * Bit i set when peer i has exactly msg queued (which is taken off);
 * every other queue must be empty.
 */
static inline unsigned int nfd_receivers(struct __test_metadata *_metadata,
					 struct nfd_bus *b, const void *msg,
					 size_t len)
{
	unsigned int mask = 0;
	char *buf = malloc(len + 1);
	ssize_t r;
	int i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < b->n; i++) {
		if (b->p[i].cfd < 0)
			continue;
		r = recv(b->p[i].cfd, buf, len + 1, MSG_DONTWAIT);
		if (r < 0) {
			ASSERT_EQ(EAGAIN, errno) TH_LOG("peer %d", i);
			continue;
		}
		ASSERT_EQ((ssize_t)len, r) TH_LOG("peer %d", i);
		ASSERT_EQ(0, memcmp(buf, msg, len)) TH_LOG("peer %d", i);
		mask |= 1U << i;
		ASSERT_ERRNO(EAGAIN, recv(b->p[i].cfd, buf, len + 1,
					  MSG_DONTWAIT))
			TH_LOG("peer %d got a second message", i);
	}
	free(buf);
	return mask;
}

#endif /* NFDBUS_TEST_H */
