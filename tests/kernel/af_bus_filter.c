// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS socket filters: a classic BPF filter (SO_ATTACH_FILTER) or an
 * eBPF socket filter (SO_ATTACH_BPF) on a receiving socket trims or drops
 * that socket's copy only.  The other recipients of a multicast get every
 * message whole, the sender's send succeeds, the messages that pass keep
 * their order, and SO_DETACH_FILTER restores delivery.
 */
#include "af_bus_test.h"

#include "af_bus_bpf.h"

#include <linux/filter.h>

/* p[0], p[1], p[2] joined, at addresses 1, 2, 3. */
BUS_PEERS_FIXTURE(filt, 3, 3)

/* Classic BPF: accept at most n bytes (0 drops the message). */
static void attach_cbpf_ret(struct __test_metadata *_metadata, int fd,
			    unsigned int n)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_RET | BPF_K, n),
	};
	struct sock_fprog prog = { .len = 1, .filter = code };

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			     sizeof(prog)));
}

/* Classic BPF: drop the messages whose first byte is 'x', keep the rest. */
static void attach_cbpf_drop_x(struct __test_metadata *_metadata, int fd)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 'x', 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
	};
	struct sock_fprog prog = { .len = 4, .filter = code };

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			     sizeof(prog)));
}

static void detach_filter(struct __test_metadata *_metadata, int fd)
{
	int zero = 0;

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &zero,
			     sizeof(zero)));
}

/* eBPF: accept at most n bytes (0 drops the message). */
static void attach_ebpf_ret(struct __test_metadata *_metadata, int fd, int n)
{
	const struct bpf_insn insns[] = {
		EBPF_MOV64_IMM(BPF_REG_0, n),
		EBPF_EXIT(),
	};

	attach_ebpf(_metadata, fd, insns, 2);
}

/* eBPF: drop the messages whose first byte is 'x', keep the rest. */
static void attach_ebpf_drop_x(struct __test_metadata *_metadata, int fd)
{
	const struct bpf_insn insns[] = {
		EBPF_MOV64_REG(BPF_REG_6, BPF_REG_1),
		EBPF_LD_ABS_B(0),
		EBPF_JNE_IMM(BPF_REG_0, 'x', 2),
		EBPF_MOV64_IMM(BPF_REG_0, 0),
		EBPF_EXIT(),
		EBPF_MOV64_IMM(BPF_REG_0, -1),
		EBPF_EXIT(),
	};

	attach_ebpf(_metadata, fd, insns, 7);
}

/* How a test attaches each kind of filter to a socket. */
struct filter_kind {
	void (*ret)(struct __test_metadata *_metadata, int fd, int n);
	void (*drop_x)(struct __test_metadata *_metadata, int fd);
};

static void cbpf_ret(struct __test_metadata *_metadata, int fd, int n)
{
	attach_cbpf_ret(_metadata, fd, n);
}

static const struct filter_kind cbpf = { cbpf_ret, attach_cbpf_drop_x };
static const struct filter_kind ebpf = { attach_ebpf_ret, attach_ebpf_drop_x };

/* A bus of three joined clients, and the kind of filter to attach. */
FIXTURE(kinds) {
	struct bus_name bus;
	int m;
	struct bus_peer p[3];
};

FIXTURE_VARIANT(kinds) {
	const struct filter_kind *kind;
};

FIXTURE_VARIANT_ADD(kinds, cbpf) {
	.kind = &cbpf,
};

FIXTURE_VARIANT_ADD(kinds, ebpf) {
	.kind = &ebpf,
};

FIXTURE_SETUP(kinds)
{
	bus_open_peers(_metadata, &self->bus, &self->m, self->p, 3, 3);
}

FIXTURE_TEARDOWN(kinds)
{
	bus_close_peers(&self->m, self->p, 3);
}

/*
 * A filter that accepts 4 bytes on p[1]: p[1] gets the first 4 bytes of
 * a multicast (without MSG_TRUNC: that is its whole copy), p[0] and p[2]
 * get it whole.
 */
TEST_F(kinds, multicast_truncated_for_filtered_recipient_only)
{
	variant->kind->ret(_metadata, self->p[1].cfd, 4);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "hello world");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "abc");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "hello world");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "abc");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "hell");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "abc");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "hello world");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "abc");
	bus_expect_quiet(_metadata, self->p, 3);
}

/* A filter that accepts nothing on p[1]: only p[1] misses the messages. */
TEST_F(kinds, multicast_dropped_for_filtered_recipient_only)
{
	variant->kind->ret(_metadata, self->p[1].cfd, 0);
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, bus_mcast(0),
		     "first");
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, bus_mcast(0),
		     "second");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[2].addr,
		   "first");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[2].addr,
		   "second");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[2].addr,
		   "first");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[2].addr,
		   "second");
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * A filter on p[1] that drops messages starting with 'x': p[1] gets the
 * others in order, p[0] and p[2] get all of them in order.
 */
TEST_F(kinds, multicast_dropped_by_content_order_kept)
{
	static const char *const msgs[] = {
		"one", "xtwo", "three", "xfour", "x", "five", "six",
	};
	const int n = sizeof(msgs) / sizeof(msgs[0]);
	int i, j;

	variant->kind->drop_x(_metadata, self->p[1].cfd);
	for (i = 0; i < n; i++)
		bus_send_str(_metadata, self->p[i % 3].cfd, &self->bus,
			     bus_mcast(0), msgs[i]);
	for (j = 0; j < 3; j++)
		for (i = 0; i < n; i++)
			if (j != 1 || msgs[i][0] != 'x')
				bus_expect(_metadata, self->p[j].cfd,
					   &self->bus, self->p[i % 3].addr,
					   msgs[i]);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Unicast from a client, and from the master, truncated and dropped. */
TEST_F(kinds, unicast_truncated)
{
	variant->kind->ret(_metadata, self->p[1].cfd, 4);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "unicast");
	bus_send_plain(_metadata, self->p[1].afd, "from master");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "unic");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		   "from");
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(kinds, unicast_dropped)
{
	variant->kind->ret(_metadata, self->p[1].cfd, 0);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "gone");
	bus_send_plain(_metadata, self->p[1].afd, "gone too");
	bus_expect_quiet(_metadata, self->p, 3);
	/* the sender was not told, and the bus goes on working */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[2].addr,
		     "still");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "still");
}

/* A filter on the master's accepted socket filters what its client sends. */
TEST_F(kinds, unicast_to_master_filtered)
{
	variant->kind->drop_x(_metadata, self->p[0].afd);
	bus_send_plain(_metadata, self->p[0].cfd, "xdrop");
	bus_send_plain(_metadata, self->p[0].cfd, "keep");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, BUS_MASTER_ADDR,
		     "xagain");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "keep");
	bus_expect_quiet(_metadata, self->p, 3);
}

/* SO_DETACH_FILTER: messages come whole again, from the next one on. */
TEST_F(kinds, detach_restores_delivery)
{
	variant->kind->ret(_metadata, self->p[1].cfd, 0);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "dropped");
	detach_filter(_metadata, self->p[1].cfd);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "whole");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "whole");

	variant->kind->ret(_metadata, self->p[1].cfd, 2);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "trimmed");
	detach_filter(_metadata, self->p[1].cfd);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0),
		     "whole again");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "tr");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "whole again");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "trimmed");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[0].addr,
		   "whole again");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "trimmed");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[0].addr,
		   "whole again");
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Filters on two recipients each act on that recipient's copy. */
TEST_F(filt, two_filters_two_copies)
{
	attach_cbpf_ret(_metadata, self->p[0].cfd, 3);
	attach_ebpf_ret(_metadata, self->p[2].cfd, 5);
	bus_send_str(_metadata, self->p[1].cfd, &self->bus, bus_mcast(0),
		     "multicast");
	bus_expect(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		   "mul");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[1].addr,
		   "multicast");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, self->p[1].addr,
		   "multi");
	bus_expect_quiet(_metadata, self->p, 3);
}

/*
 * A filter truncates the copy itself: a reader with a big buffer gets 4
 * bytes and no MSG_TRUNC, and recv(MSG_TRUNC) also says 4.
 */
TEST_F(filt, truncated_copy_is_the_message)
{
	char buf[64];
	ssize_t n;

	attach_cbpf_ret(_metadata, self->p[1].cfd, 4);
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "0123456789");
	n = recv(self->p[1].cfd, buf, 2, MSG_TRUNC | MSG_PEEK);
	ASSERT_EQ(4, n);
	n = recv(self->p[1].cfd, buf, sizeof(buf), 0);
	ASSERT_EQ(4, n);
	ASSERT_EQ(0, memcmp(buf, "0123", 4));
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_HARNESS_MAIN
