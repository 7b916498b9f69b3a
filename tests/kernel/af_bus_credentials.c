// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS credentials: SO_PEERCRED on both ends of a connection,
 * SCM_CREDENTIALS delivered to receivers with SO_PASSCRED (unicast to the
 * master, from the master, multicast), none without it.  The peer whose
 * credentials are checked is a forked child running as CHILD_UID/CHILD_GID.
 * Passing descriptors (SCM_RIGHTS) is tested in af_bus_fds.c.
 */
#include "af_bus_test.h"

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>

#define CHILD_UID	1234
#define CHILD_GID	4321

/* What the child does when told to go. */
enum child_job {
	JOB_NONE,		/* nothing: just stay connected */
	JOB_SEND,		/* send "hello" to the master */
	JOB_SEND_CREDS,		/* the same with an explicit SCM_CREDENTIALS */
	JOB_MULTICAST,		/* multicast "hello" on prefix 0 */
};

struct child {
	pid_t pid;
	int go;			/* parent -> child; EOF tells it to exit */
	int report;		/* child -> parent */
};

/*
 * sendmsg(fd) of payload to addr on bus, with one SOL_SOCKET control
 * message of type carrying len bytes of data (none if len is 0; at most
 * the size of a struct ucred).
 */
static ssize_t send_with_cmsg(int fd, const struct bus_name *bus, __u64 addr,
			      const char *payload, int type,
			      const void *data, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	struct bus_name d = bus_dest(bus, addr);
	struct iovec iov = {
		.iov_base = (void *)payload, .iov_len = strlen(payload),
	};
	struct msghdr msg = {
		.msg_name = &d.sa, .msg_namelen = d.len,
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	struct cmsghdr *cm;

	if (len) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(len);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = type;
		cm->cmsg_len = CMSG_LEN(len);
		memcpy(CMSG_DATA(cm), data, len);
	}
	return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

/* Child side: send "hello" (with our credentials attached if asked). */
static int child_send(int fd, __u64 to, const struct bus_name *bus, bool creds)
{
	struct ucred uc = { .pid = getpid(), .uid = getuid(), .gid = getgid() };

	return send_with_cmsg(fd, bus, to, "hello", SCM_CREDENTIALS, &uc,
			      creds ? sizeof(uc) : 0) == 5 ? 0 : 20;
}

/*
 * Body of the child: drop to CHILD_UID/CHILD_GID, connect, report the
 * SO_PEERCRED of its socket, wait for "go", do its job, report "k", then
 * wait for EOF on go.  Returns the exit status: 0 when all went well.
 */
static int child_main(const struct bus_name *bus, enum child_job job,
		      int go, int report)
{
	struct timeval tv = { .tv_sec = 2 };
	struct ucred uc;
	socklen_t len = sizeof(uc);
	char b;
	int fd;

	if (setgroups(0, NULL) || setgid(CHILD_GID) || setuid(CHILD_UID))
		return 10;
	fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (const struct sockaddr *)&bus->sa, bus->len))
		return 11;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) ||
	    len != sizeof(uc))
		return 12;
	if (write(report, &uc, sizeof(uc)) != sizeof(uc))
		return 13;
	if (read(go, &b, 1) != 1)
		return 14;
	if ((job == JOB_SEND || job == JOB_SEND_CREDS) &&
	    child_send(fd, BUS_MASTER_ADDR, bus, job == JOB_SEND_CREDS))
		return 15;
	if (job == JOB_MULTICAST && child_send(fd, bus_mcast(0), bus, false))
		return 15;
	if (write(report, "k", 1) != 1)
		return 16;
	while (read(go, &b, 1) > 0)
		;
	return 0;
}

/* Wait for a report from the child; say how it exited if it is gone. */
static void child_wait_report(struct __test_metadata *_metadata,
			      struct child *ch)
{
	short ev = bus_poll(_metadata, ch->report, POLLIN, BUS_TIMEOUT_MS);
	int status = 0;

	if (!(ev & POLLIN) && (ev & POLLHUP) &&
	    waitpid(ch->pid, &status, 0) == ch->pid)
		TH_LOG("child exited early with status %d",
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	ASSERT_EQ(POLLIN, ev & POLLIN);
}

/* Fork a child that connects to bus and does job; returns once connected. */
static void child_start(struct __test_metadata *_metadata, struct child *ch,
			const struct bus_name *bus, enum child_job job,
			struct ucred *its_peercred)
{
	int go[2], report[2];

	ASSERT_OK(pipe(go));
	ASSERT_OK(pipe(report));
	ch->pid = fork();
	ASSERT_LE(0, ch->pid);
	if (ch->pid == 0) {
		close(go[1]);
		close(report[0]);
		_exit(child_main(bus, job, go[0], report[1]));
	}
	close(go[0]);
	close(report[1]);
	ch->go = go[1];
	ch->report = report[0];
	child_wait_report(_metadata, ch);
	ASSERT_EQ((ssize_t)sizeof(*its_peercred),
		  read(ch->report, its_peercred, sizeof(*its_peercred)));
}

/* Tell the child to do its job and wait until it is done ("k"). */
static void child_run_job(struct __test_metadata *_metadata, struct child *ch)
{
	char b = 0;

	ASSERT_EQ(1, write(ch->go, "g", 1));
	child_wait_report(_metadata, ch);
	ASSERT_EQ(1, read(ch->report, &b, 1));
	ASSERT_EQ('k', b);
}

/* Let the child exit; it must exit with status 0. */
static void child_finish(struct __test_metadata *_metadata, struct child *ch)
{
	int status;

	close(ch->go);
	ASSERT_EQ(ch->pid, waitpid(ch->pid, &status, 0));
	close(ch->report);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

static void expect_ucred(struct __test_metadata *_metadata,
			 const struct ucred *uc, pid_t pid, uid_t uid, gid_t gid)
{
	EXPECT_EQ(pid, uc->pid);
	EXPECT_EQ(uid, uc->uid);
	EXPECT_EQ(gid, uc->gid);
}

static void peercred(struct __test_metadata *_metadata, int fd,
		     struct ucred *uc)
{
	socklen_t len = sizeof(*uc);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, uc, &len));
	ASSERT_EQ(sizeof(*uc), len);
}

static void set_passcred(struct __test_metadata *_metadata, int fd)
{
	int one = 1;

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
}

/*
 * Receive payload on fd; with creds != NULL expect exactly one
 * SCM_CREDENTIALS equal to *creds, else no control data at all.
 */
static void expect_msg_creds(struct __test_metadata *_metadata, int fd,
			     const char *payload, const struct ucred *creds)
{
	char buf[64];
	union {
		char buf[256];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;
	struct ucred uc;
	ssize_t n = recvmsg(fd, &msg, 0);

	ASSERT_EQ((ssize_t)strlen(payload), n)
		TH_LOG("recvmsg: %s", strerror(errno));
	ASSERT_EQ(0, memcmp(buf, payload, n));
	ASSERT_EQ(0, msg.msg_flags & MSG_CTRUNC);
	cm = CMSG_FIRSTHDR(&msg);
	if (!creds) {
		ASSERT_NULL(cm);
		return;
	}
	ASSERT_NE(NULL, cm);
	ASSERT_EQ(SOL_SOCKET, cm->cmsg_level);
	ASSERT_EQ(SCM_CREDENTIALS, cm->cmsg_type);
	ASSERT_EQ(CMSG_LEN(sizeof(uc)), cm->cmsg_len);
	memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
	expect_ucred(_metadata, &uc, creds->pid, creds->uid, creds->gid);
	ASSERT_NULL(CMSG_NXTHDR(&msg, cm));
}

TEST(peercred_of_accepted_socket_is_client)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct ucred uc, unused;
	struct child ch;
	int a;

	child_start(_metadata, &ch, &bus, JOB_NONE, &unused);
	a = bus_accept(_metadata, m);
	peercred(_metadata, a, &uc);
	expect_ucred(_metadata, &uc, ch.pid, CHILD_UID, CHILD_GID);
	child_run_job(_metadata, &ch);
	child_finish(_metadata, &ch);
	close(a);
	close(m);
}

TEST(peercred_of_client_socket_is_master)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct ucred uc;
	struct child ch;

	child_start(_metadata, &ch, &bus, JOB_NONE, &uc);
	expect_ucred(_metadata, &uc, getpid(), getuid(), getgid());
	child_run_job(_metadata, &ch);
	child_finish(_metadata, &ch);
	close(m);
}

/*
 * The child sends "hello" to the master as job says.  With passcred the
 * accepted socket has SO_PASSCRED and must get the child's credentials
 * with it; without, it must get no control data at all.
 */
static void child_sends_to_master(struct __test_metadata *_metadata,
				  enum child_job job, bool passcred)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct ucred unused, want;
	struct child ch;
	int a;

	child_start(_metadata, &ch, &bus, job, &unused);
	a = bus_accept(_metadata, m);
	if (passcred)
		set_passcred(_metadata, a);
	child_run_job(_metadata, &ch);
	want = (struct ucred){ ch.pid, CHILD_UID, CHILD_GID };
	expect_msg_creds(_metadata, a, "hello", passcred ? &want : NULL);
	child_finish(_metadata, &ch);
	close(a);
	close(m);
}

TEST(passcred_delivers_sender_credentials)
{
	child_sends_to_master(_metadata, JOB_SEND, true);
}

TEST(passcred_delivers_explicit_credentials)
{
	child_sends_to_master(_metadata, JOB_SEND_CREDS, true);
}

TEST(no_passcred_no_credentials)
{
	child_sends_to_master(_metadata, JOB_SEND_CREDS, false);
}

TEST(passcred_from_master)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p;
	struct ucred me = { getpid(), getuid(), getgid() };

	bus_peer_open(_metadata, &p, m, &bus, false);
	set_passcred(_metadata, p.cfd);
	bus_send_plain(_metadata, p.afd, "hello");
	expect_msg_creds(_metadata, p.cfd, "hello", &me);
	bus_peer_close(&p);
	close(m);
}

TEST(passcred_multicast_each_recipient)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct bus_peer p[2];
	struct ucred unused, want;
	struct child ch;
	int a, i;

	for (i = 0; i < 2; i++) {
		bus_peer_open(_metadata, &p[i], m, &bus, true);
		set_passcred(_metadata, p[i].cfd);
	}
	child_start(_metadata, &ch, &bus, JOB_MULTICAST, &unused);
	a = bus_accept(_metadata, m);
	bus_join(_metadata, a);
	child_run_job(_metadata, &ch);
	want = (struct ucred){ ch.pid, CHILD_UID, CHILD_GID };
	for (i = 0; i < 2; i++)
		expect_msg_creds(_metadata, p[i].cfd, "hello", &want);
	bus_expect_quiet(_metadata, p, 2);
	bus_expect_none(_metadata, a);
	child_finish(_metadata, &ch);
	close(a);
	bus_close_peers(&m, p, 2);
}

TEST_HARNESS_MAIN
