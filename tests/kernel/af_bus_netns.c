// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS and network namespaces: abstract bus names are per namespace, a
 * socket only reaches buses of the namespace it was created in.  Skipped
 * when the kernel has no network namespaces (CONFIG_NET_NS).
 */
#include "af_bus_test.h"

#include <sched.h>

/* Move this test process into a new network namespace, or skip. */
#define ENTER_NEW_NETNS() do {						\
	if (unshare(CLONE_NEWNET)) {					\
		ASSERT_EQ(EINVAL, errno)				\
			TH_LOG("unshare(CLONE_NEWNET): %s", strerror(errno)); \
		SKIP(return, "no network namespaces (CONFIG_NET_NS)");	\
	}								\
} while (0)

TEST(abstract_name_free_in_other_netns)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int m2, c;

	ENTER_NEW_NETNS();
	m2 = bus_master(_metadata, &bus);
	c = bus_connect(_metadata, &bus);
	close(bus_accept(_metadata, m2));
	bus_expect_no_pending(_metadata, m);
	close(c);
	close(m2);
	close(m);
}

TEST(bus_of_other_netns_unreachable)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);

	ENTER_NEW_NETNS();
	/* The socket is made in the new namespace. */
	bus_expect_connect_fails(_metadata, BUS_PROTO_NONE, &bus,
				 ECONNREFUSED, m);
	close(m);
}

/* A socket made before the move still belongs to the old namespace. */
TEST(socket_keeps_its_netns)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_socket(_metadata, 0);

	ENTER_NEW_NETNS();
	ASSERT_OK(bus_connect_name(c, &bus));
	close(bus_accept(_metadata, m));
	close(c);
	close(m);
}

TEST_HARNESS_MAIN
