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
 * them. The policy below is loaded with apparmor_parser -r, compiled
 * against the feature set `features` (-M) rather than the running
 * kernel's: that of AppArmor ABI 3.0 without network mediation.
 * Debian 12's apparmor_parser (3.0.8) takes its address families from
 * the C library's headers of its build and does not know family 46
 * (bus): compiled with network mediation, a profile refuses
 * socket(AF_BUS) whatever its network rules say, as AppArmor refuses a
 * family its policy cannot name. These profiles test the dbus rules,
 * which do not depend on it. A socket gets its profile from the task
 * that makes it: a thread changes to the profile and makes the socket,
 * which the test's other threads then use.
 *
 * Profiles (bus type "afbustest", set by the master with
 * NFDBUS_A_BUS_TYPE):
 *   afbus_caller   may send org.ex.I.Yes on /ok to anybody, and
 *                  receive anything
 *   afbus_service  may receive org.ex.I.Yes only, and send anything
 *   afbus_deaf     may send anything and receive nothing
 */
#include "nfdbus_test.h"
#include "af_bus_lsm.h"

#include <pthread.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define BUS_TYPE	"afbustest"

static const char policy[] =
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

/* The features of AppArmor ABI 3.0 (/etc/apparmor.d/abi/3.0) but its
 * network and network_v8 sections: what the profiles are compiled for
 */
static const char features[] =
	"query {label {multi_transaction {yes\n}\ndata {yes\n}\n"
	"perms {allow deny audit quiet\n}\n}\n}\n"
	"dbus {mask {acquire send receive\n}\n}\n"
	"signal {mask {hup int quit ill trap abrt bus fpe kill usr1 segv usr2 "
	"pipe alrm term stkflt chld cont stop stp ttin ttou urg xcpu xfsz "
	"vtalrm prof winch io pwr sys emt lost\n}\n}\n"
	"ptrace {mask {read trace\n}\n}\n"
	"caps {mask {chown dac_override dac_read_search fowner fsetid kill "
	"setgid setuid setpcap linux_immutable net_bind_service net_broadcast "
	"net_admin net_raw ipc_lock ipc_owner sys_module sys_rawio sys_chroot "
	"sys_ptrace sys_pacct sys_admin sys_boot sys_nice sys_resource "
	"sys_time sys_tty_config mknod lease audit_write audit_control "
	"setfcap mac_override mac_admin syslog wake_alarm block_suspend "
	"audit_read perfmon bpf\n}\n}\n"
	"rlimit {mask {cpu fsize data stack core rss nproc nofile memlock as "
	"locks sigpending msgqueue nice rtprio rttime\n}\n}\n"
	"capability {0xffffff\n}\n"
	"namespaces {pivot_root {no\n}\nprofile {yes\n}\n}\n"
	"mount {mask {mount umount pivot_root\n}\n}\n"
	"file {mask {create read write exec append mmap_exec link lock\n}\n}\n"
	"domain {version {1.2\n}\nattach_conditions {xattr {yes\n}\n}\n"
	"computed_longest_left {yes\n}\npost_nnp_subset {yes\n}\n"
	"fix_binfmt_elf_mmap {yes\n}\nstack {yes\n}\nchange_profile {yes\n}\n"
	"change_onexec {yes\n}\nchange_hatv {yes\n}\nchange_hat {yes\n}\n}\n"
	"policy {set_load {yes\n}\nversions {v8 {yes\n}\nv7 {yes\n}\n"
	"v6 {yes\n}\nv5 {yes\n}\n}\n}\n";

static const char *parser(void)
{
	const char *p = getenv("AFBUS_APPARMOR_PARSER");

	return p && *p ? p : "/sbin/apparmor_parser";
}

/* Is AppArmor the running LSM with apparmorfs, and the parser there? */
static bool apparmor_ready(void)
{
	return lsm_running("apparmor") &&
	       !access("/sys/kernel/security/apparmor/features/dbus/mask",
		       R_OK) &&
	       !access(parser(), X_OK);
}

/* Write @text to a new file named from @path (mkstemp). */
static int write_tmp(char *path, const char *text)
{
	int fd = mkstemp(path), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	if (!ok) {
		unlink(path);
		return -1;
	}
	return 0;
}

static int load_policy(void)
{
	char prof[] = "/tmp/afbus-apparmor-XXXXXX";
	char feat[] = "/tmp/afbus-apparmor-features-XXXXXX", cmd[256];
	int rc = -1;

	if (write_tmp(prof, policy))
		return -1;
	if (!write_tmp(feat, features)) {
		snprintf(cmd, sizeof(cmd), "%s -M %s -r %s", parser(), feat,
			 prof);
		rc = system(cmd) == 0 ? 0 : -1;
		unlink(feat);
	}
	unlink(prof);
	return rc;
}

/*
 * Without auditd the kernel prints its audit records, which the tests
 * read from its log: rate-limited by printk_ratelimit (10 in 5 s), which
 * the records of a test's setup may use up. A test lifts the limit and
 * puts the old value (in @old) back after.
 */
#define RATELIMIT "/proc/sys/kernel/printk_ratelimit"

static int ratelimit_set(const char *value, char *old, size_t size)
{
	int fd = open(RATELIMIT, O_RDWR | O_CLOEXEC), ok = 1;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (old) {
		n = read(fd, old, size - 1);
		ok = n > 0;
		old[ok ? n : 0] = 0;
	}
	ok = ok && pwrite(fd, value, strlen(value), 0) ==
		   (ssize_t)strlen(value);
	close(fd);
	return ok ? 0 : -1;
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

/* The count of denials(@member) once it reaches @want (up to 2 s), and
 * 200 ms later: more than @want is one record too many.
 */
static int denials_reach(const char *member, int want)
{
	int i, n = -1;

	for (i = 0; i < 100; i++) {
		n = denials(member);
		if (n >= want)
			break;
		usleep(20 * 1000);
	}
	if (n >= want) {
		usleep(200 * 1000);
		n = denials(member);
	}
	return n;
}

/* What a thread confined by a profile made: its socket, or the step and
 * errno of its failure.
 */
struct confined {
	const char *profile;
	const char *failed;
	int err;
	int fd;
};

/*
 * Change the calling thread (only) to the profile and make the socket.
 * The thread shares the test's files, so the socket needs no passing:
 * AF_UNIX refuses to carry AF_BUS sockets in SCM_RIGHTS (EOPNOTSUPP).
 */
static void *confined_thread(void *arg)
{
	struct confined *c = arg;
	char cmd[64];
	int at;

	snprintf(cmd, sizeof(cmd), "changeprofile %s", c->profile);
	at = open("/proc/thread-self/attr/current", O_WRONLY | O_CLOEXEC);
	if (at < 0) {
		c->failed = "open /proc/thread-self/attr/current";
		c->err = errno;
		return NULL;
	}
	if (write(at, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
		c->failed = "changeprofile";
		c->err = errno;
		close(at);
		return NULL;
	}
	close(at);
	c->fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
	if (c->fd < 0) {
		c->failed = "socket";
		c->err = errno;
	}
	return NULL;
}

/* An AF_BUS D-Bus socket made by a thread confined by profile: AppArmor
 * gives a socket the label of the task that makes it, and applies the
 * socket's label whoever uses it later.
 */
static int confined_socket(struct __test_metadata *_metadata,
			   const char *profile)
{
	struct confined c = { .profile = profile, .fd = -1 };
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, confined_thread, &c));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_LE(0, c.fd)
		TH_LOG("thread for %s: %s: %s", profile, c.failed,
		       strerror(c.err));
	return c.fd;
}

/* NFDBUS_CMD_SET_BUS with flags and the bus type, as dbus-daemon sends
 * it (libnfdbus, transport-afbus/bus/bus-afbus-match.c set_bus())
 */
static int set_bus(struct nfd_bus *b, uint32_t flags, const char *type)
{
	return nfdbus_set_bus_type(b->h, &b->nb, flags, 0, 0, type);
}

/*
 * Peers: 0 afbus_caller, 1 afbus_service, 2 afbus_deaf, 3 unconfined,
 * 4 unconfined eavesdropper.
 */
enum { CALLER, SERVICE, DEAF, PLAIN, EAVES, NPEERS };

FIXTURE(aa) {
	struct nfd_bus b;
	char ratelimit[32];
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
	self->ratelimit[0] = 0;
	if (!apparmor_ready())
		SKIP(return, "AppArmor with dbus rules is not the running LSM");
	if (!loaded) {
		ASSERT_OK(load_policy());
		loaded = true;
	}
	ASSERT_OK(ratelimit_set("0", self->ratelimit,
				sizeof(self->ratelimit)));
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
	if (self->ratelimit[0])
		ratelimit_set(self->ratelimit, NULL, 0);
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
	/* longer than NFDBUS_BUS_TYPE_MAX - 1: refused, nothing set */
	ASSERT_EQ(-ENAMETOOLONG,
		  set_bus(&self->b, 0, "0123456789abcdef0123456789abcdef"));
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	/* once: another type is refused, the same one is fine */
	ASSERT_EQ(-EBUSY, set_bus(&self->b, 0, "session"));
	ASSERT_LE(0, set_bus(&self->b, 0, BUS_TYPE));
	/* no type: the flags change, the type stays */
	ASSERT_LE(0, set_bus(&self->b, 0, NULL));
	ASSERT_EQ(-EBUSY, set_bus(&self->b, 0, "session"));
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
