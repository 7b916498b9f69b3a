// SPDX-License-Identifier: GPL-2.0
/*
 * SELinux mediation of AF_BUS (Documentation/networking/af_bus.rst,
 * "Linux security modules"; lsm/0003), in the guest boot that runs
 * SELinux (run-qemu.sh --check boots the test kernel a second time with
 * lsm=selinux for this unit; in the other boots SELinux is not running
 * and every case skips).
 *
 * The policy is tests/selinux/afbus.cil, compiled on the host by secilc
 * twice, without and with the extended_socket_class capability, and
 * built into this program (.incbin); each variant loads its own through
 * /sys/fs/selinux/load and turns enforcing on.  The test moves between
 * the policy's contexts (/proc/self/attr/current) to make each socket in
 * its own: the master in master_t, clients A, B, C in client_a_t, ...
 *
 *  - without the capability AF_BUS sockets are in the socket class, and
 *    a connection asks connect on the master's socket there: a client
 *    allowed connect only in bus_socket (bus_only_t) gets EACCES, with an
 *    AVC record naming tclass=socket, and one allowed it only in socket
 *    (sock_only_t) connects;
 *  - with it they are in bus_socket, asked connectto: the other way round;
 *  - in both, a message between two clients asks send_msg in the dbus
 *    class from the sender's context to the recipient's: A may send to C
 *    and itself, C to B, A not to B (EACCES, B gets nothing, one AVC
 *    record tclass=dbus); A's multicast skips B; the master is not asked;
 *  - SO_PEERSEC gives each end of a connection the other's context.
 */
#include "af_bus_test.h"
#include "af_bus_lsm.h"

#include <sys/klog.h>
#include <sys/mount.h>

#ifndef AFBUS_SELINUX_POLICIES
#error "AFBUS_SELINUX_POLICIES: the directory of the compiled policies (Makefile.am)"
#endif

/*
 * The two binary policies, built in: afbus-socket.pol (afbus.cil) and
 * afbus-bus-socket.pol (afbus.cil + extended_socket_class.cil).
 */
asm(".pushsection .rodata\n"
    ".balign 8\n"
    "policy_socket:\n"
    ".incbin \"" AFBUS_SELINUX_POLICIES "/afbus-socket.pol\"\n"
    "policy_socket_end:\n"
    ".balign 8\n"
    "policy_bus_socket:\n"
    ".incbin \"" AFBUS_SELINUX_POLICIES "/afbus-bus-socket.pol\"\n"
    "policy_bus_socket_end:\n"
    ".popsection\n");
extern const char policy_socket[], policy_socket_end[];
extern const char policy_bus_socket[], policy_bus_socket_end[];

#define SELINUXFS	"/sys/fs/selinux"
#define CTX(type)	"afbus_u:afbus_r:" type
#define CTX_KERNEL	CTX("kernel_t")
#define CTX_MASTER	CTX("master_t")
#define CTX_A		CTX("client_a_t")
#define CTX_B		CTX("client_b_t")
#define CTX_C		CTX("client_c_t")

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	close(fd);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

static int write_str(const char *path, const char *s)
{
	return write_file(path, s, strlen(s));
}

/* The first line of path into buf (without its newline), or "". */
static void read_line(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/* Is SELinux the running LSM, with selinuxfs mounted (mounting it if not)? */
static bool selinux_ready(void)
{
	if (!lsm_running("selinux"))
		return false;
	if (access(SELINUXFS "/load", W_OK))
		mount("selinuxfs", SELINUXFS, "selinuxfs", 0, NULL);
	return !access(SELINUXFS "/load", W_OK);
}

static int set_context(const char *ctx)
{
	return write_str("/proc/self/attr/current", ctx);
}

/*
 * AVC denials in the kernel log of perm from scontext to tcontext in
 * tclass (kauditd prints the records: no audit daemon runs).
 */
static int denials(const char *perm, const char *scontext,
		   const char *tcontext, const char *tclass)
{
	static char buf[1 << 20];
	char want_perm[64], want_s[128], want_t[128], want_c[64];
	int n = klogctl(3, buf, sizeof(buf) - 1), count = 0;
	char *line, *save;

	if (n < 0)
		return -1;
	buf[n] = 0;
	snprintf(want_perm, sizeof(want_perm), "avc:  denied  { %s } ", perm);
	snprintf(want_s, sizeof(want_s), " scontext=%s ", scontext);
	snprintf(want_t, sizeof(want_t), " tcontext=%s ", tcontext);
	snprintf(want_c, sizeof(want_c), " tclass=%s permissive=0", tclass);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		count += strstr(line, want_perm) && strstr(line, want_s) &&
			 strstr(line, want_t) && strstr(line, want_c);
	return count;
}

/* Wait until the kernel log holds want such denials. */
static int denials_reach(int want, const char *perm, const char *scontext,
			 const char *tcontext, const char *tclass)
{
	int i, n = -1;

	for (i = 0; i < 100; i++) {
		n = denials(perm, scontext, tcontext, tclass);
		if (n >= want)
			break;
		usleep(20 * 1000);
	}
	return n;
}

FIXTURE(selinux) {
	struct bus_name bus;
	int m;
	struct bus_peer a, b, c;
};

FIXTURE_VARIANT(selinux) {
	const char *policy, *policy_end;
	const char *extended_socket_class;	/* "0" or "1" */
	const char *tclass;			/* of AF_BUS sockets */
	const char *connect_perm;		/* asked on the master's */
	const char *refused;			/* may not connect in tclass */
	const char *admitted;			/* may connect in tclass only */
};

FIXTURE_VARIANT_ADD(selinux, socket_class) {
	.policy = policy_socket,
	.policy_end = policy_socket_end,
	.extended_socket_class = "0",
	.tclass = "socket",
	.connect_perm = "connect",
	.refused = CTX("bus_only_t"),
	.admitted = CTX("sock_only_t"),
};

FIXTURE_VARIANT_ADD(selinux, bus_socket_class) {
	.policy = policy_bus_socket,
	.policy_end = policy_bus_socket_end,
	.extended_socket_class = "1",
	.tclass = "bus_socket",
	.connect_perm = "connectto",
	.refused = CTX("sock_only_t"),
	.admitted = CTX("bus_only_t"),
};

/*
 * The variant's policy loaded (unless it already is: a load per case
 * would flood the rate-limited kernel log with audit records) and
 * enforced.
 */
static void load_policy(struct __test_metadata *_metadata,
			const FIXTURE_VARIANT(selinux) *variant)
{
	char cur[256], cap[16], enforce[16];

	read_line("/proc/self/attr/current", cur, sizeof(cur));
	read_line(SELINUXFS "/policy_capabilities/extended_socket_class",
		  cap, sizeof(cap));
	if (strcmp(cur, CTX_KERNEL) ||
	    strcmp(cap, variant->extended_socket_class))
		ASSERT_OK(write_file(SELINUXFS "/load", variant->policy,
				     variant->policy_end - variant->policy));
	read_line("/proc/self/attr/current", cur, sizeof(cur));
	ASSERT_STREQ(CTX_KERNEL, cur);
	read_line(SELINUXFS "/policy_capabilities/extended_socket_class",
		  cap, sizeof(cap));
	ASSERT_STREQ(variant->extended_socket_class, cap);
	ASSERT_OK(write_str(SELINUXFS "/enforce", "1"));
	read_line(SELINUXFS "/enforce", enforce, sizeof(enforce));
	ASSERT_STREQ("1", enforce);
}

/* A client of the fixture's bus, made (and connected) in context ctx. */
static void client(struct __test_metadata *_metadata,
		   FIXTURE_DATA(selinux) *self, const char *ctx,
		   struct bus_peer *p)
{
	ASSERT_OK(set_context(ctx));
	p->cfd = bus_socket(_metadata, BUS_PROTO_NONE);
	ASSERT_OK(bus_connect_name(p->cfd, &self->bus));
	ASSERT_OK(set_context(CTX_KERNEL));
	p->afd = bus_accept(_metadata, self->m);
	p->addr = bus_local_addr(_metadata, p->cfd);
	bus_join(_metadata, p->afd);
}

FIXTURE_SETUP(selinux)
{
	/* the audit records the cases count go through printk_ratelimit() */
	static const char burst[] = "100000";

	self->m = -1;
	self->a.cfd = self->a.afd = -1;
	self->b.cfd = self->b.afd = -1;
	self->c.cfd = self->c.afd = -1;
	if (!selinux_ready())
		SKIP(return, "SELinux is not the running LSM");
	ASSERT_OK(write_str("/proc/sys/kernel/printk_ratelimit_burst", burst));
	load_policy(_metadata, variant);

	self->bus = bus_name_abstract();
	ASSERT_OK(set_context(CTX_MASTER));
	self->m = bus_master(_metadata, &self->bus);
	ASSERT_OK(set_context(CTX_KERNEL));
	client(_metadata, self, CTX_A, &self->a);
	client(_metadata, self, CTX_B, &self->b);
	client(_metadata, self, CTX_C, &self->c);
}

FIXTURE_TEARDOWN(selinux)
{
	bus_peer_close(&self->a);
	bus_peer_close(&self->b);
	bus_peer_close(&self->c);
	if (self->m >= 0)
		close(self->m);
}

/* The harness runs a case whose setup skipped: skip it again. */
#define SELINUX_REQUIRED() do {						\
	if (self->m < 0)						\
		SKIP(return, "SELinux is not the running LSM");		\
} while (0)

/* Each end of a connection has the other's context, in either class. */
TEST_F(selinux, peer_contexts)
{
	SELINUX_REQUIRED();
	expect_peersec(_metadata, self->a.cfd, CTX_MASTER);
	expect_peersec(_metadata, self->a.afd, CTX_A);
	expect_peersec(_metadata, self->b.cfd, CTX_MASTER);
	expect_peersec(_metadata, self->b.afd, CTX_B);
	expect_peersec(_metadata, self->c.afd, CTX_C);
}

/*
 * A child (which keeps this process's context) connecting a fresh socket
 * made in context ctx, and staying connected until connect_end().
 */
struct connector {
	pid_t pid;
	int hold;	/* the child exits when this closes */
};

/* Its connect(): 0, or the errno of the failure (-1: the child failed). */
static int connect_as(FIXTURE_DATA(selinux) *self, const char *ctx,
		      struct connector *c)
{
	int res[2], hold[2], err = -1;
	char ch;

	c->pid = -1;
	c->hold = -1;
	if (pipe(res) || pipe(hold))
		return -1;
	c->pid = fork();
	if (!c->pid) {
		int fd;

		close(res[0]);
		close(hold[1]);
		if (set_context(ctx))
			_exit(100);
		fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_NONE);
		if (fd < 0)
			_exit(101);
		err = bus_connect_name(fd, &self->bus) ? errno : 0;
		if (write(res[1], &err, sizeof(err)) != sizeof(err))
			_exit(102);
		/* until the parent is done with the connection */
		while (read(hold[0], &ch, 1) > 0)
			;
		_exit(0);
	}
	close(res[1]);
	close(hold[0]);
	c->hold = hold[1];
	if (c->pid < 0 || read(res[0], &err, sizeof(err)) != sizeof(err))
		err = -1;
	close(res[0]);
	return err;
}

/* Let the child go: its exit status (0), or -1. */
static int connect_end(struct connector *c)
{
	int status;

	if (c->hold >= 0)
		close(c->hold);
	if (c->pid < 0 || waitpid(c->pid, &status, 0) != c->pid ||
	    !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * A client whose context may not connect to the master's in the class of
 * AF_BUS sockets under this policy (but may in the other class) gets
 * EACCES, one AVC record names that class, and nothing is pending.
 */
TEST_F(selinux, connect_refused_in_class)
{
	struct connector c;
	int before;

	SELINUX_REQUIRED();
	before = denials(variant->connect_perm, variant->refused, CTX_MASTER,
			 variant->tclass);
	ASSERT_LE(0, before);
	ASSERT_EQ(EACCES, connect_as(self, variant->refused, &c));
	bus_expect_no_pending(_metadata, self->m);
	ASSERT_EQ(0, connect_end(&c));
	ASSERT_EQ(before + 1,
		  denials_reach(before + 1, variant->connect_perm,
				variant->refused, CTX_MASTER,
				variant->tclass));
}

/*
 * A client whose context may connect in the class of AF_BUS sockets
 * under this policy only (not in the other) connects: the kernel asks
 * that class, not the other.
 */
TEST_F(selinux, connect_admitted_in_class)
{
	struct connector c;
	int fd;

	SELINUX_REQUIRED();
	ASSERT_EQ(0, connect_as(self, variant->admitted, &c));
	fd = bus_accept(_metadata, self->m);
	expect_peersec(_metadata, fd, variant->admitted);
	close(fd);
	ASSERT_EQ(0, connect_end(&c));
}

/*
 * send_msg between the two clients' contexts decides a unicast: A to B
 * is refused (EACCES, one AVC record in the dbus class, B gets nothing),
 * A to C and C to B go through.
 */
TEST_F(selinux, unicast)
{
	static const char msg[] = "from A", msg_c[] = "from C";
	int before;

	SELINUX_REQUIRED();
	before = denials("send_msg", CTX_A, CTX_B, "dbus");
	ASSERT_LE(0, before);
	ASSERT_ERRNO(EACCES, bus_sendto(self->a.cfd, &self->bus, self->b.addr,
					msg, strlen(msg), 0));
	ASSERT_EQ(before + 1,
		  denials_reach(before + 1, "send_msg", CTX_A, CTX_B, "dbus"));
	bus_expect_none(_metadata, self->b.cfd);
	bus_send_str(_metadata, self->a.cfd, &self->bus, self->c.addr, msg);
	bus_expect(_metadata, self->c.cfd, &self->bus, self->a.addr, msg);
	bus_send_str(_metadata, self->c.cfd, &self->bus, self->b.addr, msg_c);
	bus_expect(_metadata, self->b.cfd, &self->bus, self->c.addr, msg_c);
	bus_expect_none(_metadata, self->b.cfd);
	bus_expect_none(_metadata, self->c.cfd);
}

/* A's multicast reaches A and C, not B: one AVC record for B. */
TEST_F(selinux, multicast_skips_refused_member)
{
	static const char msg[] = "signal from A";
	int before;

	SELINUX_REQUIRED();
	before = denials("send_msg", CTX_A, CTX_B, "dbus");
	ASSERT_LE(0, before);
	bus_send_str(_metadata, self->a.cfd, &self->bus, bus_mcast(0), msg);
	ASSERT_EQ(before + 1,
		  denials_reach(before + 1, "send_msg", CTX_A, CTX_B, "dbus"));
	bus_expect(_metadata, self->a.cfd, &self->bus, self->a.addr, msg);
	bus_expect(_metadata, self->c.cfd, &self->bus, self->a.addr, msg);
	bus_expect_none(_metadata, self->b.cfd);
}

/*
 * The master relays and is not asked: master_t may send_msg to nobody,
 * and its message to B arrives.  No record is written for it.
 */
TEST_F(selinux, master_not_mediated)
{
	static const char msg[] = "from the master";
	int before;

	SELINUX_REQUIRED();
	before = denials("send_msg", CTX_MASTER, CTX_B, "dbus");
	ASSERT_LE(0, before);
	bus_send_plain(_metadata, self->b.afd, msg);
	bus_expect(_metadata, self->b.cfd, &self->bus, BUS_MASTER_ADDR, msg);
	ASSERT_EQ(before, denials("send_msg", CTX_MASTER, CTX_B, "dbus"));
}

TEST_HARNESS_MAIN
