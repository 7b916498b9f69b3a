// SPDX-License-Identifier: GPL-2.0
/*
 * LSM mediation of AF_BUS (Documentation/networking/af_bus.rst, "Linux
 * security modules"), with Smack: labels through /proc/self/attr/current
 * and rules through smackfs load2, no policy compiler.
 *
 * The master's socket is labeled afbusM, clients A, B and C afbusA,
 * afbusB, afbusC. Every client and the master may write to each other;
 * A may write to C but not to B. Then, in a process without
 * CAP_MAC_OVERRIDE: A's unicast to B fails with EACCES and B gets
 * nothing, A's unicast to C goes through; A's multicast skips B and
 * reaches C (and A); each refusal is one Smack audit record. A client labeled
 * afbusD, which may not write to the master, cannot connect. SO_PEERSEC
 * gives a client the master's label and an accepted socket its client's.
 */
#include "af_bus_test.h"
#include "af_bus_lsm.h"

#include <grp.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SMACKFS		"/sys/fs/smackfs"
#define LABEL_M		"afbusM"
#define LABEL_A		"afbusA"
#define LABEL_B		"afbusB"
#define LABEL_C		"afbusC"
#define LABEL_D		"afbusD"

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* Is Smack the running LSM, with smackfs mounted (mounting it if not)? */
static bool smack_ready(void)
{
	if (!lsm_running("smack"))
		return false;
	if (access(SMACKFS "/load2", W_OK)) {
		mkdir(SMACKFS, 0755);
		mount("smackfs", SMACKFS, "smackfs", 0, NULL);
	}
	return !access(SMACKFS "/load2", W_OK);
}

static int set_label(const char *label)
{
	return write_file("/proc/self/attr/current", label);
}

static int rule(const char *subject, const char *object, const char *access)
{
	char line[128];

	snprintf(line, sizeof(line), "%s %s %s", subject, object, access);
	return write_file(SMACKFS "/load2", line);
}

/* Smack audit records of refused AF_BUS sends in the kernel log. */
static int denials(void)
{
	static char buf[1 << 20];
	int n = klogctl(3, buf, sizeof(buf) - 1), count = 0;
	char *p;

	if (n < 0)
		return -1;
	buf[n] = 0;
	for (p = buf; (p = strstr(p, "fn=smack_afbus_may_send")); p++)
		count += !!strstr(p, "action=denied") &&
			 strstr(p, "action=denied") < strchrnul(p, '\n');
	return count;
}

/* Wait until the kernel log holds want refusals (kauditd prints them). */
static int denials_reach(int want)
{
	int i, n = -1;

	for (i = 0; i < 100; i++) {
		n = denials();
		if (n >= want)
			break;
		usleep(20 * 1000);
	}
	return n;
}

FIXTURE(lsm) {
	struct bus_name bus;
	int m;
	struct bus_peer a, b, c;
};

/* A client of the fixture's bus, made with label. */
static void client(struct __test_metadata *_metadata, FIXTURE_DATA(lsm) *self,
		   const char *label, struct bus_peer *p)
{
	ASSERT_OK(set_label(label));
	p->cfd = bus_socket(_metadata, BUS_PROTO_NONE);
	ASSERT_OK(bus_connect_name(p->cfd, &self->bus));
	p->afd = bus_accept(_metadata, self->m);
	p->addr = bus_local_addr(_metadata, p->cfd);
	bus_join(_metadata, p->afd);
}

FIXTURE_SETUP(lsm)
{
	static const char *const clients[] = { LABEL_A, LABEL_B, LABEL_C };
	size_t i;

	self->m = -1;
	self->a.cfd = self->a.afd = -1;
	self->b.cfd = self->b.afd = -1;
	self->c.cfd = self->c.afd = -1;
	if (!smack_ready())
		SKIP(return, "Smack is not the running LSM");
	for (i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		ASSERT_OK(rule(clients[i], LABEL_M, "w"));
		ASSERT_OK(rule(LABEL_M, clients[i], "w"));
	}
	ASSERT_OK(rule(LABEL_A, LABEL_C, "w"));
	ASSERT_OK(rule(LABEL_A, LABEL_B, "-"));

	self->bus = bus_name_abstract();
	ASSERT_OK(set_label(LABEL_M));
	self->m = bus_master(_metadata, &self->bus);
	client(_metadata, self, LABEL_A, &self->a);
	client(_metadata, self, LABEL_B, &self->b);
	client(_metadata, self, LABEL_C, &self->c);
	ASSERT_OK(set_label("_"));
}

FIXTURE_TEARDOWN(lsm)
{
	bus_peer_close(&self->a);
	bus_peer_close(&self->b);
	bus_peer_close(&self->c);
	if (self->m >= 0)
		close(self->m);
	set_label("_");
}

/* The harness runs a test whose setup skipped: skip it again. */
#define SMACK_REQUIRED() do {						\
	if (self->m < 0)						\
		SKIP(return, "Smack is not the running LSM");		\
} while (0)

/* Drop every capability (CAP_MAC_OVERRIDE bypasses Smack): uid 65534. */
static bool unprivileged(void)
{
	return !setgroups(0, NULL) && !setresgid(65534, 65534, 65534) &&
	       !setresuid(65534, 65534, 65534);
}

static int wait_child(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST_F(lsm, peer_labels)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	SMACK_REQUIRED();
	expect_peersec(_metadata, self->a.cfd, LABEL_M);
	expect_peersec(_metadata, self->a.afd, LABEL_A);
	expect_peersec(_metadata, self->b.cfd, LABEL_M);
	expect_peersec(_metadata, self->b.afd, LABEL_B);
	expect_peersec(_metadata, self->c.afd, LABEL_C);
	/* and SO_PEERCRED on both ends */
	ASSERT_OK(getsockopt(self->a.afd, SOL_SOCKET, SO_PEERCRED, &cred, &len));
	ASSERT_EQ(getpid(), cred.pid);
	ASSERT_OK(getsockopt(self->a.cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len));
	ASSERT_EQ(getpid(), cred.pid);
}

/* In a child without privileges: A to B, then A to C. */
static int a_sends(FIXTURE_DATA(lsm) *self, bool mcast)
{
	static const char msg[] = "from A";
	int bad = 0;

	if (!unprivileged())
		return 100;
	if (mcast)
		return bus_sendto(self->a.cfd, &self->bus, bus_mcast(0), msg,
				  strlen(msg), 0) == (ssize_t)strlen(msg) ? 0 : 101;
	bad |= !(bus_sendto(self->a.cfd, &self->bus, self->b.addr, msg,
			    strlen(msg), 0) < 0 && errno == EACCES);
	bad |= (bus_sendto(self->a.cfd, &self->bus, self->c.addr, msg,
			   strlen(msg), 0) != (ssize_t)strlen(msg)) << 1;
	return bad;
}

/* A sends in a child without privileges: exactly one refusal is audited. */
static void a_sends_unprivileged(struct __test_metadata *_metadata,
				 FIXTURE_DATA(lsm) *self, bool mcast)
{
	int before = denials();
	pid_t pid;

	ASSERT_LE(0, before);
	pid = fork();
	if (!pid)
		_exit(a_sends(self, mcast));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(before + 1, denials_reach(before + 1));
}

TEST_F(lsm, unicast)
{
	SMACK_REQUIRED();
	a_sends_unprivileged(_metadata, self, false);
	bus_expect_none(_metadata, self->b.cfd);
	bus_expect(_metadata, self->c.cfd, &self->bus, self->a.addr, "from A");
	bus_expect_none(_metadata, self->c.cfd);
}

TEST_F(lsm, multicast_skips_refused_member)
{
	SMACK_REQUIRED();
	a_sends_unprivileged(_metadata, self, true);
	/* members get their own multicasts: A's label may write to itself */
	bus_expect(_metadata, self->a.cfd, &self->bus, self->a.addr, "from A");
	bus_expect_none(_metadata, self->b.cfd);
	bus_expect(_metadata, self->c.cfd, &self->bus, self->a.addr, "from A");
}

/* The master relays and is not mediated; with CAP_MAC_OVERRIDE a client
 * is not either.
 */
TEST_F(lsm, master_and_privileged_not_mediated)
{
	static const char msg[] = "from A";

	SMACK_REQUIRED();
	ASSERT_EQ((ssize_t)strlen(msg),
		  bus_sendto(self->a.cfd, &self->bus, self->b.addr, msg,
			     strlen(msg), 0));
	bus_expect(_metadata, self->b.cfd, &self->bus, self->a.addr, "from A");
	ASSERT_EQ((ssize_t)strlen(msg), send(self->b.afd, msg, strlen(msg), 0));
	bus_expect(_metadata, self->b.cfd, &self->bus, BUS_MASTER_ADDR, "from A");
}

/* In a child labeled D, which may not write to the master: connect. */
static int d_connects(FIXTURE_DATA(lsm) *self)
{
	int fd;

	if (set_label(LABEL_D) || !unprivileged())
		return 100;
	fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_NONE);
	if (fd < 0)
		return 101;
	if (!bus_connect_name(fd, &self->bus))
		return 102;
	return errno == EACCES ? 0 : 103;
}

TEST_F(lsm, connect_refused)
{
	pid_t pid;

	SMACK_REQUIRED();
	pid = fork();
	if (!pid)
		_exit(d_connects(self));
	ASSERT_EQ(0, wait_child(pid));
	bus_expect_no_pending(_metadata, self->m);
}

TEST_HARNESS_MAIN
