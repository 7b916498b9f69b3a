// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS file descriptor passing (SCM_RIGHTS): unicast in every direction
 * and multicast, each recipient with its own new descriptors; several
 * descriptors and credentials in one message; MSG_PEEK; short and missing
 * control buffers (MSG_CTRUNC, files closed); EBADF, EINVAL (more than
 * SCM_MAX_FD) and ETOOMANYREFS, after which nobody got anything; and the
 * garbage collector of unreachable cycles of AF_BUS sockets, with the
 * socket counts of /proc back at their baseline afterwards, and sockets
 * that are still reachable left alone.
 *
 * A passed pipe write end shows which file a descriptor is: fstat() gives
 * the same inode, data written through it arrives at the read end, and
 * the read end sees EOF only once every copy, the kernel's included, is
 * closed.
 */
#include "af_bus_test.h"
#include "af_bus_counts.h"

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* SCM_MAX_FD: the most descriptors one SCM_RIGHTS may carry */
#define MAX_FDS		253
/* How long the tests wait for a collection to finish */
#define GC_TIMEOUT_MS	10000
/* The unprivileged child of the ETOOMANYREFS test */
#define CHILD_UID	1235
#define CHILD_GID	5321
#define CHILD_NOFILE	16

/* p[0], p[1], p[2] joined, at addresses 1, 2, 3. */
BUS_PEERS_FIXTURE(fds, 3, 3)

union ctl_buf {
	char buf[CMSG_SPACE(sizeof(int) * (MAX_FDS + 1)) +
		 CMSG_SPACE(sizeof(struct ucred))];
	struct cmsghdr align;
};

/*
 * sendmsg() of payload on fd to addr on bus (with bus NULL: without an
 * address, to the other end of the pair), with the nfds descriptors fds
 * in one SCM_RIGHTS (none if nfds is 0) and, with creds, this process'
 * credentials in an SCM_CREDENTIALS after it.
 */
static ssize_t send_fds(int fd, const struct bus_name *bus, __u64 addr,
			const char *payload, const int *fds, int nfds,
			bool creds)
{
	struct ucred uc = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
	struct iovec iov = {
		.iov_base = (void *)payload, .iov_len = strlen(payload),
	};
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	union ctl_buf ctl;
	struct bus_name d;
	struct cmsghdr *cm;
	size_t len = 0;

	memset(&ctl, 0, sizeof(ctl));
	if (bus) {
		d = bus_dest(bus, addr);
		msg.msg_name = &d.sa;
		msg.msg_namelen = d.len;
	}
	if (nfds)
		len += CMSG_SPACE(sizeof(int) * nfds);
	if (creds)
		len += CMSG_SPACE(sizeof(uc));
	if (len) {
		msg.msg_control = ctl.buf;
		msg.msg_controllen = len;
	}
	cm = CMSG_FIRSTHDR(&msg);
	if (nfds) {
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
		cm = CMSG_NXTHDR(&msg, cm);
	}
	if (creds) {
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_CREDENTIALS;
		cm->cmsg_len = CMSG_LEN(sizeof(uc));
		memcpy(CMSG_DATA(cm), &uc, sizeof(uc));
	}
	return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

/* Send one descriptor, expecting the whole payload to go out. */
static void send_fd(struct __test_metadata *_metadata, int fd,
		    const struct bus_name *bus, __u64 addr,
		    const char *payload, int passed)
{
	ASSERT_EQ((ssize_t)strlen(payload),
		  send_fds(fd, bus, addr, payload, &passed, 1, false))
		TH_LOG("sendmsg with SCM_RIGHTS: %s", strerror(errno));
}

/* What one recvmsg() returned. */
struct rmsg {
	ssize_t n;
	char data[256];
	int flags;
	__u64 from;
	int fds[MAX_FDS + 1];
	int nfds;
	bool has_creds;
	struct ucred creds;
	int other_cmsgs;	/* anything but one SCM_RIGHTS and one creds */
};

/*
 * recvmsg(fd) with a control buffer of ctllen bytes (none at all if 0)
 * and flags; fills r.  A failed recvmsg() fails the test.
 */
static void recv_msg(struct __test_metadata *_metadata, int fd,
		     size_t ctllen, int flags, struct rmsg *r)
{
	union ctl_buf ctl;
	struct sockaddr_bus from;
	struct iovec iov = { .iov_base = r->data, .iov_len = sizeof(r->data) };
	struct msghdr msg = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	struct cmsghdr *cm;
	int n;

	ASSERT_GE(sizeof(ctl), ctllen);
	memset(r, 0, sizeof(*r));
	memset(&ctl, 0, sizeof(ctl));
	memset(&from, 0xa5, sizeof(from));
	if (ctllen) {
		msg.msg_control = ctl.buf;
		msg.msg_controllen = ctllen;
	}
	r->n = recvmsg(fd, &msg, flags);
	ASSERT_LE(0, r->n) TH_LOG("recvmsg: %s", strerror(errno));
	r->flags = msg.msg_flags;
	ASSERT_EQ(AF_BUS, from.sbus_family);
	r->from = from.sbus_addr.s_addr;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS && !r->nfds) {
			n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			ASSERT_GE(MAX_FDS, n);
			ASSERT_LT(0, n);
			memcpy(r->fds, CMSG_DATA(cm), n * sizeof(int));
			r->nfds = n;
		} else if (cm->cmsg_level == SOL_SOCKET &&
			   cm->cmsg_type == SCM_CREDENTIALS &&
			   cm->cmsg_len == CMSG_LEN(sizeof(struct ucred)) &&
			   !r->has_creds) {
			memcpy(&r->creds, CMSG_DATA(cm), sizeof(r->creds));
			r->has_creds = true;
		} else {
			r->other_cmsgs++;
		}
	}
}

/* Room for n descriptors and nothing else. */
#define CTL_FDS(n)	CMSG_SPACE(sizeof(int) * (n))
#define CTL_FULL	sizeof(union ctl_buf)

/*
 * Receive on fd the message payload from `from`, whole and without
 * MSG_CTRUNC, carrying exactly nfds descriptors and no credentials.
 */
static void expect_fds_msg(struct __test_metadata *_metadata, int fd,
			   __u64 from, const char *payload, int nfds,
			   struct rmsg *r)
{
	recv_msg(_metadata, fd, CTL_FULL, 0, r);
	ASSERT_EQ((ssize_t)strlen(payload), r->n);
	ASSERT_EQ(0, memcmp(r->data, payload, r->n));
	ASSERT_EQ(0, r->flags) TH_LOG("msg_flags %#x", r->flags);
	ASSERT_EQ(from, r->from);
	ASSERT_EQ(nfds, r->nfds);
	ASSERT_FALSE(r->has_creds);
	ASSERT_EQ(0, r->other_cmsgs);
}

/* a and b are different descriptors for the same file. */
static void expect_same_file(struct __test_metadata *_metadata, int a, int b)
{
	struct stat sa, sb;

	ASSERT_NE(a, b);
	ASSERT_OK(fstat(a, &sa));
	ASSERT_OK(fstat(b, &sb));
	ASSERT_EQ(sa.st_dev, sb.st_dev);
	ASSERT_EQ(sa.st_ino, sb.st_ino);
}

/* What is written through wfd arrives at the pipe read end rfd. */
static void expect_pipe_through(struct __test_metadata *_metadata, int wfd,
				int rfd, const char *s)
{
	char buf[64];

	ASSERT_EQ((ssize_t)strlen(s), write(wfd, s, strlen(s)));
	ASSERT_EQ(POLLIN, bus_poll(_metadata, rfd, POLLIN, BUS_TIMEOUT_MS));
	ASSERT_EQ((ssize_t)strlen(s), read(rfd, buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, s, strlen(s)));
}

/* Pipe read end rfd sees EOF within ms: every write end is closed. */
static void expect_pipe_eof(struct __test_metadata *_metadata, int rfd, int ms)
{
	char buf[8];

	ASSERT_NE(0, bus_poll(_metadata, rfd, POLLIN, ms) & (POLLIN | POLLHUP))
		TH_LOG("a write end of the pipe is still open");
	ASSERT_EQ(0, read(rfd, buf, sizeof(buf)));
}

/* Pipe read end rfd has neither data nor EOF: a write end is open. */
static void expect_pipe_open(struct __test_metadata *_metadata, int rfd)
{
	ASSERT_EQ(0, bus_poll(_metadata, rfd, POLLIN, 0))
		TH_LOG("the pipe has data or all its write ends are closed");
}

static void close_fds(const int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * Pass a pipe write end from sfd (to addr on bus, or with bus NULL to the
 * other end of the pair) and receive it on rfd from `from`: a new
 * descriptor for the same file, which works; once the receiver and the
 * sender closed theirs, nothing holds the file any more.
 */
static void pass_pipe(struct __test_metadata *_metadata, int sfd,
		      const struct bus_name *bus, __u64 addr,
		      int rfd, __u64 from)
{
	struct rmsg r;
	int pp[2];

	ASSERT_OK(pipe(pp));
	send_fd(_metadata, sfd, bus, addr, "fd!", pp[1]);
	expect_fds_msg(_metadata, rfd, from, "fd!", 1, &r);
	expect_same_file(_metadata, pp[1], r.fds[0]);
	expect_pipe_through(_metadata, r.fds[0], pp[0], "through");
	close(pp[1]);
	expect_pipe_open(_metadata, pp[0]);
	close(r.fds[0]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

TEST_F(fds, unicast_client_to_client)
{
	pass_pipe(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		  self->p[1].cfd, self->p[0].addr);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(fds, unicast_client_to_master)
{
	pass_pipe(_metadata, self->p[1].cfd, NULL, 0, self->p[1].afd,
		  self->p[1].addr);
	pass_pipe(_metadata, self->p[1].cfd, &self->bus, BUS_MASTER_ADDR,
		  self->p[1].afd, self->p[1].addr);
	bus_expect_quiet(_metadata, self->p, 3);
}

TEST_F(fds, unicast_master_to_client)
{
	pass_pipe(_metadata, self->p[2].afd, NULL, 0, self->p[2].cfd,
		  BUS_MASTER_ADDR);
	pass_pipe(_metadata, self->p[2].afd, &self->bus, self->p[0].addr,
		  self->p[0].cfd, BUS_MASTER_ADDR);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Each of the three clients, the sender included, gets its own fd. */
TEST_F(fds, multicast_each_recipient_own_descriptor)
{
	struct rmsg r[3];
	int pp[2], i, j;

	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0), "all",
		pp[1]);
	for (i = 0; i < 3; i++) {
		expect_fds_msg(_metadata, self->p[i].cfd, self->p[0].addr,
			       "all", 1, &r[i]);
		expect_same_file(_metadata, pp[1], r[i].fds[0]);
		for (j = 0; j < i; j++)
			ASSERT_NE(r[j].fds[0], r[i].fds[0]);
	}
	bus_expect_quiet(_metadata, self->p, 3);
	expect_pipe_through(_metadata, r[0].fds[0], pp[0], "zero");
	expect_pipe_through(_metadata, r[1].fds[0], pp[0], "one");
	expect_pipe_through(_metadata, r[2].fds[0], pp[0], "two");
	close(pp[1]);
	for (i = 0; i < 3; i++) {
		expect_pipe_open(_metadata, pp[0]);
		close(r[i].fds[0]);
	}
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/* The master multicasts on prefix 1 to the two clients with an address. */
TEST_F(fds, multicast_from_master)
{
	struct rmsg r0, r2;
	int pp[2];

	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR, bus_mkaddr(1, 5)));
	ASSERT_OK(bus_addr_opt(self->p[2].afd, BUS_ADD_ADDR, bus_mkaddr(1, 6)));
	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[1].afd, &self->bus, bus_mcast(1), "m",
		pp[1]);
	expect_fds_msg(_metadata, self->p[0].cfd, BUS_MASTER_ADDR, "m", 1, &r0);
	expect_fds_msg(_metadata, self->p[2].cfd, BUS_MASTER_ADDR, "m", 1, &r2);
	bus_expect_quiet(_metadata, self->p, 3);
	expect_same_file(_metadata, pp[1], r0.fds[0]);
	expect_same_file(_metadata, pp[1], r2.fds[0]);
	ASSERT_NE(r0.fds[0], r2.fds[0]);
	close(pp[1]);
	close(r0.fds[0]);
	expect_pipe_open(_metadata, pp[0]);
	close(r2.fds[0]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/* Three pipes' write ends in one message arrive in order. */
TEST_F(fds, several_descriptors_in_order)
{
	int pr[3], pw[3], pp[2], i;
	struct rmsg r;

	for (i = 0; i < 3; i++) {
		ASSERT_OK(pipe(pp));
		pr[i] = pp[0];
		pw[i] = pp[1];
	}
	ASSERT_EQ(5, send_fds(self->p[0].cfd, &self->bus, self->p[1].addr,
			      "three", pw, 3, false));
	expect_fds_msg(_metadata, self->p[1].cfd, self->p[0].addr, "three", 3,
		       &r);
	for (i = 0; i < 3; i++) {
		expect_same_file(_metadata, pw[i], r.fds[i]);
		expect_pipe_through(_metadata, r.fds[i], pr[i], "x");
	}
	close_fds(pw, 3);
	close_fds(r.fds, 3);
	for (i = 0; i < 3; i++)
		expect_pipe_eof(_metadata, pr[i], BUS_TIMEOUT_MS);
	close_fds(pr, 3);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* SCM_RIGHTS and SCM_CREDENTIALS in one message: both arrive. */
TEST_F(fds, descriptors_with_credentials)
{
	int one = 1, pp[2];
	struct rmsg r;

	ASSERT_OK(setsockopt(self->p[1].cfd, SOL_SOCKET, SO_PASSCRED, &one,
			     sizeof(one)));
	ASSERT_OK(pipe(pp));
	ASSERT_EQ(4, send_fds(self->p[0].cfd, &self->bus, self->p[1].addr,
			      "both", &pp[1], 1, true));
	recv_msg(_metadata, self->p[1].cfd, CTL_FULL, 0, &r);
	ASSERT_EQ(4, r.n);
	ASSERT_EQ(0, memcmp(r.data, "both", 4));
	ASSERT_EQ(0, r.flags);
	ASSERT_EQ(1, r.nfds);
	ASSERT_TRUE(r.has_creds);
	ASSERT_EQ(0, r.other_cmsgs);
	ASSERT_EQ(getpid(), r.creds.pid);
	ASSERT_EQ(getuid(), r.creds.uid);
	ASSERT_EQ(getgid(), r.creds.gid);
	expect_same_file(_metadata, pp[1], r.fds[0]);
	expect_pipe_through(_metadata, r.fds[0], pp[0], "c");
	close(r.fds[0]);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Each MSG_PEEK installs new descriptors; the message stays queued. */
TEST_F(fds, peek_gives_new_descriptors)
{
	struct rmsg r1, r2, r3;
	int pp[2];

	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr, "pk",
		pp[1]);
	recv_msg(_metadata, self->p[1].cfd, CTL_FULL, MSG_PEEK, &r1);
	recv_msg(_metadata, self->p[1].cfd, CTL_FULL, MSG_PEEK, &r2);
	expect_fds_msg(_metadata, self->p[1].cfd, self->p[0].addr, "pk", 1,
		       &r3);
	bus_expect_none(_metadata, self->p[1].cfd);
	ASSERT_EQ(2, r1.n);
	ASSERT_EQ(2, r2.n);
	ASSERT_EQ(0, memcmp(r1.data, "pk", 2));
	ASSERT_EQ(0, memcmp(r2.data, "pk", 2));
	ASSERT_EQ(0, r1.flags);
	ASSERT_EQ(0, r2.flags);
	ASSERT_EQ(1, r1.nfds);
	ASSERT_EQ(1, r2.nfds);
	expect_same_file(_metadata, pp[1], r1.fds[0]);
	expect_same_file(_metadata, pp[1], r2.fds[0]);
	expect_same_file(_metadata, pp[1], r3.fds[0]);
	ASSERT_NE(r1.fds[0], r2.fds[0]);
	ASSERT_NE(r1.fds[0], r3.fds[0]);
	ASSERT_NE(r2.fds[0], r3.fds[0]);
	close(pp[1]);
	close(r1.fds[0]);
	close(r2.fds[0]);
	expect_pipe_open(_metadata, pp[0]);
	close(r3.fds[0]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/*
 * A control buffer with room for two of three descriptors: the first two
 * are installed, MSG_CTRUNC is set, and the third file is closed.
 */
TEST_F(fds, short_control_buffer_installs_what_fits)
{
	int pr[3], pw[3], pp[2], i;
	struct rmsg r;

	for (i = 0; i < 3; i++) {
		ASSERT_OK(pipe(pp));
		pr[i] = pp[0];
		pw[i] = pp[1];
	}
	ASSERT_EQ(3, send_fds(self->p[0].cfd, &self->bus, self->p[1].addr,
			      "cut", pw, 3, false));
	close_fds(pw, 3);
	for (i = 0; i < 3; i++)
		expect_pipe_open(_metadata, pr[i]);
	recv_msg(_metadata, self->p[1].cfd, CTL_FDS(2), 0, &r);
	ASSERT_EQ(3, r.n);
	ASSERT_EQ(0, memcmp(r.data, "cut", 3));
	ASSERT_EQ(MSG_CTRUNC, r.flags);
	ASSERT_EQ(self->p[0].addr, r.from);
	ASSERT_EQ(2, r.nfds);
	ASSERT_EQ(0, r.other_cmsgs);
	expect_pipe_eof(_metadata, pr[2], BUS_TIMEOUT_MS);
	for (i = 0; i < 2; i++) {
		expect_pipe_through(_metadata, r.fds[i], pr[i], "ok");
		close(r.fds[i]);
		expect_pipe_eof(_metadata, pr[i], BUS_TIMEOUT_MS);
	}
	close_fds(pr, 3);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* No control buffer at all: MSG_CTRUNC, and the passed file is closed. */
TEST_F(fds, no_control_buffer_closes_files)
{
	struct rmsg r;
	int pp[2];

	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr, "nil",
		pp[1]);
	close(pp[1]);
	/* the queued message holds the write end */
	expect_pipe_open(_metadata, pp[0]);
	recv_msg(_metadata, self->p[1].cfd, 0, 0, &r);
	ASSERT_EQ(3, r.n);
	ASSERT_EQ(0, memcmp(r.data, "nil", 3));
	ASSERT_EQ(MSG_CTRUNC, r.flags);
	ASSERT_EQ(0, r.nfds);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* A message that is never read holds its file until its receiver closes. */
TEST_F(fds, unread_files_closed_with_receiver)
{
	int pp[2];

	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[0].cfd, &self->bus, bus_mcast(0), "drop",
		pp[1]);
	close(pp[1]);
	close(self->p[0].cfd);
	close(self->p[1].cfd);
	self->p[0].cfd = self->p[1].cfd = -1;
	expect_pipe_open(_metadata, pp[0]);
	close(self->p[2].cfd);
	self->p[2].cfd = -1;
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/*
 * A descriptor that is not open fails with EBADF, alone or after a good
 * one, on unicast and multicast; nobody gets anything and the good file
 * is not held.
 */
TEST_F(fds, closed_descriptor_ebadf)
{
	int pp[2], fds[2];

	ASSERT_OK(pipe(pp));
	fds[0] = pp[1];
	fds[1] = dup(pp[1]);
	ASSERT_LE(0, fds[1]);
	close(fds[1]);
	ASSERT_ERRNO(EBADF, send_fds(self->p[0].cfd, &self->bus,
				     self->p[1].addr, "bad", &fds[1], 1,
				     false));
	ASSERT_ERRNO(EBADF, send_fds(self->p[0].cfd, &self->bus,
				     self->p[1].addr, "bad", fds, 2, false));
	ASSERT_ERRNO(EBADF, send_fds(self->p[0].cfd, &self->bus, bus_mcast(0),
				     "bad", fds, 2, false));
	ASSERT_ERRNO(EBADF, send_fds(self->p[0].cfd, NULL, 0, "bad", fds, 2,
				     false));
	ASSERT_ERRNO(EBADF, send_fds(self->p[0].afd, NULL, 0, "bad", fds, 2,
				     false));
	bus_expect_quiet(_metadata, self->p, 3);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/* Let this process open well over MAX_FDS descriptors. */
static void raise_nofile(struct __test_metadata *_metadata)
{
	struct rlimit rl;

	ASSERT_OK(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < 4 * MAX_FDS) {
		rl.rlim_cur = 4 * MAX_FDS;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		ASSERT_OK(setrlimit(RLIMIT_NOFILE, &rl));
	}
}

/*
 * SCM_MAX_FD descriptors go through on unicast and multicast; one more
 * fails with EINVAL and nobody gets anything.
 */
TEST_F(fds, scm_max_fd_limit)
{
	int fds[MAX_FDS + 1], pp[2], i, j;
	struct rmsg r;

	raise_nofile(_metadata);
	ASSERT_OK(pipe(pp));
	for (i = 0; i <= MAX_FDS; i++)
		fds[i] = pp[1];
	ASSERT_ERRNO(EINVAL, send_fds(self->p[0].cfd, &self->bus,
				      self->p[1].addr, "many", fds,
				      MAX_FDS + 1, false));
	ASSERT_ERRNO(EINVAL, send_fds(self->p[0].cfd, &self->bus,
				      bus_mcast(0), "many", fds, MAX_FDS + 1,
				      false));
	bus_expect_quiet(_metadata, self->p, 3);

	ASSERT_EQ(3, send_fds(self->p[0].cfd, &self->bus, self->p[1].addr,
			      "max", fds, MAX_FDS, false));
	ASSERT_EQ(3, send_fds(self->p[0].cfd, &self->bus, bus_mcast(0),
			      "max", fds, MAX_FDS, false));
	expect_fds_msg(_metadata, self->p[1].cfd, self->p[0].addr, "max",
		       MAX_FDS, &r);
	for (i = 0; i < MAX_FDS; i++)
		expect_same_file(_metadata, pp[1], r.fds[i]);
	close_fds(r.fds, MAX_FDS);
	for (j = 0; j < 3; j++) {
		expect_fds_msg(_metadata, self->p[j].cfd, self->p[0].addr,
			       "max", MAX_FDS, &r);
		expect_same_file(_metadata, pp[1], r.fds[MAX_FDS - 1]);
		close_fds(r.fds, MAX_FDS);
	}
	bus_expect_quiet(_metadata, self->p, 3);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/* What the ETOOMANYREFS child reports after each round of sends. */
struct child_round {
	int sent;	/* messages that went out before the first failure */
	int err;	/* errno of that failure, 0 if none failed */
};

/*
 * Send one pipe descriptor per message on fd to the master until a send
 * fails or max went out.
 */
static struct child_round child_send_until_error(int fd, int passed, int max)
{
	struct child_round cr = { 0, 0 };

	while (cr.sent < max) {
		if (send_fds(fd, NULL, 0, "r", &passed, 1, false) != 1) {
			cr.err = errno;
			break;
		}
		cr.sent++;
	}
	return cr;
}

/*
 * The child: with RLIMIT_NOFILE CHILD_NOFILE and no privilege, connect
 * to bus, send until ETOOMANYREFS and report; on "go" (the parent read
 * one message) send again until an error, and report again.
 */
static int etoomanyrefs_child(const struct bus_name *bus, int go, int report)
{
	struct rlimit rl = { CHILD_NOFILE, CHILD_NOFILE };
	struct timeval tv = { .tv_sec = 2 };
	struct child_round cr;
	int fd, pp[2];
	char b;

	if (pipe(pp))
		return 10;
	if (setrlimit(RLIMIT_NOFILE, &rl) || setgroups(0, NULL) ||
	    setgid(CHILD_GID) || setuid(CHILD_UID))
		return 11;
	fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (const struct sockaddr *)&bus->sa, bus->len))
		return 12;
	cr = child_send_until_error(fd, pp[1], 4 * CHILD_NOFILE);
	if (write(report, &cr, sizeof(cr)) != sizeof(cr))
		return 13;
	if (read(go, &b, 1) != 1)
		return 14;
	cr = child_send_until_error(fd, pp[1], 4 * CHILD_NOFILE);
	if (write(report, &cr, sizeof(cr)) != sizeof(cr))
		return 15;
	while (read(go, &b, 1) > 0)
		;
	return 0;
}

static void read_round(struct __test_metadata *_metadata, int report,
		       struct child_round *cr)
{
	ASSERT_EQ(POLLIN, bus_poll(_metadata, report, POLLIN, 4 * BUS_TIMEOUT_MS)
			  & POLLIN) TH_LOG("the child did not report");
	ASSERT_EQ((ssize_t)sizeof(*cr), read(report, cr, sizeof(*cr)));
}

/*
 * An unprivileged user with RLIMIT_NOFILE N gets ETOOMANYREFS once more
 * than N of its files are in flight: with one descriptor per message, as
 * on AF_UNIX, the check is made before the message's own files count, so
 * N + 1 messages go out and the next fails.  Reading one lets one more
 * go out.  Failed sends deliver nothing.
 */
TEST(etoomanyrefs_until_read)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int go[2], report[2], a, i, status;
	struct child_round cr;
	struct rmsg r;
	pid_t pid;

	ASSERT_OK(pipe(go));
	ASSERT_OK(pipe(report));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		_exit(etoomanyrefs_child(&bus, go[0], report[1]));
	}
	close(go[0]);
	close(report[1]);

	/* its messages wait on its accepted socket until it is accepted */
	read_round(_metadata, report[0], &cr);
	a = bus_accept(_metadata, m);
	EXPECT_EQ(ETOOMANYREFS, cr.err) TH_LOG("first failure: %s",
					       strerror(cr.err));
	EXPECT_EQ(CHILD_NOFILE + 1, cr.sent);

	expect_fds_msg(_metadata, a, 1, "r", 1, &r);
	close(r.fds[0]);
	ASSERT_EQ(1, write(go[1], "g", 1));
	read_round(_metadata, report[0], &cr);
	EXPECT_EQ(ETOOMANYREFS, cr.err) TH_LOG("second failure: %s",
					       strerror(cr.err));
	EXPECT_EQ(1, cr.sent);

	for (i = 0; i < CHILD_NOFILE + 1; i++) {
		expect_fds_msg(_metadata, a, 1, "r", 1, &r);
		close(r.fds[0]);
	}
	bus_expect_none(_metadata, a);

	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(report[0]);
	close(a);
	close(m);
}

/*
 * With SO_PASSCRED, a control buffer too short for SCM_CREDENTIALS gives
 * MSG_CTRUNC and the whole payload; one just long enough gives the
 * credentials without it; none at all behaves as AF_UNIX does.
 */
TEST_F(fds, credentials_short_control_buffer_ctrunc)
{
	int one = 1, sp[2], unix_flags;
	struct rmsg r;
	char b;

	ASSERT_OK(setsockopt(self->p[1].cfd, SOL_SOCKET, SO_PASSCRED, &one,
			     sizeof(one)));
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "short");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "exact");
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "none");

	recv_msg(_metadata, self->p[1].cfd, sizeof(struct cmsghdr) + 4, 0, &r);
	ASSERT_EQ(5, r.n);
	ASSERT_EQ(0, memcmp(r.data, "short", 5));
	ASSERT_EQ(MSG_CTRUNC, r.flags);
	ASSERT_FALSE(r.has_creds);

	recv_msg(_metadata, self->p[1].cfd, CMSG_SPACE(sizeof(struct ucred)),
		 0, &r);
	ASSERT_EQ(5, r.n);
	ASSERT_EQ(0, memcmp(r.data, "exact", 5));
	ASSERT_EQ(0, r.flags);
	ASSERT_TRUE(r.has_creds);
	ASSERT_EQ(getpid(), r.creds.pid);

	/* the reference: the same on an AF_UNIX seqpacket pair */
	ASSERT_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp));
	ASSERT_OK(setsockopt(sp[1], SOL_SOCKET, SO_PASSCRED, &one,
			     sizeof(one)));
	ASSERT_EQ(1, send(sp[0], "u", 1, 0));
	{
		struct iovec iov = { .iov_base = &b, .iov_len = 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

		ASSERT_EQ(1, recvmsg(sp[1], &msg, 0));
		unix_flags = msg.msg_flags;
	}
	close(sp[0]);
	close(sp[1]);
	recv_msg(_metadata, self->p[1].cfd, 0, 0, &r);
	ASSERT_EQ(4, r.n);
	ASSERT_EQ(0, memcmp(r.data, "none", 4));
	ASSERT_EQ(unix_flags, r.flags);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* Descriptors and credentials, room for the credentials only. */
TEST_F(fds, credentials_fit_descriptors_do_not)
{
	int one = 1, pp[2];
	struct rmsg r;

	ASSERT_OK(setsockopt(self->p[1].cfd, SOL_SOCKET, SO_PASSCRED, &one,
			     sizeof(one)));
	ASSERT_OK(pipe(pp));
	send_fd(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr, "cr",
		pp[1]);
	close(pp[1]);
	recv_msg(_metadata, self->p[1].cfd, CMSG_SPACE(sizeof(struct ucred)),
		 0, &r);
	ASSERT_EQ(2, r.n);
	ASSERT_EQ(MSG_CTRUNC, r.flags);
	ASSERT_TRUE(r.has_creds);
	ASSERT_EQ(0, r.nfds);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/* ---------------------------------------------------------------------
 * Garbage collection
 */

/* What the kernel holds for AF_BUS (af_bus_counts.h), all readable. */
static struct bus_counts baseline(struct __test_metadata *_metadata)
{
	struct bus_counts c = bus_counts_now();

	ASSERT_LE(0, c.bus_socks) TH_LOG("no AF_BUS in /proc/net/protocols");
	ASSERT_LE(0, c.sockets) TH_LOG("no sockets: used in /proc/net/sockstat");
	ASSERT_LE(0, c.bus_lines) TH_LOG("no /proc/net/bus");
	ASSERT_LE(0, c.bus_slab)
		TH_LOG("no AF_BUS slab (" BUS_SLAB_DIR ", /proc/slabinfo)");
	return c;
}

/*
 * Wait (at most GC_TIMEOUT_MS) for the counts to be base plus delta
 * sockets.
 */
static void wait_counts(struct __test_metadata *_metadata,
			const struct bus_counts *base, long delta)
{
	struct bus_counts want = *base, c;
	struct timespec start;

	want.bus_socks += delta;
	want.sockets += delta;
	want.bus_lines += delta;
	want.bus_slab += delta;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		c = bus_counts_now();
		if (bus_counts_equal(&c, &want) ||
		    bus_elapsed_ms(&start) > GC_TIMEOUT_MS)
			break;
		usleep(10000);
	}
	EXPECT_EQ(want.bus_socks, c.bus_socks) TH_LOG("/proc/net/protocols AF_BUS sockets");
	EXPECT_EQ(want.sockets, c.sockets) TH_LOG("/proc/net/sockstat sockets: used");
	EXPECT_EQ(want.bus_lines, c.bus_lines) TH_LOG("/proc/net/bus lines");
	EXPECT_EQ(want.bus_slab, c.bus_slab) TH_LOG("AF_BUS slab objects");
}

/* Run a collection the documented way: release an AF_BUS socket. */
static void trigger_gc(struct __test_metadata *_metadata)
{
	int fd = socket(AF_BUS, SOCK_SEQPACKET, 0);

	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * The client of accepted socket afd is gone: afd reads end of file
 * (within GC_TIMEOUT_MS), after what the client sent it.
 */
static void expect_client_gone(struct __test_metadata *_metadata, int afd)
{
	char b;

	bus_set_timeouts(_metadata, afd, GC_TIMEOUT_MS);
	ASSERT_EQ(0, recv(afd, &b, 1, 0))
		TH_LOG("the client is still there: %s", strerror(errno));
}

/* The client of afd is still connected: nothing to read, no EOF. */
static void expect_client_alive(struct __test_metadata *_metadata, int afd)
{
	bus_expect_none(_metadata, afd);
}

/* A master on a fresh abstract bus and n joined peers, as in the fixture. */
static void open_bus(struct __test_metadata *_metadata, struct bus_name *bus,
		     int *m, struct bus_peer *p, int n)
{
	bus_open_peers(_metadata, bus, m, p, n, n);
}

/* Close the client ends of the peers, keeping the accepted sockets. */
static void close_clients(struct bus_peer *p, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		close(p[i].cfd);
		p[i].cfd = -1;
	}
}

/* (a) A client sends its own socket to itself and closes it. */
TEST(gc_socket_sent_to_itself)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_name bus;
	struct bus_peer p[1];
	int m;

	open_bus(_metadata, &bus, &m, p, 1);
	send_fd(_metadata, p[0].cfd, &bus, p[0].addr, "me", p[0].cfd);
	close_clients(p, 1);
	expect_client_alive(_metadata, p[0].afd);
	wait_counts(_metadata, &base, 3);	/* nothing collected yet */
	trigger_gc(_metadata);
	expect_client_gone(_metadata, p[0].afd);
	wait_counts(_metadata, &base, 2);	/* master, accepted socket */
	bus_close_peers(&m, p, 1);
	wait_counts(_metadata, &base, 0);
}

/* (b) Two clients of one bus hold each other in messages. */
TEST(gc_loop_between_two_clients)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_name bus;
	struct bus_peer p[2];
	int m;

	open_bus(_metadata, &bus, &m, p, 2);
	send_fd(_metadata, p[0].cfd, &bus, p[1].addr, "a", p[0].cfd);
	send_fd(_metadata, p[1].cfd, &bus, p[0].addr, "b", p[1].cfd);
	close_clients(p, 2);
	trigger_gc(_metadata);
	expect_client_gone(_metadata, p[0].afd);
	expect_client_gone(_metadata, p[1].afd);
	wait_counts(_metadata, &base, 3);
	bus_close_peers(&m, p, 2);
	wait_counts(_metadata, &base, 0);
}

/* (c) The same loop through clients of two buses. */
TEST(gc_loop_across_two_buses)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_name bus1, bus2;
	struct bus_peer p1[1], p2[1];
	int m1, m2;

	open_bus(_metadata, &bus1, &m1, p1, 1);
	open_bus(_metadata, &bus2, &m2, p2, 1);
	/* each sends to itself the other bus' client */
	send_fd(_metadata, p1[0].cfd, &bus1, p1[0].addr, "1", p2[0].cfd);
	send_fd(_metadata, p2[0].cfd, &bus2, p2[0].addr, "2", p1[0].cfd);
	close_clients(p1, 1);
	close_clients(p2, 1);
	trigger_gc(_metadata);
	expect_client_gone(_metadata, p1[0].afd);
	expect_client_gone(_metadata, p2[0].afd);
	wait_counts(_metadata, &base, 4);
	bus_close_peers(&m1, p1, 1);
	bus_close_peers(&m2, p2, 1);
	wait_counts(_metadata, &base, 0);
}

/* The abstract name of bus is free: a new master can bind it. */
static void expect_name_free(struct __test_metadata *_metadata,
			     const struct bus_name *bus)
{
	int fd = bus_socket(_metadata, BUS_PROTO_NONE);

	ASSERT_OK(bus_bind_name(fd, bus));
	close(fd);
}

/*
 * (c') Two masters hold each other, each in a message that a client not
 * yet accepted sent to the other bus' master.
 */
TEST(gc_loop_between_two_masters)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_name bus1 = bus_name_abstract(), bus2 = bus_name_abstract();
	int m1 = bus_master(_metadata, &bus1), m2 = bus_master(_metadata, &bus2);
	int c1 = bus_connect(_metadata, &bus1), c2 = bus_connect(_metadata, &bus2);

	send_fd(_metadata, c1, NULL, 0, "m2", m2);
	send_fd(_metadata, c2, NULL, 0, "m1", m1);
	close(m1);
	close(m2);
	close(c1);
	close(c2);
	trigger_gc(_metadata);
	wait_counts(_metadata, &base, 0);
	expect_name_free(_metadata, &bus1);
	expect_name_free(_metadata, &bus2);
}

/*
 * (d) A master's listening socket in a message from a connection it has
 * not accepted yet, queued to that connection's accepted socket.
 */
TEST(gc_master_in_unaccepted_connection)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	int c = bus_connect(_metadata, &bus);

	send_fd(_metadata, c, NULL, 0, "master", m);
	close(m);
	/* the client stays: when the master goes, the bus dies */
	bus_expect_none(_metadata, c);
	trigger_gc(_metadata);
	bus_set_timeouts(_metadata, c, GC_TIMEOUT_MS);
	/* the collection ended the bus: the connection was reset */
	{
		char b;

		ASSERT_ERRNO(ECONNRESET, recv(c, &b, 1, 0));
	}
	expect_name_free(_metadata, &bus);
	close(c);
	wait_counts(_metadata, &base, 0);
}

/* (e) 100 clients, each holding itself, collected at once. */
#define MANY	100

TEST(gc_many_cycles)
{
	struct bus_counts base = baseline(_metadata);
	static struct bus_peer p[MANY];
	struct bus_name bus;
	int m, i;

	raise_nofile(_metadata);
	open_bus(_metadata, &bus, &m, p, MANY);
	/* half hold themselves, half are in a ring */
	for (i = 0; i < MANY / 2; i++)
		send_fd(_metadata, p[i].cfd, &bus, p[i].addr, "self",
			p[i].cfd);
	for (i = MANY / 2; i < MANY; i++)
		send_fd(_metadata, p[i].cfd, &bus,
			p[i + 1 < MANY ? i + 1 : MANY / 2].addr, "ring",
			p[i].cfd);
	close_clients(p, MANY);
	wait_counts(_metadata, &base, 1 + 2 * MANY);
	trigger_gc(_metadata);
	for (i = 0; i < MANY; i++)
		expect_client_gone(_metadata, p[i].afd);
	wait_counts(_metadata, &base, 1 + MANY);
	bus_close_peers(&m, p, MANY);
	wait_counts(_metadata, &base, 0);
}

/*
 * Make a self-cycle on a client of bus (master m) and run a collection;
 * returns once it was collected, which proves that a collection ran after
 * everything the caller set up before.  Returns its accepted socket.
 */
static int collected_witness(struct __test_metadata *_metadata,
			     const struct bus_name *bus, int m)
{
	struct bus_peer w;

	bus_peer_open(_metadata, &w, m, bus, true);
	send_fd(_metadata, w.cfd, bus, w.addr, "w", w.cfd);
	close(w.cfd);
	trigger_gc(_metadata);
	expect_client_gone(_metadata, w.afd);
	return w.afd;
}

/*
 * A client socket passed to a live client and closed by its sender is
 * not collected: after a collection, the receiver gets it and it works.
 */
TEST_F(fds, gc_keeps_socket_in_live_message)
{
	struct bus_peer c;
	struct rmsg r;
	int w;

	bus_peer_open(_metadata, &c, self->m, &self->bus, true);
	send_fd(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		"sock", c.cfd);
	close(c.cfd);
	c.cfd = -1;
	w = collected_witness(_metadata, &self->bus, self->m);
	expect_client_alive(_metadata, c.afd);

	expect_fds_msg(_metadata, self->p[1].cfd, self->p[0].addr, "sock", 1,
		       &r);
	c.cfd = r.fds[0];
	ASSERT_EQ(c.addr, bus_local_addr(_metadata, c.cfd));
	bus_send_str(_metadata, c.cfd, &self->bus, self->p[2].addr, "alive");
	bus_expect(_metadata, self->p[2].cfd, &self->bus, c.addr, "alive");
	bus_send_str(_metadata, self->p[2].cfd, &self->bus, c.addr, "back");
	bus_expect(_metadata, c.cfd, &self->bus, self->p[2].addr, "back");
	bus_expect_quiet(_metadata, self->p, 3);
	bus_peer_close(&c);
	close(w);
}

/*
 * A loop of two clients that a live client can still reach is not
 * collected: p[0] holds a message carrying a, a holds one carrying b, b
 * holds one carrying a.  After a collection, p[0] reads a, a reads b, b
 * reads a again, and both work.
 */
TEST_F(fds, gc_keeps_cycle_reachable_from_live_socket)
{
	struct bus_peer a, b;
	struct rmsg r;
	int w, a2, b2, a3;

	bus_peer_open(_metadata, &a, self->m, &self->bus, true);
	bus_peer_open(_metadata, &b, self->m, &self->bus, true);
	send_fd(_metadata, a.cfd, &self->bus, b.addr, "a", a.cfd);
	send_fd(_metadata, b.cfd, &self->bus, a.addr, "b", b.cfd);
	send_fd(_metadata, a.cfd, &self->bus, self->p[0].addr, "root", a.cfd);
	close(a.cfd);
	close(b.cfd);
	a.cfd = b.cfd = -1;
	w = collected_witness(_metadata, &self->bus, self->m);
	expect_client_alive(_metadata, a.afd);
	expect_client_alive(_metadata, b.afd);

	expect_fds_msg(_metadata, self->p[0].cfd, a.addr, "root", 1, &r);
	a2 = r.fds[0];
	expect_fds_msg(_metadata, a2, b.addr, "b", 1, &r);
	b2 = r.fds[0];
	expect_fds_msg(_metadata, b2, a.addr, "a", 1, &r);
	a3 = r.fds[0];
	expect_same_file(_metadata, a2, a3);
	bus_send_str(_metadata, a2, &self->bus, b.addr, "a->b");
	bus_expect(_metadata, b2, &self->bus, a.addr, "a->b");
	bus_send_str(_metadata, b2, &self->bus, a.addr, "b->a");
	bus_expect(_metadata, a3, &self->bus, b.addr, "b->a");
	close(a3);
	bus_expect_quiet(_metadata, self->p, 3);
	a.cfd = a2;
	b.cfd = b2;
	bus_peer_close(&a);
	bus_peer_close(&b);
	close(w);
}

TEST_HARNESS_MAIN
