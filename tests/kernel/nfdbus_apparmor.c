// SPDX-License-Identifier: GPL-2.0
/*
 * AppArmor mediation of D-Bus messages between AF_BUS clients
 * (Documentation/networking/af_bus.rst, "Linux security modules"): the
 * dbus rules of the sender's and the recipient's profiles, as
 * dbus-daemon's bus/apparmor.c applies them, on every path a message
 * takes: unicast, multicast (per recipient), the default route to the
 * master (not mediated) and eavesdroppers' copies (not mediated).
 *
 * Needs AppArmor as the running major LSM and apparmor_parser (its path
 * in AFBUS_APPARMOR_PARSER, else /sbin/apparmor_parser); skips without
 * them. Debian 12's apparmor_parser (3.0.8) does not know address family
 * 46 (bus): a profile that mediates network refuses socket(AF_BUS)
 * whatever its network rules, so the parser must compile these profiles
 * without network mediation (-M with kernel features lacking network;
 * the development runs used a wrapper doing that). The policy below is loaded with apparmor_parser -r. A socket gets
 * its profile from the task that makes it: a child changes to the
 * profile, makes the socket and hands it back over SCM_RIGHTS.
 *
 * Profiles (bus type "afbustest", set by the master with
 * NFDBUS_A_BUS_TYPE):
 *   afbus_caller   may send org.ex.I.Yes on /ok to anybody, and
 *                  receive anything
 *   afbus_service  may receive org.ex.I.Yes only, and send anything
 *   afbus_deaf     may send anything and receive nothing
 */
#include "nfdbus_test.h"

#include <libmnl/libmnl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define BUS_TYPE	"afbustest"

static const char policy[] =
	"abi <abi/3.0>,\n"
	"profile afbus_caller {\n"
	"  file,\n"
	"  dbus send bus=" BUS_TYPE " path=/ok interface=org.ex.I member=Yes,\n"
	"  dbus receive bus=" BUS_TYPE ",\n"
	"}\n"
	"profile afbus_service {\n"
	"  file,\n"
	"  dbus receive bus=" BUS_TYPE " interface=org.ex.I member=Yes,\n"
	"  dbus send bus=" BUS_TYPE ",\n"
	"}\n"
	"profile afbus_deaf {\n"
	"  file,\n"
	"  dbus send bus=" BUS_TYPE ",\n"
	"}\n";

static const char *parser(void)
{
	const char *p = getenv("AFBUS_APPARMOR_PARSER");

	return p && *p ? p : "/sbin/apparmor_parser";
}

/* Is AppArmor the running LSM with apparmorfs, and the parser there? */
static bool apparmor_ready(void)
{
	char lsm[256] = "";
	int fd = open("/sys/kernel/security/lsm", O_RDONLY);

	if (fd < 0) {
		mkdir("/sys/kernel/security", 0755);
		mount("securityfs", "/sys/kernel/security", "securityfs", 0,
		      NULL);
		fd = open("/sys/kernel/security/lsm", O_RDONLY);
	}
	if (fd >= 0) {
		if (read(fd, lsm, sizeof(lsm) - 1) < 0)
			lsm[0] = 0;
		close(fd);
	}
	return strstr(lsm, "apparmor") &&
	       !access("/sys/kernel/security/apparmor/features/dbus/mask",
		       R_OK) &&
	       !access(parser(), X_OK);
}

static int load_policy(void)
{
	char path[] = "/tmp/afbus-apparmor-XXXXXX", cmd[256];
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, policy, strlen(policy)) == (ssize_t)strlen(policy);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s -r %s", parser(), path);
	rc = rc && system(cmd) == 0 ? 0 : -1;
	unlink(path);
	return rc;
}

/* AppArmor audit records of refused AF_BUS D-Bus messages. */
static int denials(const char *member)
{
	static char buf[1 << 20];
	int n = klogctl(3, buf, sizeof(buf) - 1), count = 0;
	char key[64], *p, *eol;

	if (n < 0)
		return -1;
	buf[n] = 0;
	snprintf(key, sizeof(key), "member=\"%s\"", member);
	for (p = buf; (p = strstr(p, "apparmor=\"DENIED\" operation=\"dbus_"));
	     p = eol) {
		eol = strchrnul(p, '\n');
		count += memmem(p, eol - p, key, strlen(key)) != NULL;
	}
	return count;
}

static int denials_reach(const char *member, int want)
{
	int i, n = -1;

	for (i = 0; i < 100; i++) {
		n = denials(member);
		if (n >= want)
			break;
		usleep(20 * 1000);
	}
	return n;
}

/* An AF_BUS D-Bus socket made by a child confined by profile. */
static int confined_socket(struct __test_metadata *_metadata,
			   const char *profile)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (char *)"s", .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.b, .msg_controllen = sizeof(u.b),
	};
	struct cmsghdr *c;
	char cmd[64], byte;
	int sv[2], fd, status;
	pid_t pid;

	ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int at = open("/proc/self/attr/current", O_WRONLY);

		snprintf(cmd, sizeof(cmd), "changeprofile %s", profile);
		if (at < 0)
			_exit(99);
		if (write(at, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
			_exit(100 + (errno & 0x1f));
		fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
		if (fd < 0)
			_exit(140 + (errno & 0x1f));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &msg, 0) == 1 ? 0 : 180 + (errno & 0x1f));
	}
	close(sv[1]);
	iov.iov_base = &byte;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child for %s: status %#x", profile, status);
	ASSERT_EQ(1, recvmsg(sv[0], &msg, 0));
	close(sv[0]);
	c = CMSG_FIRSTHDR(&msg);
	ASSERT_NE(NULL, c);
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* NFDBUS_CMD_SET_BUS with flags and the bus type. */
static int set_bus(struct nfd_bus *b, uint32_t flags, const char *type)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	mnl_attr_put(nlh, NFDBUS_A_BUS_PATH, b->nb.len, b->nb.path);
	mnl_attr_put_u32(nlh, NFDBUS_A_BUS_FLAGS, flags);
	if (type)
		mnl_attr_put_strz(nlh, NFDBUS_A_BUS_TYPE, type);
	return nfdbus_request_raw(b->h, NFDBUS_CMD_SET_BUS, 0,
				  mnl_nlmsg_get_payload(nlh),
				  nlh->nlmsg_len - MNL_NLMSG_HDRLEN);
}

/*
 * Peers: 0 afbus_caller, 1 afbus_service, 2 afbus_deaf, 3 unconfined,
 * 4 unconfined eavesdropper.
 */
enum { CALLER, SERVICE, DEAF, PLAIN, EAVES, NPEERS };

FIXTURE(aa) {
	struct nfd_bus b;
};

static void peer_add(struct __test_metadata *_metadata, struct nfd_bus *b,
		     int i, const char *profile)
{
	struct bus_peer *p = &b->p[i];

	p->cfd = profile ? confined_socket(_metadata, profile) :
			   bus_socket(_metadata, BUS_PROTO_DBUS);
	b->n = i + 1;
	ASSERT_OK(bus_connect_name(p->cfd, &b->bus));
	p->afd = bus_accept(_metadata, b->m);
	p->addr = bus_local_addr(_metadata, p->cfd);
	bus_join(_metadata, p->afd);
}

FIXTURE_SETUP(aa)
{
	static bool loaded;

	self->b.m = -1;
	self->b.n = 0;
	self->b.h = NULL;
	if (!apparmor_ready())
		SKIP(return, "AppArmor with dbus rules is not the running LSM");
	if (!loaded) {
		ASSERT_OK(load_policy());
		loaded = true;
	}
	nfd_setup(_metadata, &self->b, 0);
	peer_add(_metadata, &self->b, CALLER, "afbus_caller");
	peer_add(_metadata, &self->b, SERVICE, "afbus_service");
	peer_add(_metadata, &self->b, DEAF, "afbus_deaf");
	peer_add(_metadata, &self->b, PLAIN, NULL);
	peer_add(_metadata, &self->b, EAVES, NULL);
	ASSERT_OK(setsockopt(self->b.p[EAVES].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
}

FIXTURE_TEARDOWN(aa)
{
	nfd_teardown(&self->b);
}

#define AA_REQUIRED() do {						\
	if (self->b.m < 0)						\
		SKIP(return, "AppArmor with dbus rules is not the running LSM"); \
} while (0)

/* A message from peer `from`, SENDER its unique name as the master writes. */
static struct nfd_blob msg_from(struct __test_metadata *_metadata,
				struct nfd_bus *b, int from, int type,
				const char *path, const char *member,
				const char *dest)
{
	char sender[32];
	struct nfd_msg spec = {
		.type = type, .path = path, .iface = "org.ex.I",
		.member = member, .sender = sender, .dest = dest,
	};

	snprintf(sender, sizeof(sender), ":0.%llx",
		 (unsigned long long)b->p[from].addr);
	return nfd_marshal(_metadata, &spec, false);
}

/* sendto peer `to` (or multicast with to < 0): errno, 0 when sent. */
static int send_to(struct nfd_bus *b, int from, int to,
		   const struct nfd_blob *m)
{
	__u64 addr = to < 0 ? bus_mcast(0) : b->p[to].addr;

	return bus_errno_of(bus_sendto(b->p[from].cfd, &b->bus, addr, m->data,
				       m->len, 0));
}

TEST_F(aa, set_bus_type)
{
	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	/* once: another type is refused, the same one is fine */
	ASSERT_EQ(-EBUSY, set_bus(&self->b, 0, "session"));
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
}

TEST_F(aa, peer_labels)
{
	char label[256];
	socklen_t len = sizeof(label);

	AA_REQUIRED();
	memset(label, 0, sizeof(label));
	ASSERT_OK(getsockopt(self->b.p[CALLER].afd, SOL_SOCKET, SO_PEERSEC,
			     label, &len));
	ASSERT_STREQ("afbus_caller (enforce)", label);
	len = sizeof(label);
	memset(label, 0, sizeof(label));
	ASSERT_OK(getsockopt(self->b.p[SERVICE].afd, SOL_SOCKET, SO_PEERSEC,
			     label, &len));
	ASSERT_STREQ("afbus_service (enforce)", label);
}

/* The sender's send rule: Yes on /ok goes, No does not (and is audited). */
TEST_F(aa, unicast_sender_rules)
{
	struct nfd_blob yes, no;
	int before = denials("No");

	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	yes = msg_from(_metadata, &self->b, CALLER, DBUS_MESSAGE_TYPE_METHOD_CALL,
		       "/ok", "Yes", ":0.1");
	no = msg_from(_metadata, &self->b, CALLER, DBUS_MESSAGE_TYPE_METHOD_CALL,
		      "/ok", "No", ":0.1");
	ASSERT_EQ(0, send_to(&self->b, CALLER, PLAIN, &yes));
	ASSERT_EQ(1U << PLAIN | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, yes.data, yes.len));
	ASSERT_EQ(EACCES, send_to(&self->b, CALLER, PLAIN, &no));
	/* the eavesdropper's copy is not mediated */
	ASSERT_EQ(1U << EAVES,
		  nfd_receivers(_metadata, &self->b, no.data, no.len));
	ASSERT_EQ(before + 1, denials_reach("No", before + 1));
	free(yes.data);
	free(no.data);
}

/* The recipient's receive rule: afbus_service takes Yes, not Other. */
TEST_F(aa, unicast_recipient_rules)
{
	struct nfd_blob yes, other;
	int before = denials("Other");

	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	yes = msg_from(_metadata, &self->b, PLAIN, DBUS_MESSAGE_TYPE_METHOD_CALL,
		       "/any", "Yes", ":0.2");
	other = msg_from(_metadata, &self->b, PLAIN,
			 DBUS_MESSAGE_TYPE_METHOD_CALL, "/any", "Other",
			 ":0.2");
	ASSERT_EQ(0, send_to(&self->b, PLAIN, SERVICE, &yes));
	ASSERT_EQ(1U << SERVICE | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, yes.data, yes.len));
	ASSERT_EQ(EACCES, send_to(&self->b, PLAIN, SERVICE, &other));
	ASSERT_EQ(1U << EAVES,
		  nfd_receivers(_metadata, &self->b, other.data, other.len));
	ASSERT_EQ(before + 1, denials_reach("Other", before + 1));
	free(yes.data);
	free(other.data);
}

/* A signal from an unconfined client: each recipient's receive rule. */
TEST_F(aa, multicast_per_recipient)
{
	struct nfd_blob sig;
	int i;

	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	for (i = 0; i < NPEERS; i++)
		NFD_ADD(&self->b, i, "type='signal'", 0);
	sig = msg_from(_metadata, &self->b, PLAIN, DBUS_MESSAGE_TYPE_SIGNAL,
		       "/any", "Other", NULL);
	ASSERT_EQ(0, send_to(&self->b, PLAIN, -1, &sig));
	/* service takes only Yes, deaf nothing; caller and PLAIN anything */
	ASSERT_EQ(1U << CALLER | 1U << PLAIN | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, sig.data, sig.len));
	free(sig.data);
	sig = msg_from(_metadata, &self->b, PLAIN, DBUS_MESSAGE_TYPE_SIGNAL,
		       "/any", "Yes", NULL);
	ASSERT_EQ(0, send_to(&self->b, PLAIN, -1, &sig));
	ASSERT_EQ(1U << CALLER | 1U << SERVICE | 1U << PLAIN | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, sig.data, sig.len));
	free(sig.data);
}

/* The default route: what a confined client sends the master is the
 * master's to check.
 */
TEST_F(aa, default_route_not_mediated)
{
	struct nfd_blob no;
	char buf[512];

	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	no = msg_from(_metadata, &self->b, CALLER, DBUS_MESSAGE_TYPE_METHOD_CALL,
		      "/ok", "No", "org.freedesktop.DBus");
	ASSERT_EQ((ssize_t)no.len, send(self->b.p[CALLER].cfd, no.data, no.len,
					MSG_NOSIGNAL));
	ASSERT_EQ((ssize_t)no.len, recv(self->b.p[CALLER].afd, buf,
					sizeof(buf), MSG_DONTWAIT));
	ASSERT_EQ(0, memcmp(buf, no.data, no.len));
	free(no.data);
}

/* A reply the caller awaits reaches afbus_deaf, which receives nothing
 * else; an unrequested one does not.
 */
TEST_F(aa, requested_reply_allowed)
{
	struct nfd_blob call, ret;
	struct nfd_msg rspec = {
		.type = DBUS_MESSAGE_TYPE_METHOD_RETURN,
	};
	char sender[32], dest[32];

	AA_REQUIRED();
	ASSERT_LE(0, set_bus(&self->b, NFDBUS_BUS_REPLIES, BUS_TYPE));
	/* deaf calls PLAIN (serial 7), PLAIN replies (reply serial 3 in
	 * nfd_marshal: the call must have serial 3)
	 */
	call = msg_from(_metadata, &self->b, DEAF, DBUS_MESSAGE_TYPE_METHOD_CALL,
			"/any", "Any", ":0.4");
	snprintf(sender, sizeof(sender), ":0.%llx",
		 (unsigned long long)self->b.p[PLAIN].addr);
	snprintf(dest, sizeof(dest), ":0.%llx",
		 (unsigned long long)self->b.p[DEAF].addr);
	rspec.sender = sender;
	rspec.dest = dest;
	ret = nfd_marshal(_metadata, &rspec, false);
	/* unrequested: refused by nfdbus before the LSM is asked */
	ASSERT_EQ(EPERM, send_to(&self->b, PLAIN, DEAF, &ret));
	ASSERT_EQ(1U << EAVES,
		  nfd_receivers(_metadata, &self->b, ret.data, ret.len));
	/* nfd_marshal gives every message serial 7, replies reply_serial 3:
	 * make the call's serial 3
	 */
	call.data[8] = 3;
	ASSERT_EQ(0, send_to(&self->b, DEAF, PLAIN, &call));
	ASSERT_EQ(1U << PLAIN | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, call.data, call.len));
	ASSERT_EQ(0, send_to(&self->b, PLAIN, DEAF, &ret));
	ASSERT_EQ(1U << DEAF | 1U << EAVES,
		  nfd_receivers(_metadata, &self->b, ret.data, ret.len));
	free(call.data);
	free(ret.data);
}

/* On a D-Bus bus nfdbus does not read, a confined client's messages to
 * other clients cannot be checked and are refused; unconfined ones go.
 */
TEST(unread_bus_refuses_confined)
{
	struct nfd_bus b = { .m = -1 };
	struct nfd_blob yes;

	if (!apparmor_ready())
		SKIP(return, "AppArmor with dbus rules is not the running LSM");
	ASSERT_OK(load_policy());
	nfd_setup(_metadata, &b, 0);
	peer_add(_metadata, &b, 0, "afbus_caller");
	peer_add(_metadata, &b, 1, NULL);
	peer_add(_metadata, &b, 2, NULL);
	yes = msg_from(_metadata, &b, 0, DBUS_MESSAGE_TYPE_METHOD_CALL, "/ok",
		       "Yes", ":0.1");
	ASSERT_EQ(EACCES, send_to(&b, 0, 1, &yes));
	ASSERT_EQ(EACCES, send_to(&b, 1, 0, &yes));
	ASSERT_EQ(0, send_to(&b, 1, 2, &yes));
	ASSERT_EQ(1U << 2, nfd_receivers(_metadata, &b, yes.data, yes.len));
	free(yes.data);
	nfd_teardown(&b);
}

TEST_HARNESS_MAIN
