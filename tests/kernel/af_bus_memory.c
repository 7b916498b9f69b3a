// SPDX-License-Identifier: GPL-2.0
/*
 * The memory model of AF_BUS (af_bus.rst, "Memory"), as a hostile user
 * would test it: a message is admitted to a receive buffer only when it
 * fits whole (or the buffer is empty); every message is charged to the
 * budget of a user (net.bus.user_mem) and, once queued, of its bus
 * (net.bus.bus_mem), each of which it exceeds by one message at most; a
 * master without CAP_NET_ADMIN allows messages of at most net.bus.msg_max
 * bytes, twice net.core.rmem_max by default.  So what an unprivileged
 * user pins with unaccepted connections and recipients that never read
 * stays within the documented bound, measured in MemAvailable, while
 * another user's traffic goes on.
 */
#include "af_bus_test.h"

#include <grp.h>
#include <linux/sock_diag.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>

#define ATTACKER	65534
#define VICTIM		65533
#define KIB		1024L
#define MIB		(1024L * 1024)
/* The largest message any bus may allow (BUS_MSG_MAX_LIMIT) */
#define MSG_MAX_LIMIT	(1 << 30)
/* unaccepted clients and senders of the attack */
#define N_ATTACK	64

/* s = p[0] sends, x = p[1] never reads */
BUS_PEERS_FIXTURE(mem, 2, 2)

static long mem_available_kib(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

static unsigned long meminfo(struct __test_metadata *_metadata, int fd, int idx)
{
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len));
	return mem[idx];
}

static int set_int(int fd, int opt, int val)
{
	return setsockopt(fd, SOL_BUS, opt, &val, sizeof(val));
}

static bool become(uid_t uid)
{
	return !setgroups(0, NULL) && !setresgid(uid, uid, uid) &&
	       !setresuid(uid, uid, uid) && geteuid() == uid;
}

/*
 * net.bus.msg_max is twice net.core.rmem_max by default; a master
 * without CAP_NET_ADMIN may allow that much and no more, and nobody more
 * than BUS_MSG_MAX_LIMIT, which the sysctl cannot exceed either.
 */
TEST(msg_max_capped)
{
	long rmem_max = bus_read_long("/proc/sys/net/core/rmem_max");
	long msg_max = bus_read_long("/proc/sys/net/bus/msg_max");
	struct bus_name bus = bus_name_abstract();
	int m, status;
	pid_t pid;

	ASSERT_LT(0, rmem_max);
	ASSERT_EQ(2 * rmem_max, msg_max);
	ASSERT_EQ(EINVAL, bus_write_long("/proc/sys/net/bus/msg_max",
				     MSG_MAX_LIMIT + 1L));
	ASSERT_EQ(EINVAL, bus_write_long("/proc/sys/net/bus/msg_max", 0x7fffffff));
	ASSERT_EQ(msg_max, bus_read_long("/proc/sys/net/bus/msg_max"));

	m = bus_master(_metadata, &bus);
	ASSERT_ERRNO(EINVAL, set_int(m, BUS_SET_MSG_MAX, MSG_MAX_LIMIT + 1));
	ASSERT_OK(set_int(m, BUS_SET_MSG_MAX, MSG_MAX_LIMIT));
	close(m);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct bus_name own = bus_name_abstract();
		int fd = socket(AF_BUS, SOCK_SEQPACKET, 0), bad = 0;

		if (!become(ATTACKER) || fd < 0 || bus_bind_name(fd, &own) ||
		    listen(fd, 4))
			_exit(100);
		bad |= set_int(fd, BUS_SET_MSG_MAX, msg_max) != 0;
		bad |= (set_int(fd, BUS_SET_MSG_MAX, msg_max + 1) != -1 ||
			errno != EPERM) << 1;
		bad |= (set_int(fd, BUS_SET_MSG_MAX, 128 << 20) != -1 ||
			errno != EPERM) << 2;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * A message is queued only if it fits whole in what is left of the
 * receive buffer, or if the buffer is empty: with a buffer of one and a
 * half messages, the second waits (EAGAIN) instead of going in half over
 * it; a message larger than the whole buffer reaches an empty queue.
 */
TEST_F(mem, admitted_whole)
{
	int s = self->p[0].cfd, x = self->p[1].cfd;
	__u64 xa = self->p[1].addr;
	unsigned long t, rcvbuf;
	static char buf[64 * 1024];
	int half;

	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, sizeof(buf)));
	ASSERT_EQ(3000, bus_sendto(s, &self->bus, xa, buf, 3000,
				   MSG_DONTWAIT));
	t = meminfo(_metadata, x, SK_MEMINFO_RMEM_ALLOC);
	ASSERT_LT(3000UL, t);
	/* SO_RCVBUF's doubling: the buffer becomes 1.5 * t */
	half = 3 * t / 4;
	ASSERT_OK(set_int(self->p[1].afd, BUS_SET_RCVBUF, half));
	rcvbuf = meminfo(_metadata, x, SK_MEMINFO_RCVBUF);
	ASSERT_LT(t, rcvbuf);
	ASSERT_GT(2 * t, rcvbuf);
	ASSERT_ERRNO(EAGAIN, bus_sendto(s, &self->bus, xa, buf, 3000,
					MSG_DONTWAIT))
		TH_LOG("a second message went in over the receive buffer");
	ASSERT_EQ(t, meminfo(_metadata, x, SK_MEMINFO_RMEM_ALLOC));
	ASSERT_EQ(3000, recv(x, buf, sizeof(buf), MSG_DONTWAIT));
	/* empty: a message larger than the buffer goes in, alone */
	ASSERT_EQ((ssize_t)sizeof(buf),
		  bus_sendto(s, &self->bus, xa, buf, sizeof(buf), MSG_DONTWAIT));
	ASSERT_LT(rcvbuf, meminfo(_metadata, x, SK_MEMINFO_RMEM_ALLOC));
	ASSERT_ERRNO(EAGAIN, bus_sendto(s, &self->bus, xa, buf, 1,
					MSG_DONTWAIT));
	ASSERT_EQ((ssize_t)sizeof(buf), recv(x, buf, sizeof(buf),
					      MSG_DONTWAIT));
	ASSERT_EQ(0UL, meminfo(_metadata, x, SK_MEMINFO_RMEM_ALLOC));
}

/* What the attacker reports. */
struct attack_report {
	int err;		/* where it went wrong, 0 if nowhere */
	int sys_errno;
	long queued;		/* messages that went out */
	long rmem;		/* SK_MEMINFO_RMEM_ALLOC of its readable ones */
	long truesize;		/* of one message */
};

/*
 * As ATTACKER: a bus of its own with messages of msg_max bytes (the most
 * it may allow), N_ATTACK accepted pairs whose sender fills its
 * recipient, which never reads, then N_ATTACK clients it never accepts
 * (connected after the pairs, so that accept() takes the pairs), each
 * sending such messages to the master until EAGAIN.  Reports, then keeps
 * it all until told to go.
 */
static int attacker(int msg_max, int report, int go)
{
	struct rlimit rl = { 4096, 4096 };
	struct attack_report ar = { 0 };
	struct bus_name own = bus_name_abstract();
	static int unacc[N_ATTACK], snd[N_ATTACK], rcv[N_ATTACK];
	struct bus_name to;
	char *buf = calloc(1, msg_max);
	int m, i, a;
	char b;

	if (!buf || setrlimit(RLIMIT_NOFILE, &rl) || !become(ATTACKER))
		return 100;
	m = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (m < 0 || bus_bind_name(m, &own) || listen(m, 4 * N_ATTACK) ||
	    set_int(m, BUS_SET_MSG_MAX, msg_max))
		return 101;
	for (i = 0; i < N_ATTACK; i++) {
		snd[i] = socket(AF_BUS, SOCK_SEQPACKET, 0);
		rcv[i] = socket(AF_BUS, SOCK_SEQPACKET, 0);
		if (snd[i] < 0 || rcv[i] < 0 ||
		    bus_connect_name(snd[i], &own) ||
		    bus_connect_name(rcv[i], &own))
			return 103;
		for (a = 0; a < 2; a++) {
			int fd = accept(m, NULL, NULL);

			if (fd < 0 || setsockopt(fd, SOL_BUS, BUS_JOIN_BUS,
						 NULL, 0))
				return 104;
		}
	}
	for (i = 0; i < N_ATTACK; i++) {
		struct sockaddr_bus sa;
		socklen_t len = sizeof(sa);

		if (getsockname(rcv[i], (struct sockaddr *)&sa, &len))
			return 105;
		to = bus_dest(&own, sa.sbus_addr.s_addr);
		while (sendto(snd[i], buf, msg_max, MSG_DONTWAIT,
			      (struct sockaddr *)&to.sa, to.len) == msg_max)
			ar.queued++;
		if (errno != EAGAIN && !ar.err) {
			ar.err = 2;
			ar.sys_errno = errno;
		}
	}
	for (i = 0; i < N_ATTACK; i++) {
		unacc[i] = socket(AF_BUS, SOCK_SEQPACKET, 0);
		if (unacc[i] < 0 || bus_connect_name(unacc[i], &own))
			return 102;
		while (send(unacc[i], buf, msg_max, MSG_DONTWAIT) == msg_max)
			ar.queued++;
		if (errno != EAGAIN) {
			ar.err = 3;
			ar.sys_errno = errno;
		}
	}
	for (i = 0; i < N_ATTACK; i++) {
		__u32 mem[SK_MEMINFO_VARS];
		socklen_t len = sizeof(mem);

		if (getsockopt(rcv[i], SOL_SOCKET, SO_MEMINFO, mem, &len))
			return 106;
		ar.rmem += mem[SK_MEMINFO_RMEM_ALLOC];
		if (mem[SK_MEMINFO_RMEM_ALLOC] && !ar.truesize)
			ar.truesize = mem[SK_MEMINFO_RMEM_ALLOC];
	}
	if (write(report, &ar, sizeof(ar)) != sizeof(ar))
		return 107;
	while (read(go, &b, 1) > 0)
		;
	return 0;
}

/* As VICTIM, on the root bus: a pair that exchanges 100 messages. */
static int victim(const struct bus_name *bus, __u64 *addrs, int report,
		  int go)
{
	int a = socket(AF_BUS, SOCK_SEQPACKET, 0);
	int b = socket(AF_BUS, SOCK_SEQPACKET, 0);
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	char msg[256], c;
	int i;

	if (!become(VICTIM) || a < 0 || b < 0 ||
	    setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    bus_connect_name(a, bus) || bus_connect_name(b, bus) ||
	    getsockname(b, (struct sockaddr *)&sa, &len))
		return 110;
	addrs[0] = sa.sbus_addr.s_addr;
	if (write(report, addrs, sizeof(*addrs)) != sizeof(*addrs) ||
	    read(go, &c, 1) != 1)
		return 111;
	for (i = 0; i < 100; i++) {
		struct bus_name to = bus_dest(bus, sa.sbus_addr.s_addr);

		memset(msg, i, sizeof(msg));
		if (sendto(a, msg, sizeof(msg), 0, (struct sockaddr *)&to.sa,
			   to.len) != sizeof(msg))
			return 112;
		if (recv(b, msg, sizeof(msg), 0) != sizeof(msg) ||
		    msg[0] != (char)i)
			return 113;
	}
	return 0;
}

/*
 * The issue 36 attack: an unprivileged user pins memory with unaccepted
 * connections and recipients that never read.  What it pins (the drop in
 * MemAvailable) stays within net.bus.user_mem plus one message, plus
 * what its sockets themselves take (4 KiB each is generous) and some
 * noise; what it could queue to its readable recipients is counted to
 * the byte.  Another user's traffic goes on meanwhile.
 */
TEST_F_TIMEOUT(mem, unprivileged_user_bounded, 300)
{
	long user_mem = bus_read_long("/proc/sys/net/bus/user_mem");
	long rmem_max = bus_read_long("/proc/sys/net/core/rmem_max");
	int rep[2], go[2], vrep[2], vgo[2], status, a1, a2;
	struct attack_report ar;
	long before, after, bound, msg_max;
	__u64 vaddr;
	pid_t pid, vpid;
	char b;

	ASSERT_LT(0, user_mem);
	/* the largest message an unprivileged master may allow */
	msg_max = 2 * rmem_max;
	ASSERT_OK(pipe(rep));
	ASSERT_OK(pipe(go));
	before = mem_available_kib();
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(rep[0]);
		close(go[1]);
		_exit(attacker(msg_max, rep[1], go[0]));
	}
	close(rep[1]);
	close(go[0]);
	ASSERT_EQ(POLLIN, bus_poll(_metadata, rep[0], POLLIN, 240000) & POLLIN);
	ASSERT_EQ((ssize_t)sizeof(ar), read(rep[0], &ar, sizeof(ar)))
		TH_LOG("the attacker failed");
	after = mem_available_kib();
	ASSERT_EQ(0, ar.err) TH_LOG("attack step %d: %s", ar.err,
				    strerror(ar.sys_errno));
	ASSERT_LT(0, ar.truesize);
	/* its budget, and one message beyond */
	ASSERT_GE(user_mem + ar.truesize, ar.rmem);
	bound = (user_mem + ar.truesize + 4 * N_ATTACK * 4 * KIB) / KIB +
		8 * 1024;
	TH_LOG("%ld messages of %ld bytes queued; MemAvailable %ld -> %ld kB"
	       " (bound %ld kB)", ar.queued, msg_max, before, after, bound);
	ASSERT_GE(bound, before - after)
		TH_LOG("pinned %ld kB", before - after);
	ASSERT_GE((user_mem + ar.truesize) / ar.truesize + 1, ar.queued);

	/* another user's traffic goes on */
	ASSERT_OK(pipe(vrep));
	ASSERT_OK(pipe(vgo));
	vpid = fork();
	ASSERT_LE(0, vpid);
	if (!vpid) {
		close(vrep[0]);
		close(vgo[1]);
		_exit(victim(&self->bus, &vaddr, vrep[1], vgo[0]));
	}
	close(vrep[1]);
	close(vgo[0]);
	ASSERT_EQ((ssize_t)sizeof(vaddr), read(vrep[0], &vaddr,
					       sizeof(vaddr)));
	a1 = bus_accept(_metadata, self->m);
	a2 = bus_accept(_metadata, self->m);
	bus_join(_metadata, a1);
	bus_join(_metadata, a2);
	ASSERT_EQ(1, write(vgo[1], "g", 1));
	ASSERT_EQ(vpid, waitpid(vpid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	(void)b;
	close(a1);
	close(a2);
	close(rep[0]);
	close(vrep[0]);
	close(vgo[1]);
}

/*
 * A bus holds at most net.bus.bus_mem, plus one message: in a network
 * namespace of its own (whose sysctl root may set), recipients that
 * never read take that much and then refuse; another bus goes on.
 */
TEST(bus_budget)
{
	struct bus_name bus, other;
	struct bus_peer p[8], q[2];
	static char buf[32 * 1024];
	long total = 0, t = 0;
	int m, m2, i;
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len;

	ASSERT_OK(unshare(CLONE_NEWNET));
	ASSERT_EQ(0, bus_write_long("/proc/sys/net/bus/bus_mem", 1 * MIB));
	ASSERT_EQ(1 * MIB, bus_read_long("/proc/sys/net/bus/bus_mem"));
	/* the same for every namespace: set in the initial one only */
	ASSERT_EQ(EACCES, bus_write_long("/proc/sys/net/bus/user_mem", 1 * MIB));
	bus_open_peers(_metadata, &bus, &m, p, 8, 8);
	ASSERT_OK(set_int(m, BUS_SET_MSG_MAX, sizeof(buf)));
	for (i = 1; i < 8; i++) {
		ASSERT_OK(set_int(p[i].afd, BUS_SET_RCVBUF, 4 * MIB));
		while (bus_sendto(p[0].cfd, &bus, p[i].addr, buf, sizeof(buf),
				  MSG_DONTWAIT) == sizeof(buf))
			;
		ASSERT_EQ(EAGAIN, errno);
	}
	for (i = 1; i < 8; i++) {
		len = sizeof(mem);
		ASSERT_OK(getsockopt(p[i].cfd, SOL_SOCKET, SO_MEMINFO, mem,
				     &len));
		total += mem[SK_MEMINFO_RMEM_ALLOC];
		if (!t && mem[SK_MEMINFO_RMEM_ALLOC])
			t = mem[SK_MEMINFO_RMEM_ALLOC];
	}
	TH_LOG("bus holds %ld bytes", total);
	ASSERT_LE(1 * MIB, total);
	ASSERT_GE(1 * MIB + sizeof(buf) * 2, total);
	/* another bus of the namespace has its own budget */
	bus_open_peers(_metadata, &other, &m2, q, 2, 2);
	ASSERT_EQ((ssize_t)sizeof(buf), bus_sendto(q[0].cfd, &other, q[1].addr,
						   buf, sizeof(buf), 0));
	/* reading makes room */
	ASSERT_LT(0, recv(p[1].cfd, buf, sizeof(buf), MSG_DONTWAIT));
	ASSERT_EQ((ssize_t)sizeof(buf), bus_sendto(p[0].cfd, &bus, p[1].addr,
						   buf, sizeof(buf),
						   MSG_DONTWAIT));
	bus_close_peers(&m2, q, 2);
	bus_close_peers(&m, p, 8);
}

/*
 * With memory cgroups, what is queued is charged to the recipient's
 * cgroup (socket memory: "sock" in memory.stat, and memory.current), not
 * to the sender's: a sender cannot make a service's cgroup pay for what
 * it sends, nor escape its own limit by queueing to others.  A message
 * is charged to its sender's cgroup only while send(2) holds it.  The
 * socket core charges it (AF_BUS's struct proto has a memory_allocated,
 * and __sk_mem_schedule() charges the socket's sk_memcg).  The tests
 * mount cgroup2 in a mount namespace of their own (the guest's mounts
 * stay as they are); the test kernel has CONFIG_MEMCG (af_bus.config).
 * memory.current may be off by what each CPU keeps charged in advance
 * (MEMCG_CHARGE_BATCH, 64 pages): the margins below are 1 MiB against
 * 4 MiB queued.
 */
#define MEMCG_N_MSGS	64
#define CG_ROOT	"/tmp/afbus-cg"
#define CG_RCPT	CG_ROOT "/rcpt"
#define CG_SNDR	CG_ROOT "/sndr"

static long memcg_sock(const char *cg)
{
	char path[128], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "sock %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static long memcg_current(const char *cg)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	return bus_read_long(path);
}

/* move the calling process into cgroup cg: 0 or the errno */
static int memcg_enter(const char *cg)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return bus_write_long(path, getpid());
}

/* cgroup2, with the memory controller, in a mount namespace of the
 * calling test's own, and the cgroups CG_RCPT and CG_SNDR
 */
static void memcg_setup(struct __test_metadata *_metadata)
{
	FILE *f;

	ASSERT_OK(unshare(CLONE_NEWNS));
	ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	mkdir(CG_ROOT, 0755);
	ASSERT_EQ(0, mount("none", CG_ROOT, "cgroup2", 0, NULL))
		TH_LOG("cgroup2: %s (the kernel needs CONFIG_MEMCG)",
		       strerror(errno));
	f = fopen(CG_ROOT "/cgroup.subtree_control", "w");
	ASSERT_NE(NULL, f);
	ASSERT_LT(0, fprintf(f, "+memory"));
	ASSERT_EQ(0, fclose(f)) TH_LOG("+memory: %s", strerror(errno));
	rmdir(CG_RCPT);
	rmdir(CG_SNDR);
	ASSERT_OK(mkdir(CG_RCPT, 0755));
	ASSERT_OK(mkdir(CG_SNDR, 0755));
}

TEST_F(mem, memcg_charged_to_recipient)
{
	static char buf[64 * 1024];
	long rcpt_sock, rcpt_cur, sndr_sock, sndr_cur;
	const long queued = MEMCG_N_MSGS * (long)sizeof(buf);
	int sv[2], x, y, ya, i, status, n;
	struct bus_name to;
	__u64 addr;
	pid_t pid;
	char c;

	memcg_setup(_metadata);
	ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, sizeof(buf)));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* the recipient, made in its cgroup, reads only when told */
		if (memcg_enter(CG_RCPT))
			_exit(1);
		x = bus_connect(_metadata, &self->bus);
		if (read(sv[1], &c, 1) != 1)
			_exit(2);
		addr = bus_local_addr(_metadata, x);
		if (write(sv[1], &addr, sizeof(addr)) != sizeof(addr))
			_exit(3);
		if (read(sv[1], &c, 1) != 1)
			_exit(4);
		for (n = 0; recv(x, buf, sizeof(buf), MSG_DONTWAIT) ==
			    sizeof(buf); n++)
			;
		c = n;
		if (write(sv[1], &c, 1) != 1)
			_exit(5);
		if (read(sv[1], &c, 1) != 1)
			_exit(6);
		_exit(0);
	}
	x = bus_accept(_metadata, self->m);
	bus_join(_metadata, x);
	ASSERT_OK(set_int(x, BUS_SET_RCVBUF, 8 * MIB));
	ASSERT_EQ(1, write(sv[0], "j", 1));
	ASSERT_EQ((ssize_t)sizeof(addr), read(sv[0], &addr, sizeof(addr)));
	to = bus_dest(&self->bus, addr);

	/* the sender, made in the other cgroup */
	ASSERT_OK(memcg_enter(CG_SNDR));
	y = bus_connect(_metadata, &self->bus);
	ya = bus_accept(_metadata, self->m);
	bus_join(_metadata, ya);

	rcpt_sock = memcg_sock(CG_RCPT);
	rcpt_cur = memcg_current(CG_RCPT);
	sndr_sock = memcg_sock(CG_SNDR);
	sndr_cur = memcg_current(CG_SNDR);
	ASSERT_LE(0, rcpt_sock);
	ASSERT_LE(0, rcpt_cur);
	ASSERT_LE(0, sndr_sock);
	ASSERT_LE(0, sndr_cur);
	for (i = 0; i < MEMCG_N_MSGS; i++)
		ASSERT_EQ((ssize_t)sizeof(buf),
			  sendto(y, buf, sizeof(buf), MSG_DONTWAIT,
				 (struct sockaddr *)&to.sa, to.len))
			TH_LOG("message %d: %s", i, strerror(errno));
	TH_LOG("queued %ld: recipient's cgroup sock +%ld current +%ld, sender's sock +%ld current +%ld",
	       queued, memcg_sock(CG_RCPT) - rcpt_sock,
	       memcg_current(CG_RCPT) - rcpt_cur,
	       memcg_sock(CG_SNDR) - sndr_sock,
	       memcg_current(CG_SNDR) - sndr_cur);
	/* all of it on the recipient's cgroup, as socket memory ... */
	ASSERT_LE(queued, memcg_sock(CG_RCPT) - rcpt_sock);
	ASSERT_LE(queued, memcg_current(CG_RCPT) - rcpt_cur);
	/* ... none of it on the sender's (a quarter of it is more than
	 * its charges in advance and page tables could take meanwhile)
	 */
	ASSERT_GT(64 * KIB, memcg_sock(CG_SNDR) - sndr_sock);
	ASSERT_GT(queued / 4, memcg_current(CG_SNDR) - sndr_cur);

	/* what the recipient reads is given back to its cgroup */
	ASSERT_EQ(1, write(sv[0], "r", 1));
	ASSERT_EQ(1, read(sv[0], &c, 1));
	ASSERT_EQ(MEMCG_N_MSGS, c);
	ASSERT_GT(rcpt_cur + queued / 4, memcg_current(CG_RCPT));
	ASSERT_EQ(1, write(sv[0], "q", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);

	ASSERT_OK(memcg_enter(CG_ROOT));
	close(y);
	close(ya);
	close(x);
	close(sv[0]);
	close(sv[1]);
	ASSERT_OK(rmdir(CG_RCPT));
	ASSERT_OK(rmdir(CG_SNDR));
}

/*
 * What send(2) holds is charged to the sender's cgroup: here a message
 * that waits for room in a recipient that holds one already.  Once
 * queued, it is the recipient's; each copy of a multicast is charged to
 * its recipient, whole; and a recipient that closes without reading
 * gives its cgroup back what was queued to it.  All the sockets are made
 * by this process: a socket's cgroup is that of the task that made it
 * (for an accepted socket, the client that connected).
 */
#define MEMCG_BIG	(2 * MIB)
#define MEMCG_PFX	0x77

struct memcg_send {
	int fd;
	const struct bus_name *bus;
	__u64 to;
};

static long memcg_send_big(void *p)
{
	static char big[MEMCG_BIG];
	struct memcg_send *a = p;

	return bus_sendto(a->fd, a->bus, a->to, big, sizeof(big), 0);
}

/* wait up to 5 s for the socket memory of cgroup cg to be at least
 * (more) or below (!more) v: the statistics are flushed lazily
 */
static long memcg_sock_wait(const char *cg, long v, bool more)
{
	long now;
	int i;

	for (i = 0; i < 500; i++) {
		now = memcg_sock(cg);
		if (more ? now >= v : now < v)
			break;
		usleep(10000);
	}
	return now;
}

TEST_F(mem, memcg_charged_to_sender_while_sending)
{
	static char big[MEMCG_BIG];
	long rcpt_sock, rcpt_cur, sndr_sock, sndr_cur, now;
	int x, xa, r2, r2a, y, ya;
	struct memcg_send arg;
	struct bus_call call;

	memcg_setup(_metadata);
	ASSERT_OK(set_int(self->m, BUS_SET_MSG_MAX, MEMCG_BIG));

	/* two recipients made in their cgroup, members of a prefix */
	ASSERT_OK(memcg_enter(CG_RCPT));
	x = bus_connect(_metadata, &self->bus);
	xa = bus_accept(_metadata, self->m);
	bus_join(_metadata, xa);
	ASSERT_OK(bus_addr_opt(xa, BUS_ADD_ADDR, bus_mkaddr(MEMCG_PFX, 1)));
	r2 = bus_connect(_metadata, &self->bus);
	r2a = bus_accept(_metadata, self->m);
	bus_join(_metadata, r2a);
	ASSERT_OK(bus_addr_opt(r2a, BUS_ADD_ADDR, bus_mkaddr(MEMCG_PFX, 2)));
	/* the sender, made in the other cgroup */
	ASSERT_OK(memcg_enter(CG_SNDR));
	y = bus_connect(_metadata, &self->bus);
	ya = bus_accept(_metadata, self->m);
	bus_join(_metadata, ya);
	bus_set_timeouts(_metadata, y, 30000);

	rcpt_sock = memcg_sock(CG_RCPT);
	rcpt_cur = memcg_current(CG_RCPT);
	sndr_sock = memcg_sock(CG_SNDR);
	sndr_cur = memcg_current(CG_SNDR);
	ASSERT_LE(0, rcpt_sock);
	ASSERT_LE(0, sndr_sock);

	/* a multicast: both copies charged to the recipients' cgroup */
	ASSERT_EQ(MEMCG_BIG, bus_sendto(y, &self->bus, bus_mcast(MEMCG_PFX),
					big, MEMCG_BIG, MSG_DONTWAIT));
	now = memcg_sock_wait(CG_RCPT, rcpt_sock + 2 * MEMCG_BIG, true);
	TH_LOG("multicast of %ld to 2: recipients' sock +%ld, sender's +%ld",
	       MEMCG_BIG, now - rcpt_sock, memcg_sock(CG_SNDR) - sndr_sock);
	ASSERT_LE(2 * MEMCG_BIG, now - rcpt_sock);
	ASSERT_LE(2 * MEMCG_BIG, memcg_current(CG_RCPT) - rcpt_cur);
	ASSERT_GT(64 * KIB, memcg_sock(CG_SNDR) - sndr_sock);

	/* x holds one message: a second waits in send(2), charged to the
	 * sender
	 */
	arg = (struct memcg_send){ .fd = y, .bus = &self->bus,
				   .to = bus_mkaddr(MEMCG_PFX, 1) };
	call = (struct bus_call){ .fn = memcg_send_big, .arg = &arg };
	bus_call_start_blocked(_metadata, &call);
	now = memcg_sock_wait(CG_SNDR, sndr_sock + MEMCG_BIG, true);
	TH_LOG("waiting in send(2): sender's sock +%ld current +%ld",
	       now - sndr_sock, memcg_current(CG_SNDR) - sndr_cur);
	ASSERT_LE(MEMCG_BIG, now - sndr_sock);
	ASSERT_LE(MEMCG_BIG / 2, memcg_current(CG_SNDR) - sndr_cur);
	ASSERT_EQ(-2, call.ret) TH_LOG("the send did not wait");

	/* x reads one: the waiting message goes out, to x's cgroup */
	ASSERT_EQ(MEMCG_BIG, recv(x, big, sizeof(big), 0));
	bus_call_finish(_metadata, &call);
	ASSERT_EQ(MEMCG_BIG, call.ret) TH_LOG("send: %s", strerror(call.err));
	now = memcg_sock_wait(CG_SNDR, sndr_sock + 64 * KIB, false);
	ASSERT_GT(64 * KIB, now - sndr_sock);
	ASSERT_LE(2 * MEMCG_BIG, memcg_sock(CG_RCPT) - rcpt_sock);

	/* the recipients close without reading: all given back */
	close(x);
	close(xa);
	close(r2);
	close(r2a);
	now = memcg_sock_wait(CG_RCPT, rcpt_sock + 64 * KIB, false);
	TH_LOG("closed: recipients' sock +%ld current +%ld", now - rcpt_sock,
	       memcg_current(CG_RCPT) - rcpt_cur);
	ASSERT_GT(64 * KIB, now - rcpt_sock);
	ASSERT_GT(rcpt_cur + MEMCG_BIG / 2, memcg_current(CG_RCPT));

	ASSERT_OK(memcg_enter(CG_ROOT));
	close(y);
	close(ya);
	ASSERT_OK(rmdir(CG_RCPT));
	ASSERT_OK(rmdir(CG_SNDR));
}

/*
 * SO_RESERVE_MEM, which the socket core grants a socket that accounts
 * its memory in a memory cgroup (a UDP socket, in the same cgroup, shows
 * that it would be granted), fails with EOPNOTSUPP on AF_BUS sockets: a
 * reservation would be charged to no budget (net.bus.user_mem).  AF_BUS
 * takes the SOL_SOCKET options itself for that; the others still reach
 * the socket core, and an unknown one still gets ENOPROTOOPT.
 */
TEST_F(mem, reserve_mem_refused)
{
	int udp, fds[2], val, i;
	socklen_t len;

	memcg_setup(_metadata);
	ASSERT_OK(memcg_enter(CG_SNDR));

	udp = socket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, udp);
	val = 64 * KIB;
	ASSERT_OK(setsockopt(udp, SOL_SOCKET, SO_RESERVE_MEM, &val,
			     sizeof(val)));
	len = sizeof(val);
	ASSERT_OK(getsockopt(udp, SOL_SOCKET, SO_RESERVE_MEM, &val, &len));
	ASSERT_LE(64 * KIB, val);

	/* a client and its accepted socket, both of this cgroup */
	fds[0] = bus_connect(_metadata, &self->bus);
	fds[1] = bus_accept(_metadata, self->m);
	bus_join(_metadata, fds[1]);
	for (i = 0; i < 2; i++) {
		val = 64 * KIB;
		ASSERT_EQ(-1, setsockopt(fds[i], SOL_SOCKET, SO_RESERVE_MEM,
					 &val, sizeof(val)));
		ASSERT_EQ(EOPNOTSUPP, errno);
		val = -1;
		len = sizeof(val);
		ASSERT_OK(getsockopt(fds[i], SOL_SOCKET, SO_RESERVE_MEM, &val,
				     &len));
		ASSERT_EQ(0, val);

		val = 32 * KIB;
		ASSERT_OK(setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &val,
				     sizeof(val)));
		len = sizeof(val);
		ASSERT_OK(getsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &val, &len));
		ASSERT_EQ(64 * KIB, val);	/* doubled, as on any socket */
		val = 1;
		ASSERT_EQ(-1, setsockopt(fds[i], SOL_SOCKET, 0x7fff, &val,
					 sizeof(val)));
		ASSERT_EQ(ENOPROTOOPT, errno);
	}

	ASSERT_OK(memcg_enter(CG_ROOT));
	close(fds[0]);
	close(fds[1]);
	close(udp);
	ASSERT_OK(rmdir(CG_RCPT));
	ASSERT_OK(rmdir(CG_SNDR));
}

TEST_HARNESS_MAIN
