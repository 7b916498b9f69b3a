// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS socket(): which types and protocols are accepted, what a fresh
 * socket reports through the generic socket options and getsockname().
 */
#include "af_bus_test.h"

/* socket() must fail with err for this type and protocol. */
static void expect_socket_fails(struct __test_metadata *_metadata,
				int type, int proto, int err)
{
	ASSERT_ERRNO(err, socket(AF_BUS, type, proto));
}

static int sockopt_int(struct __test_metadata *_metadata, int fd, int opt)
{
	int val = -1;
	socklen_t len = sizeof(val);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, opt, &val, &len));
	ASSERT_EQ(sizeof(val), len);
	return val;
}

/* A SOCK_SEQPACKET socket of proto is made and reports what it is. */
static void expect_seqpacket_socket(struct __test_metadata *_metadata,
				    int proto)
{
	int fd = socket(AF_BUS, SOCK_SEQPACKET, proto);

	ASSERT_LE(0, fd) TH_LOG("socket: %s", strerror(errno));
	EXPECT_EQ(AF_BUS, sockopt_int(_metadata, fd, SO_DOMAIN));
	EXPECT_EQ(SOCK_SEQPACKET, sockopt_int(_metadata, fd, SO_TYPE));
	EXPECT_EQ(proto, sockopt_int(_metadata, fd, SO_PROTOCOL));
	close(fd);
}

TEST(seqpacket_proto_none)
{
	expect_seqpacket_socket(_metadata, BUS_PROTO_NONE);
}

TEST(seqpacket_proto_dbus)
{
	expect_seqpacket_socket(_metadata, BUS_PROTO_DBUS);
}

TEST(stream_not_supported)
{
	expect_socket_fails(_metadata, SOCK_STREAM, 0, ESOCKTNOSUPPORT);
}

TEST(dgram_not_supported)
{
	expect_socket_fails(_metadata, SOCK_DGRAM, 0, ESOCKTNOSUPPORT);
}

TEST(raw_not_supported)
{
	expect_socket_fails(_metadata, SOCK_RAW, 0, ESOCKTNOSUPPORT);
}

TEST(rdm_not_supported)
{
	expect_socket_fails(_metadata, SOCK_RDM, 0, ESOCKTNOSUPPORT);
}

TEST(stream_dbus_proto_not_supported)
{
	expect_socket_fails(_metadata, SOCK_STREAM, BUS_PROTO_DBUS,
			    ESOCKTNOSUPPORT);
}

TEST(protocol_2_not_supported)
{
	expect_socket_fails(_metadata, SOCK_SEQPACKET, 2, EPROTONOSUPPORT);
}

TEST(protocol_minus_1_not_supported)
{
	expect_socket_fails(_metadata, SOCK_SEQPACKET, -1, EPROTONOSUPPORT);
}

TEST(protocol_large_not_supported)
{
	expect_socket_fails(_metadata, SOCK_SEQPACKET, 0x10001, EPROTONOSUPPORT);
}

TEST(fresh_socket_getsockname)
{
	int fd = bus_socket(_metadata, 0);
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	memset(&sa, 0xa5, sizeof(sa));
	ASSERT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
	EXPECT_EQ(BUS_SA_NOPATH, len);
	EXPECT_EQ(AF_BUS, sa.sbus_family);
	EXPECT_EQ(0ULL, sa.sbus_addr.s_addr);
	close(fd);
}

TEST(fresh_socket_getpeername_enotconn)
{
	int fd = bus_socket(_metadata, 0);
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	ASSERT_ERRNO(ENOTCONN, getpeername(fd, (struct sockaddr *)&sa, &len));
	close(fd);
}

TEST(uapi_layout)
{
	EXPECT_EQ(128UL, sizeof(struct sockaddr_bus));
	EXPECT_EQ(16UL, offsetof(struct sockaddr_bus, sbus_path));
	EXPECT_EQ(8UL, offsetof(struct sockaddr_bus, sbus_addr));
	EXPECT_EQ(108, BUS_PATH_MAX);
	EXPECT_EQ(288, SOL_BUS);
}

TEST_HARNESS_MAIN
