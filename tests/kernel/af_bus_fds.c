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
 *
 * Since AF_UNIX refuses to pass AF_BUS sockets (EOPNOTSUPP, nothing
 * sent; AF_UNIX sockets still travel over AF_BUS), no cycle can go through
 * both families: an unprivileged process that tries 100 times leaves no
 * socket and no file in flight behind.  Every copy of a multicast with
 * files counts against the sender's RLIMIT_NOFILE, checked before each
 * copy is made (exact thresholds for an unprivileged sender; root is
 * exempt).
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
	ASSERT_LE(0, c.sockets)
		TH_LOG("no sockets: used in /proc/net/sockstat");
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
 * (f) Each of 8 clients holds itself in the first message queued to it,
 * behind which it sent itself as many messages as its receive buffer
 * takes. Freeing that first message puts the last reference to the
 * client's file, which is released from another thread, while the
 * collector still frees the messages behind it: their receive buffer
 * charge must not outlive the socket (on a KASAN kernel, the guest's
 * kernel log check catches a use after free).
 */
#define BEHIND_PEERS	8

TEST(gc_messages_queued_behind_the_cycle)
{
	struct bus_counts base = baseline(_metadata);
	struct bus_peer p[BEHIND_PEERS];
	struct bus_name bus;
	int m, i, n;

	open_bus(_metadata, &bus, &m, p, BEHIND_PEERS);
	for (i = 0; i < BEHIND_PEERS; i++) {
		send_fd(_metadata, p[i].cfd, &bus, p[i].addr, "self", p[i].cfd);
		for (n = 0; n < 1000; n++)
			if (bus_sendto(p[i].cfd, &bus, p[i].addr, "behind", 6,
				       MSG_DONTWAIT) != 6)
				break;
		ASSERT_EQ(EAGAIN, errno) TH_LOG("message %d behind", n);
		ASSERT_LE(100, n) TH_LOG("only %d messages fit behind", n);
	}
	close_clients(p, BEHIND_PEERS);
	trigger_gc(_metadata);
	for (i = 0; i < BEHIND_PEERS; i++)
		expect_client_gone(_metadata, p[i].afd);
	wait_counts(_metadata, &base, 1 + BEHIND_PEERS);
	bus_close_peers(&m, p, BEHIND_PEERS);
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

/* ---------------------------------------------------------------------
 * AF_UNIX refuses to pass AF_BUS sockets (af_bus.rst, "Passing files"):
 * sendmsg() on an AF_UNIX socket with an AF_BUS socket among its
 * SCM_RIGHTS fails with EOPNOTSUPP and nothing is sent, so that no cycle
 * goes through both families' garbage collectors; AF_UNIX sockets still
 * travel in AF_BUS messages, and other files over AF_UNIX.
 */

static const int unix_types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
#define N_UNIX_TYPES	((int)(sizeof(unix_types) / sizeof(unix_types[0])))

static const char *unix_type_name(int type)
{
	switch (type) {
	case SOCK_STREAM:
		return "SOCK_STREAM";
	case SOCK_DGRAM:
		return "SOCK_DGRAM";
	case SOCK_SEQPACKET:
		return "SOCK_SEQPACKET";
	}
	return "?";
}

/* An AF_UNIX socketpair of type, with the tests' timeouts on both ends. */
static void unix_pair(struct __test_metadata *_metadata, int type, int sp[2])
{
	ASSERT_OK(socketpair(AF_UNIX, type, 0, sp));
	bus_set_timeouts(_metadata, sp[0], BUS_TIMEOUT_MS);
	bus_set_timeouts(_metadata, sp[1], BUS_TIMEOUT_MS);
}

/* fd is a socket of this domain and type. */
static void expect_socket(struct __test_metadata *_metadata, int fd,
			  int domain, int type)
{
	int v;
	socklen_t len = sizeof(v);

	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len));
	ASSERT_EQ(domain, v);
	len = sizeof(v);
	ASSERT_OK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len));
	ASSERT_EQ(type, v);
}

/*
 * Receive on the AF_UNIX socket fd the message payload carrying exactly
 * nfds descriptors, which go to fds.
 */
static void expect_unix_fds_msg(struct __test_metadata *_metadata, int fd,
				const char *payload, int *fds, int nfds)
{
	union ctl_buf ctl;
	char buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;
	int got = 0;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	n = recvmsg(fd, &msg, 0);
	ASSERT_EQ((ssize_t)strlen(payload), n)
		TH_LOG("recvmsg: %s", strerror(errno));
	ASSERT_EQ(0, memcmp(buf, payload, n));
	ASSERT_EQ(0, msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		ASSERT_EQ(SOL_SOCKET, cm->cmsg_level);
		ASSERT_EQ(SCM_RIGHTS, cm->cmsg_type);
		ASSERT_EQ(0, got) TH_LOG("two SCM_RIGHTS");
		got = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		ASSERT_EQ(nfds, got);
		memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
	}
	ASSERT_EQ(nfds, got);
}

/* s sent on the socket wfd is what its peer rfd receives. */
static void expect_socket_through(struct __test_metadata *_metadata, int wfd,
				  int rfd, const char *s)
{
	char buf[64];

	ASSERT_EQ((ssize_t)strlen(s), send(wfd, s, strlen(s), MSG_NOSIGNAL))
		TH_LOG("send: %s", strerror(errno));
	ASSERT_EQ((ssize_t)strlen(s), recv(rfd, buf, sizeof(buf), 0))
		TH_LOG("recv: %s", strerror(errno));
	ASSERT_EQ(0, memcmp(buf, s, strlen(s)));
}

/*
 * A client, an accepted socket, a listening master and an unbound AF_BUS
 * socket, alone or with a pipe before or after it in one SCM_RIGHTS, on
 * an AF_UNIX stream, datagram and seqpacket pair: EOPNOTSUPP, nothing
 * arrives at either end, the pipe is not held, and the pair and the
 * AF_BUS sockets still work.
 */
TEST_F(fds, unix_refuses_bus_sockets)
{
	int unbound = bus_socket(_metadata, 0);
	const struct {
		const char *what;
		int fd;
	} bus[] = {
		{ "client", self->p[0].cfd },
		{ "accepted socket", self->p[0].afd },
		{ "master", self->m },
		{ "unbound socket", unbound },
	};
	int sp[2], pp[2], list[2], t, i;
	char buf[8];

	ASSERT_OK(pipe(pp));
	for (t = 0; t < N_UNIX_TYPES; t++) {
		unix_pair(_metadata, unix_types[t], sp);
		for (i = 0; i < (int)(sizeof(bus) / sizeof(bus[0])); i++) {
			ASSERT_ERRNO(EOPNOTSUPP, send_fds(sp[0], NULL, 0, "bus",
							  &bus[i].fd, 1, false))
				TH_LOG("%s over %s", bus[i].what,
				       unix_type_name(unix_types[t]));
			ASSERT_ERRNO(EOPNOTSUPP, send_fds(sp[1], NULL, 0, "bus",
							  &bus[i].fd, 1, false))
				TH_LOG("%s over %s, other end", bus[i].what,
				       unix_type_name(unix_types[t]));
			list[0] = pp[1];
			list[1] = bus[i].fd;
			ASSERT_ERRNO(EOPNOTSUPP, send_fds(sp[0], NULL, 0,
							  "pipe+bus", list, 2,
							  false))
				TH_LOG("pipe and %s over %s", bus[i].what,
				       unix_type_name(unix_types[t]));
			list[0] = bus[i].fd;
			list[1] = pp[1];
			ASSERT_ERRNO(EOPNOTSUPP, send_fds(sp[0], NULL, 0,
							  "bus+pipe", list, 2,
							  false))
				TH_LOG("%s and pipe over %s", bus[i].what,
				       unix_type_name(unix_types[t]));
			bus_expect_none(_metadata, sp[1]);
			bus_expect_none(_metadata, sp[0]);
		}
		/* the pair itself is fine */
		ASSERT_EQ(2, send(sp[0], "ok", 2, MSG_NOSIGNAL));
		ASSERT_EQ(2, recv(sp[1], buf, sizeof(buf), 0));
		ASSERT_EQ(0, memcmp(buf, "ok", 2));
		bus_expect_none(_metadata, sp[1]);
		close(sp[0]);
		close(sp[1]);
	}
	/* the refused messages hold no reference to the pipe */
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
	/* nor did they do anything to the AF_BUS sockets */
	bus_send_str(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
		     "still");
	bus_expect(_metadata, self->p[1].cfd, &self->bus, self->p[0].addr,
		   "still");
	bus_send_plain(_metadata, self->p[0].cfd, "up");
	bus_expect(_metadata, self->p[0].afd, &self->bus, self->p[0].addr,
		   "up");
	bus_expect_quiet(_metadata, self->p, 3);
	bus_expect_no_pending(_metadata, self->m);
	close(unbound);
}

/*
 * An AF_UNIX socket and a pipe, in one SCM_RIGHTS over each type of
 * AF_UNIX pair, still arrive and work.
 */
TEST(unix_still_passes_unix_sockets_and_pipes)
{
	int sp[2], u[2], pp[2], fds[2], got[2], t;

	for (t = 0; t < N_UNIX_TYPES; t++) {
		unix_pair(_metadata, unix_types[t], sp);
		unix_pair(_metadata, SOCK_SEQPACKET, u);
		ASSERT_OK(pipe(pp));
		fds[0] = u[0];
		fds[1] = pp[1];
		ASSERT_EQ(2, send_fds(sp[0], NULL, 0, "up", fds, 2, false))
			TH_LOG("over %s: %s", unix_type_name(unix_types[t]),
			       strerror(errno));
		expect_unix_fds_msg(_metadata, sp[1], "up", got, 2);
		bus_expect_none(_metadata, sp[1]);
		expect_same_file(_metadata, u[0], got[0]);
		expect_same_file(_metadata, pp[1], got[1]);
		close(u[0]);
		close(pp[1]);
		expect_socket(_metadata, got[0], AF_UNIX, SOCK_SEQPACKET);
		expect_socket_through(_metadata, got[0], u[1], "there");
		expect_socket_through(_metadata, u[1], got[0], "back");
		expect_pipe_through(_metadata, got[1], pp[0], "piped");
		close(got[1]);
		expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
		close(got[0]);
		close(u[1]);
		close(pp[0]);
		close(sp[0]);
		close(sp[1]);
	}
}

/*
 * AF_UNIX sockets of each type still travel in AF_BUS messages: unicast
 * between clients and multicast from the master.  The received socket
 * is the same file, of its domain and type, and works both ways.
 */
TEST_F(fds, unix_sockets_over_bus)
{
	struct rmsg r, rm[3];
	int u[2], t, i;

	for (t = 0; t < N_UNIX_TYPES; t++) {
		unix_pair(_metadata, unix_types[t], u);
		send_fd(_metadata, self->p[0].cfd, &self->bus, self->p[1].addr,
			"unix", u[0]);
		expect_fds_msg(_metadata, self->p[1].cfd, self->p[0].addr,
			       "unix", 1, &r);
		expect_same_file(_metadata, u[0], r.fds[0]);
		close(u[0]);
		expect_socket(_metadata, r.fds[0], AF_UNIX, unix_types[t]);
		expect_socket_through(_metadata, r.fds[0], u[1], "to peer");
		expect_socket_through(_metadata, u[1], r.fds[0], "from peer");
		close(r.fds[0]);
		close(u[1]);
	}

	unix_pair(_metadata, SOCK_DGRAM, u);
	send_fd(_metadata, self->p[2].afd, &self->bus, bus_mcast(0), "mc",
		u[0]);
	for (i = 0; i < 3; i++) {
		expect_fds_msg(_metadata, self->p[i].cfd, BUS_MASTER_ADDR,
			       "mc", 1, &rm[i]);
		expect_same_file(_metadata, u[0], rm[i].fds[0]);
	}
	close(u[0]);
	for (i = 0; i < 3; i++) {
		expect_socket(_metadata, rm[i].fds[0], AF_UNIX, SOCK_DGRAM);
		expect_socket_through(_metadata, rm[i].fds[0], u[1], "copy");
		close(rm[i].fds[0]);
	}
	bus_expect_none(_metadata, u[1]);
	close(u[1]);
	bus_expect_quiet(_metadata, self->p, 3);
}

/* The hostile case: an unprivileged process tries to make such cycles. */
#define NOBODY		65534
#define CYCLE_ROUNDS	100
/* AF_UNIX legs tried: 2 a round, 4 in the rounds of the own bus */
#define CYCLE_UNIX_TRIES	(2 * CYCLE_ROUNDS + 2 * (CYCLE_ROUNDS / 4))
/* How long the socket counts may take to come back */
#define SETTLE_MS	10000	/* polled; the debug kernel is slow */

/* What the cycle child did. */
struct cycle_report {
	int rounds;		/* rounds run to their end */
	int unix_tries;		/* AF_BUS sockets sent over AF_UNIX */
	int refused;		/* of those, failed with EOPNOTSUPP */
	int bus_sent;		/* AF_UNIX sockets sent over AF_BUS */
	int quiet;		/* AF_UNIX ends found with nothing queued */
	int bad_round;		/* the first round where something else */
	int bad_errno;		/* happened, -1 if none, and errno then */
	char bad_what[48];
};

static void cycle_bad(struct cycle_report *cr, int round, const char *what)
{
	if (cr->bad_round >= 0)
		return;
	cr->bad_round = round;
	cr->bad_errno = errno;
	snprintf(cr->bad_what, sizeof(cr->bad_what), "%s", what);
}

/* Pass the AF_BUS socket b on the AF_UNIX socket u: EOPNOTSUPP. */
static void cycle_unix_leg(struct cycle_report *cr, int round, int u, int b,
			   const char *what)
{
	cr->unix_tries++;
	errno = 0;
	if (send_fds(u, NULL, 0, "cycle", &b, 1, false) == -1 &&
	    errno == EOPNOTSUPP)
		cr->refused++;
	else
		cycle_bad(cr, round, what);
}

/*
 * Pass the AF_UNIX socket u from the AF_BUS socket fd to `to` on bus
 * (without an address if bus is NULL), as the message "r<round>".
 */
static void cycle_bus_leg(struct cycle_report *cr, int round, int fd,
			  const struct bus_name *bus, __u64 to, int u,
			  const char *what)
{
	char payload[16];
	int len = snprintf(payload, sizeof(payload), "r%d", round);

	if (send_fds(fd, bus, to, payload, &u, 1, false) == len)
		cr->bus_sent++;
	else
		cycle_bad(cr, round, what);
}

/* Nothing is queued on the AF_UNIX socket u. */
static void cycle_quiet(struct cycle_report *cr, int round, int u)
{
	char b;

	errno = 0;
	if (recv(u, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN)
		cr->quiet++;
	else
		cycle_bad(cr, round, "an AF_UNIX end got something");
}

/* Drop every privilege: uid and gid NOBODY, no groups, no capabilities. */
static bool become_nobody(void)
{
	return !setgroups(0, NULL) && !setresgid(NOBODY, NOBODY, NOBODY) &&
	       !setresuid(NOBODY, NOBODY, NOBODY) && geteuid() == NOBODY &&
	       getuid() == NOBODY;
}

/*
 * The child, as NOBODY: connect c to bus, say so on report and wait for
 * go (the master accepted and joined c).  Then CYCLE_ROUNDS times make an
 * AF_UNIX pair u of the next type and try to close a loop through both
 * families, in turn:
 *   0: u[1] into c's own queue (unicast to itself), then c into u[1]'s
 *   1: c into u[1]'s queue first, then u[1] into c's by a multicast
 *      that reaches c
 *   2: on a bus of its own, whose master m2 has a connection k pending:
 *      u[1] into k's accepted socket (a message to the master), then
 *      m2 and k into u's queues
 *   3: u[1] to the root master (on c's accepted socket), then c into u's
 * every AF_UNIX leg from both ends of u.  Everything stays open; report
 * and exit.
 */
static int cycle_child(const struct bus_name *bus, int go, int report)
{
	struct rlimit rl = { 1024, 1024 };
	struct cycle_report cr = { .bad_round = -1, .bad_errno = 0 };
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	struct bus_name own;
	int c, u[2], m2, k, i;
	char b;

	if (setrlimit(RLIMIT_NOFILE, &rl) || !become_nobody())
		return 10;
	c = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (c < 0 ||
	    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(c, (const struct sockaddr *)&bus->sa, bus->len))
		return 11;
	if (write(report, "r", 1) != 1 || read(go, &b, 1) != 1)
		return 12;
	if (getsockname(c, (struct sockaddr *)&sa, &len))
		return 13;

	for (i = 0; i < CYCLE_ROUNDS; i++) {
		if (socketpair(AF_UNIX, unix_types[i % N_UNIX_TYPES], 0, u))
			return 14;
		switch (i % 4) {
		case 0:
			cycle_bus_leg(&cr, i, c, bus, sa.sbus_addr.s_addr,
				      u[1], "u[1] to c itself");
			cycle_unix_leg(&cr, i, u[0], c, "c on u[0]");
			cycle_unix_leg(&cr, i, u[1], c, "c on u[1]");
			break;
		case 1:
			cycle_unix_leg(&cr, i, u[0], c, "c on u[0], first");
			cycle_unix_leg(&cr, i, u[1], c, "c on u[1], first");
			cycle_bus_leg(&cr, i, c, bus, bus_mcast(0), u[1],
				      "u[1] multicast to c");
			break;
		case 2:
			own = bus_name_abstract();
			m2 = socket(AF_BUS, SOCK_SEQPACKET, 0);
			k = socket(AF_BUS, SOCK_SEQPACKET, 0);
			if (m2 < 0 || k < 0 ||
			    bind(m2, (const struct sockaddr *)&own.sa,
				 own.len) ||
			    listen(m2, 8) ||
			    connect(k, (const struct sockaddr *)&own.sa,
				    own.len))
				return 15;
			cycle_bus_leg(&cr, i, k, NULL, 0, u[1],
				      "u[1] to its own master");
			cycle_unix_leg(&cr, i, u[0], m2, "own master on u[0]");
			cycle_unix_leg(&cr, i, u[0], k, "k on u[0]");
			cycle_unix_leg(&cr, i, u[1], m2, "own master on u[1]");
			cycle_unix_leg(&cr, i, u[1], k, "k on u[1]");
			break;
		case 3:
			cycle_bus_leg(&cr, i, c, NULL, 0, u[1],
				      "u[1] to the master");
			cycle_unix_leg(&cr, i, u[0], c, "c on u[0], master");
			cycle_unix_leg(&cr, i, u[1], c, "c on u[1], master");
			break;
		}
		cycle_quiet(&cr, i, u[0]);
		cycle_quiet(&cr, i, u[1]);
		cr.rounds++;
	}
	if (write(report, &cr, sizeof(cr)) != sizeof(cr))
		return 16;
	return 0;
}

/*
 * The sockets of the namespace: sockets: used, the AF_BUS, UNIX (datagram
 * and seqpacket) and UNIX-STREAM lines of /proc/net/protocols, the lines
 * of /proc/net/bus, and the AF_BUS and UNIX lines of /proc/net/sockstat
 * where it has them (-1 where not).
 */
struct family_counts {
	long sockets;
	long bus_socks;
	long bus_lines;
	long unix_dgram;
	long unix_stream;
	long stat_bus;
	long stat_unix;
};

/* "name: inuse N" of /proc/net/sockstat, or -1. */
static long sockstat_inuse(const char *name)
{
	FILE *f = fopen("/proc/net/sockstat", "r");
	char line[256], proto[32];
	long n = -1, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31[^:]: inuse %ld", proto, &v) == 2 &&
		    !strcmp(proto, name)) {
			n = v;
			break;
		}
	}
	fclose(f);
	return n;
}

static struct family_counts family_counts_now(void)
{
	struct family_counts c = {
		.sockets = bus_count_sockstat(),
		.bus_socks = bus_count_protocol("AF_BUS"),
		.bus_lines = bus_count_proc_lines(),
		.unix_dgram = bus_count_protocol("UNIX"),
		.unix_stream = bus_count_protocol("UNIX-STREAM"),
		.stat_bus = sockstat_inuse("AF_BUS"),
		.stat_unix = sockstat_inuse("UNIX"),
	};

	return c;
}

static bool family_counts_equal(const struct family_counts *a,
				const struct family_counts *b)
{
	return a->sockets == b->sockets && a->bus_socks == b->bus_socks &&
	       a->bus_lines == b->bus_lines && a->unix_dgram == b->unix_dgram &&
	       a->unix_stream == b->unix_stream &&
	       a->stat_bus == b->stat_bus && a->stat_unix == b->stat_unix;
}

static void family_counts_print(const char *what, const struct family_counts *c)
{
	fprintf(stderr, "# %s: sockets used %ld, AF_BUS %ld, /proc/net/bus lines %ld, UNIX %ld, UNIX-STREAM %ld, sockstat AF_BUS %ld, UNIX %ld\n",
		what, c->sockets, c->bus_socks, c->bus_lines, c->unix_dgram,
		c->unix_stream, c->stat_bus, c->stat_unix);
}

static struct family_counts family_baseline(struct __test_metadata *_metadata)
{
	struct family_counts c = family_counts_now();

	family_counts_print("baseline", &c);
	ASSERT_LE(0, c.sockets)
		TH_LOG("no sockets: used in /proc/net/sockstat");
	ASSERT_LE(0, c.bus_socks) TH_LOG("no AF_BUS in /proc/net/protocols");
	ASSERT_LE(0, c.bus_lines) TH_LOG("no /proc/net/bus");
	ASSERT_LE(0, c.unix_dgram) TH_LOG("no UNIX in /proc/net/protocols");
	ASSERT_LE(0, c.unix_stream)
		TH_LOG("no UNIX-STREAM in /proc/net/protocols");
	return c;
}

/* Within SETTLE_MS the counts are base again, exactly. */
static void expect_family_counts(struct __test_metadata *_metadata,
				 const struct family_counts *base)
{
	struct family_counts c;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		c = family_counts_now();
		if (family_counts_equal(&c, base) ||
		    bus_elapsed_ms(&start) > SETTLE_MS)
			break;
		usleep(20000);
	}
	family_counts_print("after", &c);
	EXPECT_EQ(base->sockets, c.sockets) TH_LOG("sockets: used");
	EXPECT_EQ(base->bus_socks, c.bus_socks)
		TH_LOG("AF_BUS sockets, /proc/net/protocols");
	EXPECT_EQ(base->bus_lines, c.bus_lines) TH_LOG("/proc/net/bus lines");
	EXPECT_EQ(base->unix_dgram, c.unix_dgram)
		TH_LOG("UNIX sockets, /proc/net/protocols");
	EXPECT_EQ(base->unix_stream, c.unix_stream)
		TH_LOG("UNIX-STREAM sockets, /proc/net/protocols");
	EXPECT_EQ(base->stat_bus, c.stat_bus) TH_LOG("sockstat AF_BUS");
	EXPECT_EQ(base->stat_unix, c.stat_unix) TH_LOG("sockstat UNIX");
}

/* Wait (boundedly) for one byte on fd. */
static void wait_byte(struct __test_metadata *_metadata, int fd)
{
	char b;

	ASSERT_EQ(POLLIN, bus_poll(_metadata, fd, POLLIN, 4 * BUS_TIMEOUT_MS)
			  & POLLIN) TH_LOG("the child did not report");
	ASSERT_EQ(1, read(fd, &b, 1));
}

/* The child pid exited with status 0. */
static void expect_child_ok(struct __test_metadata *_metadata, pid_t pid)
{
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * As NOBODY, with RLIMIT_NOFILE CHILD_NOFILE, connect to bus and send one
 * pipe descriptor per message to the master until a send fails; report.
 * The messages wait on the accepted socket, which the connect made: the
 * files count against NOBODY while they are queued there too.
 */
static int inflight_child(const struct bus_name *bus, int passed, int report)
{
	struct rlimit rl = { CHILD_NOFILE, CHILD_NOFILE };
	struct timeval tv = { .tv_sec = 2 };
	struct child_round cr;
	int fd;

	if (setrlimit(RLIMIT_NOFILE, &rl) || !become_nobody())
		return 10;
	fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (const struct sockaddr *)&bus->sa, bus->len))
		return 12;
	cr = child_send_until_error(fd, passed, 4 * CHILD_NOFILE);
	if (write(report, &cr, sizeof(cr)) != sizeof(cr))
		return 11;
	return 0;
}

/*
 * An unprivileged process tries CYCLE_ROUNDS times to close a loop of an
 * AF_BUS socket in an AF_UNIX queue and that AF_UNIX socket in the AF_BUS
 * socket's queue (or its bus' master's, see cycle_child()), and exits
 * with everything open.  Every AF_UNIX leg fails with EOPNOTSUPP, every
 * AF_BUS leg goes out, nothing reaches an AF_UNIX socket; what it sent
 * the root master arrives, then end of file; once the master closed the
 * accepted socket every socket count is back at its baseline, and
 * NOBODY's count of AF_BUS files in flight is back at 0: with
 * RLIMIT_NOFILE N, N + 1 messages with one file go out, not fewer.
 */
TEST(unix_bus_cycle_unprivileged)
{
	struct bus_name bus = bus_name_abstract();
	int m = bus_master(_metadata, &bus);
	struct family_counts base = family_baseline(_metadata);
	int go[2], report[2], pp[2], a, i;
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	struct cycle_report cr;
	struct child_round rd;
	char payload[16], b;
	struct rmsg r;
	__u64 caddr;
	pid_t pid;

	ASSERT_OK(pipe(go));
	ASSERT_OK(pipe(report));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(go[1]);
		close(report[0]);
		_exit(cycle_child(&bus, go[0], report[1]));
	}
	close(go[0]);
	close(report[1]);
	wait_byte(_metadata, report[0]);
	a = bus_accept(_metadata, m);
	bus_join(_metadata, a);
	ASSERT_OK(getpeername(a, (struct sockaddr *)&sa, &len));
	caddr = sa.sbus_addr.s_addr;
	ASSERT_EQ(1, write(go[1], "g", 1));
	expect_child_ok(_metadata, pid);
	ASSERT_EQ((ssize_t)sizeof(cr), read(report[0], &cr, sizeof(cr)));
	close(go[1]);
	close(report[0]);

	EXPECT_EQ(-1, cr.bad_round)
		TH_LOG("round %d, %s: %s", cr.bad_round, cr.bad_what,
		       strerror(cr.bad_errno));
	ASSERT_EQ(CYCLE_ROUNDS, cr.rounds);
	ASSERT_EQ(CYCLE_UNIX_TRIES, cr.unix_tries);
	ASSERT_EQ(CYCLE_UNIX_TRIES, cr.refused);
	ASSERT_EQ(CYCLE_ROUNDS, cr.bus_sent);
	ASSERT_EQ(2 * CYCLE_ROUNDS, cr.quiet);

	/* the AF_UNIX sockets of rounds 3, 7, ... then end of file */
	for (i = 3; i < CYCLE_ROUNDS; i += 4) {
		snprintf(payload, sizeof(payload), "r%d", i);
		expect_fds_msg(_metadata, a, caddr, payload, 1, &r);
		expect_socket(_metadata, r.fds[0], AF_UNIX,
			      unix_types[i % N_UNIX_TYPES]);
		close(r.fds[0]);
	}
	ASSERT_EQ(0, recv(a, &b, 1, 0))
		TH_LOG("c is still there: %s", strerror(errno));
	close(a);
	expect_family_counts(_metadata, &base);

	/* NOBODY holds nothing in flight any more */
	ASSERT_OK(pipe(report));
	ASSERT_OK(pipe(pp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(report[0]);
		_exit(inflight_child(&bus, pp[1], report[1]));
	}
	close(report[1]);
	expect_child_ok(_metadata, pid);
	ASSERT_EQ((ssize_t)sizeof(rd), read(report[0], &rd, sizeof(rd)));
	close(report[0]);
	EXPECT_EQ(ETOOMANYREFS, rd.err) TH_LOG("failure: %s",
					       strerror(rd.err));
	EXPECT_EQ(CHILD_NOFILE + 1, rd.sent);
	a = bus_accept(_metadata, m);
	len = sizeof(sa);
	ASSERT_OK(getpeername(a, (struct sockaddr *)&sa, &len));
	caddr = sa.sbus_addr.s_addr;
	for (i = 0; i < rd.sent; i++) {
		expect_fds_msg(_metadata, a, caddr, "r", 1, &r);
		expect_same_file(_metadata, pp[1], r.fds[0]);
		close(r.fds[0]);
	}
	/* the child is gone: end of file after its messages */
	ASSERT_EQ(0, recv(a, &b, 1, MSG_DONTWAIT));
	close(a);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
	expect_family_counts(_metadata, &base);
	close(m);
}

/* ---------------------------------------------------------------------
 * Every copy of a multicast counts against the sender's RLIMIT_NOFILE
 * (af_bus.rst, "Passing files"): the check "more than RLIMIT_NOFILE
 * already in flight" is made before the message's own files count, and
 * again before each copy, so with limit L, F files per message and C in
 * flight, a multicast to M recipients goes out iff C + (M - 1) * F <= L,
 * with C + M * F in flight while it is sent; a unicast iff C <= L. Once
 * queued, the files count against the recipients' users.
 */
#define MC_NOFILE	64	/* L */
#define MC_FDS		8	/* F */
#define MC_MEMBERS	16
/* multicast prefixes and how many members (p[0], p[1], ...) each has */
#define MC_P16		1	/* all: 15 * 8 > 64 */
#define MC_P4		2	/* 3 * 8 <= 64 from 0; 32 + 24 <= 64 */
#define MC_P9		3	/* the largest that goes: 8 * 8 = 64 */
#define MC_P10		4	/* the smallest that fails: 9 * 8 > 64 */

_Static_assert(MC_FDS * (9 - 1) <= MC_NOFILE &&
	       MC_FDS * (10 - 1) > MC_NOFILE &&
	       MC_FDS * (4 - 1) + MC_FDS * 4 <= MC_NOFILE &&
	       MC_FDS * 4 * 2 == MC_NOFILE,
	       "the thresholds of the multicast tests");

/* 16 joined members at addresses 1..16; the sender is a child's. */
BUS_PEERS_FIXTURE(mc, MC_MEMBERS, MC_MEMBERS)

/* What one send of the multicast child did. */
struct mc_result {
	long ret;
	int err;
};

/*
 * The sender: with RLIMIT_NOFILE MC_NOFILE and no privilege, connect to
 * bus and report; then, for every address read from cmd, send "mc" there
 * with MC_FDS copies of the descriptor passed and report what the send
 * returned.  Ends when cmd is closed.
 */
static int mc_child(const struct bus_name *bus, int passed, int cmd,
		    int report)
{
	struct rlimit rl = { MC_NOFILE, MC_NOFILE };
	struct timeval tv = { .tv_sec = 2 };
	struct mc_result res = { 0, 0 };
	int fds[MC_FDS], fd, i;
	__u64 to;

	for (i = 0; i < MC_FDS; i++)
		fds[i] = passed;
	if (setrlimit(RLIMIT_NOFILE, &rl) || !become_nobody())
		return 10;
	fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (const struct sockaddr *)&bus->sa, bus->len))
		return 11;
	if (write(report, &res, sizeof(res)) != sizeof(res))
		return 12;
	while (read(cmd, &to, sizeof(to)) == sizeof(to)) {
		errno = 0;
		res.ret = send_fds(fd, bus, to, "mc", fds, MC_FDS, false);
		res.err = res.ret < 0 ? errno : 0;
		if (write(report, &res, sizeof(res)) != sizeof(res))
			return 13;
	}
	return 0;
}

struct mc_sender {
	pid_t pid;
	int cmd;	/* addresses to send to */
	int report;	/* struct mc_result of each */
	int afd;	/* its accepted socket */
	__u64 addr;
};

static struct mc_result mc_read_result(struct __test_metadata *_metadata,
				       const struct mc_sender *s)
{
	struct mc_result res = { -2, 0 };

	ASSERT_EQ(POLLIN, bus_poll(_metadata, s->report, POLLIN,
				   4 * BUS_TIMEOUT_MS) & POLLIN)
		TH_LOG("the sender did not report");
	ASSERT_EQ((ssize_t)sizeof(res), read(s->report, &res, sizeof(res)));
	return res;
}

/* The sender sends "mc" with MC_FDS files to `to`; it must return err. */
static void mc_send(struct __test_metadata *_metadata,
		    const struct mc_sender *s, __u64 to, int err)
{
	struct mc_result res;

	ASSERT_EQ((ssize_t)sizeof(to), write(s->cmd, &to, sizeof(to)));
	res = mc_read_result(_metadata, s);
	if (err) {
		ASSERT_EQ(-1, res.ret) TH_LOG("the send to %#llx went out",
					      (unsigned long long)to);
		ASSERT_EQ(err, res.err) TH_LOG("send to %#llx: %s",
					       (unsigned long long)to,
					       strerror(res.err));
	} else {
		ASSERT_EQ(2, res.ret) TH_LOG("send to %#llx: %s",
					     (unsigned long long)to,
					     strerror(res.err));
	}
}

/*
 * Member fd gets "mc" from the sender with MC_FDS new descriptors, each
 * for the pipe whose write end is pw and read end pr, and working.
 */
static void mc_expect(struct __test_metadata *_metadata, int fd,
		      const struct mc_sender *s, int pw, int pr)
{
	struct rmsg r;
	int i;

	expect_fds_msg(_metadata, fd, s->addr, "mc", MC_FDS, &r);
	for (i = 0; i < MC_FDS; i++) {
		expect_same_file(_metadata, pw, r.fds[i]);
		expect_pipe_through(_metadata, r.fds[i], pr, "w");
	}
	close_fds(r.fds, MC_FDS);
}

/*
 * As NOBODY with RLIMIT_NOFILE 64, multicasts with 8 files: to 16 and
 * to 10 members ETOOMANYREFS and nobody gets anything (the copies count
 * against the sender while they are made); to 9 they go out, and once
 * queued the files count against the members' user, not the sender's
 * (af_bus.rst, "Passing files"): a unicast with files and the same
 * multicast go out at once, as do three multicasts to 4.  Members get
 * 8 working descriptors for the passed pipe each time.
 */
TEST_F(mc, multicast_fd_copies_counted)
{
	struct mc_sender s = { .pid = -1 };
	int cmd[2], report[2], pp[2], i, j;
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	struct mc_result res;

	for (i = 0; i < MC_MEMBERS; i++) {
		ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
				       bus_mkaddr(MC_P16, i + 1)));
		if (i < 4)
			ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
					       bus_mkaddr(MC_P4, i + 1)));
		if (i < 9)
			ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
					       bus_mkaddr(MC_P9, i + 1)));
		if (i < 10)
			ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
					       bus_mkaddr(MC_P10, i + 1)));
	}
	ASSERT_OK(pipe(pp));
	ASSERT_OK(pipe(cmd));
	ASSERT_OK(pipe(report));
	s.pid = fork();
	ASSERT_LE(0, s.pid);
	if (!s.pid) {
		close(cmd[1]);
		close(report[0]);
		_exit(mc_child(&self->bus, pp[1], cmd[0], report[1]));
	}
	close(cmd[0]);
	close(report[1]);
	s.cmd = cmd[1];
	s.report = report[0];
	res = mc_read_result(_metadata, &s);
	ASSERT_EQ(0, res.ret);
	s.afd = bus_accept(_metadata, self->m);
	bus_join(_metadata, s.afd);
	ASSERT_OK(getpeername(s.afd, (struct sockaddr *)&sa, &len));
	s.addr = sa.sbus_addr.s_addr;
	ASSERT_EQ((__u64)MC_MEMBERS + 1, s.addr);

	/* 0 in flight: 16 and 10 members are too many */
	mc_send(_metadata, &s, bus_mcast(MC_P16), ETOOMANYREFS);
	mc_send(_metadata, &s, bus_mcast(MC_P10), ETOOMANYREFS);
	bus_expect_quiet(_metadata, self->p, MC_MEMBERS);
	bus_expect_none(_metadata, s.afd);

	/* 9 are not; once queued, the 72 files count against the
	 * members' user, not the sender's: a unicast with files goes out
	 * at once, and so does the multicast again
	 */
	mc_send(_metadata, &s, bus_mcast(MC_P9), 0);
	mc_send(_metadata, &s, self->p[0].addr, 0);
	mc_send(_metadata, &s, bus_mcast(MC_P9), 0);
	for (i = 0; i < 9; i++)
		for (j = 0; j < (i ? 2 : 3); j++)
			mc_expect(_metadata, self->p[i].cfd, &s, pp[1], pp[0]);
	bus_expect_quiet(_metadata, self->p, MC_MEMBERS);

	/* 4 three times: each goes out, as the first left nothing in
	 * flight of the sender's
	 */
	for (j = 0; j < 3; j++)
		mc_send(_metadata, &s, bus_mcast(MC_P4), 0);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++)
			mc_expect(_metadata, self->p[i].cfd, &s, pp[1], pp[0]);
	bus_expect_quiet(_metadata, self->p, MC_MEMBERS);
	bus_expect_none(_metadata, s.afd);

	close(s.cmd);
	expect_child_ok(_metadata, s.pid);
	close(s.report);
	close(s.afd);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/*
 * The limit does not apply to a sender with CAP_SYS_RESOURCE: root with
 * RLIMIT_NOFILE 64 multicasts 8 files to 16 members (128 in flight).
 */
TEST_F(mc, multicast_fd_copies_root_exempt)
{
	struct rlimit rl = { MC_NOFILE, MC_NOFILE };
	struct mc_sender s = { .pid = -1, .cmd = -1, .report = -1, .afd = -1 };
	int fds[MC_FDS], pp[2], i;

	ASSERT_EQ(0U, geteuid()) TH_LOG("the test runs as root");
	for (i = 0; i < MC_MEMBERS; i++)
		ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
				       bus_mkaddr(MC_P16, i + 1)));
	ASSERT_OK(pipe(pp));
	for (i = 0; i < MC_FDS; i++)
		fds[i] = pp[1];
	ASSERT_OK(setrlimit(RLIMIT_NOFILE, &rl));
	s.addr = self->p[MC_MEMBERS - 1].addr;
	ASSERT_EQ(2, send_fds(self->p[MC_MEMBERS - 1].cfd, &self->bus,
			      bus_mcast(MC_P16), "mc", fds, MC_FDS, false))
		TH_LOG("sendmsg: %s", strerror(errno));
	for (i = 0; i < MC_MEMBERS; i++)
		mc_expect(_metadata, self->p[i].cfd, &s, pp[1], pp[0]);
	bus_expect_quiet(_metadata, self->p, MC_MEMBERS);
	close(pp[1]);
	expect_pipe_eof(_metadata, pp[0], BUS_TIMEOUT_MS);
	close(pp[0]);
}

/*
 * Files in flight count against the user that holds them once they are
 * queued: a caller that hoards the descriptors a service sends it does
 * not use up the service's own RLIMIT_NOFILE.  The service (uid 65534,
 * RLIMIT_NOFILE 64) sends the hoarder (uid 65533, RLIMIT_NOFILE
 * HOARD_NOFILE, never reads) 2000 replies with one file each, and a
 * third client a file after each: every send to the third client goes
 * out; those to the hoarder go until its own user holds more than its
 * limit (HOARD_NOFILE + 1 of them, the last check made before the
 * message's own file counts), then fail with ETOOMANYREFS.
 */
#define HOARD_UID	65533
#define HOARD_NOFILE	512
#define HOARD_SENDS	2000
#define SVC_NOFILE	64

struct hoard_report {
	int to_hoarder;		/* sends to the hoarder that went out */
	int refused;		/* failed with ETOOMANYREFS */
	int other_err;		/* errno of any other failure, else 0 */
	int to_third;		/* sends to the third client that went */
	int third_err;		/* errno of the first that did not */
};

/* A client of bus as uid/gid @uid with RLIMIT_NOFILE @nofile; says so on
 * report, then waits for go.  Its socket, or -(exit code).
 */
static int hoard_client(const struct bus_name *bus, uid_t uid, int nofile,
			int report, int go)
{
	struct rlimit rl = { nofile, nofile };
	struct timeval tv = { .tv_sec = 2 };
	int fd;
	char b;

	if (setrlimit(RLIMIT_NOFILE, &rl) || setgroups(0, NULL) ||
	    setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return -10;
	fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (const struct sockaddr *)&bus->sa, bus->len))
		return -11;
	if (write(report, "r", 1) != 1 || read(go, &b, 1) != 1)
		return -12;
	return fd;
}

static int hoard_service(const struct bus_name *bus, __u64 hoarder,
			 __u64 third, int report, int go)
{
	struct hoard_report hr = { 0 };
	int fd, pp[2], i;
	char b;

	if (pipe(pp))
		return 9;
	fd = hoard_client(bus, NOBODY, SVC_NOFILE, report, go);
	if (fd < 0)
		return -fd;
	for (i = 0; i < HOARD_SENDS; i++) {
		if (send_fds(fd, bus, hoarder, "h", &pp[1], 1, false) == 1)
			hr.to_hoarder++;
		else if (errno == ETOOMANYREFS)
			hr.refused++;
		else if (!hr.other_err)
			hr.other_err = errno;
		if (send_fds(fd, bus, third, "t", &pp[0], 1, false) == 1)
			hr.to_third++;
		else if (!hr.third_err)
			hr.third_err = errno;
	}
	if (write(report, &hr, sizeof(hr)) != sizeof(hr))
		return 14;
	/* the third client reads meanwhile: keep the files open */
	while (read(go, &b, 1) > 0)
		;
	return 0;
}

TEST_F_TIMEOUT(fds, hoarder_does_not_exhaust_service, 300)
{
	int hgo[2], hrep[2], sgo[2], srep[2], status, i, n = 0;
	struct hoard_report hr;
	pid_t hpid, spid;
	int h_afd, s_afd;
	struct rmsg r;
	char b;

	ASSERT_OK(pipe(hgo));
	ASSERT_OK(pipe(hrep));
	hpid = fork();
	ASSERT_LE(0, hpid);
	if (!hpid) {
		int fd;

		close(hgo[1]);
		close(hrep[0]);
		fd = hoard_client(&self->bus, HOARD_UID, HOARD_NOFILE,
				  hrep[1], hgo[0]);

		if (fd < 0)
			_exit(-fd);
		/* never reads */
		while (read(hgo[0], &b, 1) > 0)
			;
		_exit(0);
	}
	ASSERT_EQ(1, read(hrep[0], &b, 1));
	h_afd = bus_accept(_metadata, self->m);
	bus_join(_metadata, h_afd);
	/* room for all the replies: files are what runs out */
	i = 2 * HOARD_SENDS;
	ASSERT_OK(setsockopt(h_afd, SOL_BUS, BUS_SET_MAXQLEN, &i, sizeof(i)));
	i = 16 << 20;
	ASSERT_OK(setsockopt(h_afd, SOL_BUS, BUS_SET_RCVBUF, &i, sizeof(i)));

	close(hgo[0]);
	close(hrep[1]);
	ASSERT_OK(pipe(sgo));
	ASSERT_OK(pipe(srep));
	spid = fork();
	ASSERT_LE(0, spid);
	if (!spid) {
		/* only its own ends: the others' closing ends their reads */
		close(hgo[1]);
		close(hrep[0]);
		close(sgo[1]);
		close(srep[0]);
		_exit(hoard_service(&self->bus, 4, self->p[2].addr, srep[1],
				    sgo[0]));
	}
	close(sgo[0]);
	close(srep[1]);
	ASSERT_EQ(1, read(srep[0], &b, 1));
	s_afd = bus_accept(_metadata, self->m);
	bus_join(_metadata, s_afd);
	ASSERT_EQ(1, write(hgo[1], "g", 1));
	ASSERT_EQ(1, write(sgo[1], "g", 1));

	/* the third client reads each file as it comes */
	while (n < HOARD_SENDS) {
		ASSERT_NE(0, bus_poll(_metadata, self->p[2].cfd, POLLIN,
				      60000) & POLLIN)
			TH_LOG("third client: %d files", n);
		expect_fds_msg(_metadata, self->p[2].cfd, 5, "t", 1, &r);
		close(r.fds[0]);
		n++;
	}
	ASSERT_EQ((ssize_t)sizeof(hr), read(srep[0], &hr, sizeof(hr)));
	EXPECT_EQ(HOARD_SENDS, hr.to_third) TH_LOG("third: %s",
						   strerror(hr.third_err));
	EXPECT_EQ(0, hr.other_err) TH_LOG("%s", strerror(hr.other_err));
	EXPECT_EQ(HOARD_NOFILE + 1, hr.to_hoarder);
	EXPECT_EQ(HOARD_SENDS - HOARD_NOFILE - 1, hr.refused);

	close(sgo[1]);
	close(hgo[1]);
	ASSERT_EQ(spid, waitpid(spid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(hpid, waitpid(hpid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(s_afd);
	close(h_afd);
	close(srep[0]);
	close(hrep[0]);
}

TEST_HARNESS_MAIN
