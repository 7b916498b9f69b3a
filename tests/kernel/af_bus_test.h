/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the AF_BUS kernel tests (tests/kernel/af_bus_*.c).
 *
 * Include this file first (it sets _GNU_SOURCE).  Build each test with
 *   gcc -O2 -g -Wall -Wextra -Werror -pthread \
 *       -I<exported uapi headers>/include \
 *       -I<linux>/tools/testing/selftests af_bus_X.c -o af_bus_X
 *
 * Every socket made here has SO_RCVTIMEO and SO_SNDTIMEO set, so a
 * blocking call that the kernel wrongly blocks fails the test with
 * EAGAIN instead of hanging it.  Sends use MSG_NOSIGNAL unless a test
 * is about SIGPIPE.
 */
#ifndef AF_BUS_TEST_H
#define AF_BUS_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/bus.h>

/*
 * The 6.1 harness is not -Wextra clean: its TEST() wrapper and timeout
 * handler have unused parameters, expanded in our files.
 */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#ifndef AF_BUS
#define AF_BUS 46
#endif
#ifndef PF_BUS
#define PF_BUS AF_BUS
#endif
#ifndef SOL_BUS
#define SOL_BUS 288
#endif

/* Length of a sockaddr_bus that carries no path at all. */
#define BUS_SA_NOPATH	offsetof(struct sockaddr_bus, sbus_path)
/*
 * Longest meaningful address: offsetof(sbus_path) + BUS_PATH_MAX = 124.
 * sizeof(struct sockaddr_bus) is 128 only because of tail padding; an
 * abstract name bound with that length is the 107 bytes after the NUL,
 * so getsockname() reports 124.
 */
#define BUS_SA_MAXLEN	(BUS_SA_NOPATH + BUS_PATH_MAX)
/* Default SO_RCVTIMEO/SO_SNDTIMEO of every socket the tests make. */
#define BUS_TIMEOUT_MS	2000
/* Default limit of a receive queue, in messages (semantics.md). */
#define BUS_QLEN_MAX	1024U

/* A bus address: sockaddr with the length to pass to bind/connect/sendto. */
struct bus_name {
	struct sockaddr_bus sa;
	socklen_t len;
};

/* One client: its connected socket, the master's accepted socket for it. */
struct bus_peer {
	int cfd;
	int afd;
	__u64 addr;	/* prefix-0 address the kernel gave it */
};

/* errno after a call that returned ret, or 0 if it did not fail. */
static inline int bus_errno_of(long ret)
{
	return ret == -1 ? errno : 0;
}

/* The number a file such as a sysctl or a cgroup's starts with; -1 if
 * it cannot be read.
 */
static inline long bus_read_long(const char *path)
{
	char buf[64];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

/* write(path, "v"): 0 or the errno */
static inline int bus_write_long(const char *path, long v)
{
	char buf[32];
	int fd = open(path, O_WRONLY), n, err = 0;

	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%ld", v);
	if (write(fd, buf, n) != n)
		err = errno;
	close(fd);
	return err;
}

/*
 * Expect expr to fail with -1 and errno == err (a 0 in the report means it
 * succeeded).  Like ASSERT_EQ it may be followed by a TH_LOG() statement.
 */
#define ASSERT_ERRNO(err, expr) \
	ASSERT_EQ(err, bus_errno_of((errno = 0, (long)(expr))))

/* Expect expr to return 0 (setsockopt, bind, ...), else log errno. */
#define ASSERT_OK(expr) do {						\
	long __r;							\
	errno = 0;							\
	__r = (long)(expr);						\
	ASSERT_EQ(0, __r) TH_LOG("%s: %s", #expr, strerror(errno));	\
} while (0)

static inline __u64 bus_mkaddr(unsigned int prefix, __u64 client)
{
	return ((__u64)prefix << BUS_PREFIX_SHIFT) | (client & BUS_CLIENT_MASK);
}

static inline __u64 bus_mcast(unsigned int prefix)
{
	return bus_mkaddr(prefix, BUS_CLIENT_MASK);
}

/* An abstract name no other test (in any process) uses. */
static inline struct bus_name bus_name_abstract(void)
{
	static unsigned int counter;
	struct bus_name n;
	int len;

	memset(&n, 0, sizeof(n));
	n.sa.sbus_family = AF_BUS;
	len = snprintf(n.sa.sbus_path + 1, sizeof(n.sa.sbus_path) - 1,
		       "afbus-test-%d-%u", (int)getpid(), ++counter);
	n.len = BUS_SA_NOPATH + 1 + len;
	return n;
}

/* A filesystem name, with the canonical length (path and its NUL). */
static inline struct bus_name bus_name_path(const char *path)
{
	struct bus_name n;

	memset(&n, 0, sizeof(n));
	n.sa.sbus_family = AF_BUS;
	strncpy(n.sa.sbus_path, path, sizeof(n.sa.sbus_path) - 1);
	n.len = BUS_SA_NOPATH + strlen(n.sa.sbus_path) + 1;
	return n;
}

/* A fresh filesystem name under /tmp (left over files are removed). */
static inline struct bus_name bus_name_tmp(void)
{
	static unsigned int counter;
	char path[64];

	snprintf(path, sizeof(path), "/tmp/afbus-test-%d-%u",
		 (int)getpid(), ++counter);
	unlink(path);
	return bus_name_path(path);
}

/*
 * The bus name with addrlen sizeof(struct sockaddr_bus): for an abstract
 * name another name (padded with NULs), for a filesystem name the same.
 */
static inline struct bus_name bus_name_full_length(const struct bus_name *bus)
{
	struct bus_name n = *bus;

	n.len = sizeof(n.sa);
	return n;
}

/* Create an empty regular file at path (that of a filesystem name). */
static inline void bus_make_file(struct __test_metadata *_metadata,
				 const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0600);

	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	close(fd);
}

/* The bus name with a destination (or bound) address filled in. */
static inline struct bus_name bus_dest(const struct bus_name *bus, __u64 addr)
{
	struct bus_name n = *bus;

	n.sa.sbus_addr.s_addr = addr;
	return n;
}

static inline void bus_set_timeouts(struct __test_metadata *_metadata,
				    int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
}

/* bind(fd, bus) and connect(fd, bus), returning what the call does. */
static inline int bus_bind_name(int fd, const struct bus_name *bus)
{
	return bind(fd, (const struct sockaddr *)&bus->sa, bus->len);
}

static inline int bus_connect_name(int fd, const struct bus_name *bus)
{
	return connect(fd, (const struct sockaddr *)&bus->sa, bus->len);
}

/* An AF_BUS SOCK_SEQPACKET socket of the given protocol, with timeouts. */
static inline int bus_socket(struct __test_metadata *_metadata, int proto)
{
	int fd = socket(AF_BUS, SOCK_SEQPACKET, proto);

	ASSERT_LE(0, fd) TH_LOG("socket(AF_BUS): %s", strerror(errno));
	bus_set_timeouts(_metadata, fd, BUS_TIMEOUT_MS);
	return fd;
}

/* A listening bus master of the given protocol on bus. */
static inline int bus_master_proto(struct __test_metadata *_metadata,
				   const struct bus_name *bus, int proto)
{
	int fd = bus_socket(_metadata, proto);

	ASSERT_OK(bus_bind_name(fd, bus));
	ASSERT_OK(listen(fd, 64));
	return fd;
}

static inline int bus_master(struct __test_metadata *_metadata,
			     const struct bus_name *bus)
{
	return bus_master_proto(_metadata, bus, BUS_PROTO_NONE);
}

/* A client socket connected to bus. */
static inline int bus_connect(struct __test_metadata *_metadata,
			      const struct bus_name *bus)
{
	int fd = bus_socket(_metadata, BUS_PROTO_NONE);

	ASSERT_OK(bus_connect_name(fd, bus));
	return fd;
}

/* Accept one pending client on master, with timeouts set on it. */
static inline int bus_accept(struct __test_metadata *_metadata, int master)
{
	int fd = accept(master, NULL, NULL);

	ASSERT_LE(0, fd) TH_LOG("accept: %s", strerror(errno));
	bus_set_timeouts(_metadata, fd, BUS_TIMEOUT_MS);
	return fd;
}

/*
 * No client is pending on master m: an accept on it made non-blocking
 * for the call gives EAGAIN.  (accept4()'s SOCK_NONBLOCK is the new
 * socket's flag: with it alone the accept waited for m's SO_RCVTIMEO.)
 */
static inline void bus_expect_no_pending(struct __test_metadata *_metadata,
					 int m)
{
	int fl = fcntl(m, F_GETFL);

	ASSERT_LE(0, fl);
	ASSERT_OK(fcntl(m, F_SETFL, fl | O_NONBLOCK));
	ASSERT_ERRNO(EAGAIN, accept(m, NULL, NULL))
		TH_LOG("a client is pending on master fd %d", m);
	ASSERT_OK(fcntl(m, F_SETFL, fl));
}

/*
 * A fresh socket of protocol proto connecting to `to` fails with err, and
 * the failed connect leaves no client pending on master m.
 */
static inline void bus_expect_connect_fails(struct __test_metadata *_metadata,
					    int proto,
					    const struct bus_name *to,
					    int err, int m)
{
	int fd = bus_socket(_metadata, proto);

	ASSERT_ERRNO(err, bus_connect_name(fd, to));
	bus_expect_no_pending(_metadata, m);
	close(fd);
}

static inline void bus_join(struct __test_metadata *_metadata, int afd)
{
	ASSERT_OK(setsockopt(afd, SOL_BUS, BUS_JOIN_BUS, NULL, 0));
}

/* setsockopt(fd, SOL_BUS, BUS_ADD_ADDR or BUS_DEL_ADDR, addr). */
static inline int bus_addr_opt(int fd, int opt, __u64 addr)
{
	struct bus_addr a = { .s_addr = addr };

	return setsockopt(fd, SOL_BUS, opt, &a, sizeof(a));
}

/* The sbus_addr that getsockname() reports for fd. */
static inline __u64 bus_local_addr(struct __test_metadata *_metadata, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	memset(&sa, 0xa5, sizeof(sa));
	ASSERT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
	ASSERT_EQ(AF_BUS, sa.sbus_family);
	return sa.sbus_addr.s_addr;
}

/* sa, of length len as a call returned it, must be {AF_BUS, addr, bus}. */
static inline void bus_expect_sockaddr(struct __test_metadata *_metadata,
				       const struct sockaddr_bus *sa,
				       socklen_t len,
				       const struct bus_name *bus, __u64 addr)
{
	ASSERT_EQ(bus->len, len);
	ASSERT_EQ(AF_BUS, sa->sbus_family);
	ASSERT_EQ(addr, sa->sbus_addr.s_addr);
	ASSERT_EQ(0, memcmp(sa->sbus_path, bus->sa.sbus_path,
			    len - BUS_SA_NOPATH));
}

/* getsockname(fd), or getpeername(fd) if peer, must be {AF_BUS, addr, bus}. */
static inline void bus_expect_name(struct __test_metadata *_metadata, int fd,
				   bool peer, const struct bus_name *bus,
				   __u64 addr)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);

	memset(&sa, 0xa5, sizeof(sa));
	if (peer)
		ASSERT_OK(getpeername(fd, (struct sockaddr *)&sa, &len));
	else
		ASSERT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
	bus_expect_sockaddr(_metadata, &sa, len, bus, addr);
}

/* Connect a client to bus, accept it on master, and join it if asked. */
static inline void bus_peer_open(struct __test_metadata *_metadata,
				 struct bus_peer *p, int master,
				 const struct bus_name *bus, bool join)
{
	p->cfd = bus_connect(_metadata, bus);
	p->afd = bus_accept(_metadata, master);
	p->addr = bus_local_addr(_metadata, p->cfd);
	if (join)
		bus_join(_metadata, p->afd);
}

static inline void bus_peer_close(struct bus_peer *p)
{
	if (p->cfd >= 0)
		close(p->cfd);
	if (p->afd >= 0)
		close(p->afd);
	p->cfd = p->afd = -1;
}

/*
 * Fixture body: a master on a fresh abstract bus and n accepted clients
 * (addresses 1..n), the first `joined` of them joined.
 */
static inline void bus_open_peers(struct __test_metadata *_metadata,
				  struct bus_name *bus, int *m,
				  struct bus_peer *p, int n, int joined)
{
	int i;

	*m = -1;
	for (i = 0; i < n; i++)
		p[i].cfd = p[i].afd = -1;
	*bus = bus_name_abstract();
	*m = bus_master(_metadata, bus);
	for (i = 0; i < n; i++) {
		bus_peer_open(_metadata, &p[i], *m, bus, i < joined);
		ASSERT_EQ((__u64)i + 1, p[i].addr);
	}
}

static inline void bus_close_peers(int *m, struct bus_peer *p, int n)
{
	int i;

	for (i = 0; i < n; i++)
		bus_peer_close(&p[i]);
	if (*m >= 0)
		close(*m);
	*m = -1;
}

/*
 * FIXTURE(name) whose self has a master self->m on a fresh abstract bus
 * self->bus and n accepted clients self->p[0..n-1] (addresses 1..n), the
 * first `joined` of them joined; all are closed at teardown.  Write it at
 * file scope, without a semicolon:  BUS_PEERS_FIXTURE(bus, 2, 2)
 */
#define BUS_PEERS_FIXTURE(name, n, joined)				\
	FIXTURE(name) {							\
		struct bus_name bus;					\
		int m;							\
		struct bus_peer p[n];					\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		bus_open_peers(_metadata, &self->bus, &self->m, self->p,	\
			       n, joined);				\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		bus_close_peers(&self->m, self->p, n);			\
	}

/* sendto(fd, {AF_BUS, addr, bus path}); MSG_NOSIGNAL is always added. */
static inline ssize_t bus_sendto(int fd, const struct bus_name *bus, __u64 addr,
				 const void *buf, size_t len, int flags)
{
	struct bus_name d = bus_dest(bus, addr);

	return sendto(fd, buf, len, flags | MSG_NOSIGNAL,
		      (const struct sockaddr *)&d.sa, d.len);
}

/* Send the string s to addr on bus, expecting all of it to go out. */
static inline void bus_send_str(struct __test_metadata *_metadata, int fd,
				const struct bus_name *bus, __u64 addr,
				const char *s)
{
	ssize_t n = bus_sendto(fd, bus, addr, s, strlen(s), 0);

	ASSERT_EQ((ssize_t)strlen(s), n) TH_LOG("sendto: %s", strerror(errno));
}

/* send() without an address (to the other end of the connection). */
static inline void bus_send_plain(struct __test_metadata *_metadata, int fd,
				  const char *s)
{
	ssize_t n = send(fd, s, strlen(s), MSG_NOSIGNAL);

	ASSERT_EQ((ssize_t)strlen(s), n) TH_LOG("send: %s", strerror(errno));
}

/*
 * Receive one message on fd (waiting at most SO_RCVTIMEO) and check that
 * it is exactly payload, sent by sender, with msg_name on this bus.
 */
static inline void bus_expect(struct __test_metadata *_metadata, int fd,
			      const struct bus_name *bus, __u64 sender,
			      const char *payload)
{
	char buf[512];
	struct sockaddr_bus from;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	ssize_t n;

	memset(&from, 0xa5, sizeof(from));
	n = recvmsg(fd, &msg, 0);
	ASSERT_EQ((ssize_t)strlen(payload), n)
		TH_LOG("recvmsg for \"%s\": %s", payload, strerror(errno));
	ASSERT_EQ(0, memcmp(buf, payload, n))
		TH_LOG("got \"%.*s\", expected \"%s\"", (int)n, buf, payload);
	ASSERT_EQ(0, msg.msg_flags & MSG_TRUNC);
	ASSERT_EQ(bus->len, msg.msg_namelen);
	ASSERT_EQ(AF_BUS, from.sbus_family);
	ASSERT_EQ(sender, from.sbus_addr.s_addr)
		TH_LOG("\"%s\" came from %#llx, expected %#llx", payload,
		       (unsigned long long)from.sbus_addr.s_addr,
		       (unsigned long long)sender);
	ASSERT_EQ(0, memcmp(from.sbus_path, bus->sa.sbus_path,
			    bus->len - BUS_SA_NOPATH));
}

/* Nothing is queued on fd: a non-blocking receive gives EAGAIN. */
static inline void bus_expect_none(struct __test_metadata *_metadata, int fd)
{
	char buf[64];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	ASSERT_EQ(-1, n) TH_LOG("fd %d unexpectedly got a %zd-byte message \"%.*s\"",
				fd, n, (int)(n > 0 ? n : 0), buf);
	ASSERT_EQ(EAGAIN, errno);
}

/* Nothing is queued on any of the n clients or their accepted sockets. */
static inline void bus_expect_quiet(struct __test_metadata *_metadata,
				    const struct bus_peer *p, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (p[i].cfd >= 0)
			bus_expect_none(_metadata, p[i].cfd);
		if (p[i].afd >= 0)
			bus_expect_none(_metadata, p[i].afd);
	}
}

/* recv one message on fd; *drops = SO_RXQ_OVFL value, -1 if none. */
static inline ssize_t bus_recv_ovfl(int fd, char *buf, size_t len, int *drops)
{
	union {
		char b[CMSG_SPACE(sizeof(__u32))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.b, .msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *cm;
	ssize_t n;
	__u32 v;

	*drops = -1;
	n = recvmsg(fd, &msg, MSG_DONTWAIT);
	for (cm = CMSG_FIRSTHDR(&msg); n >= 0 && cm;
	     cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SO_RXQ_OVFL) {
			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			*drops = v;
		}
	}
	return n;
}

/* poll() one fd for events, waiting at most ms; returns revents. */
static inline short bus_poll(struct __test_metadata *_metadata, int fd,
			     short events, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n = poll(&pfd, 1, ms);

	ASSERT_LE(0, n) TH_LOG("poll: %s", strerror(errno));
	return n ? pfd.revents : 0;
}

static inline long bus_elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

/*
 * A call run in a thread of its own, so that the test can watch it block
 * in the kernel and then do what must wake it.  fn must be bounded by a
 * socket timeout, so that joining the thread cannot hang.
 */
struct bus_call {
	long (*fn)(void *arg);
	void *arg;
	long ret;
	int err;
	pid_t tid;
	int ready[2];
	pthread_t thread;
};

static inline void *bus_call_thread(void *p)
{
	struct bus_call *c = p;

	c->tid = gettid();
	if (write(c->ready[1], "", 1) != 1)
		return NULL;
	errno = 0;
	c->ret = c->fn(c->arg);
	c->err = errno;
	return NULL;
}

/* Is thread tid of this process asleep (state S) in the kernel? */
static inline bool bus_task_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Start c->fn(c->arg) in a thread and wait until it sleeps in the kernel. */
static inline void bus_call_start_blocked(struct __test_metadata *_metadata,
					  struct bus_call *c)
{
	struct timespec start;
	char b;

	c->ret = -2;
	ASSERT_OK(pipe(c->ready));
	ASSERT_EQ(0, pthread_create(&c->thread, NULL, bus_call_thread, c));
	ASSERT_EQ(POLLIN, bus_poll(_metadata, c->ready[0], POLLIN,
				   BUS_TIMEOUT_MS));
	ASSERT_EQ(1, read(c->ready[0], &b, 1));
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!bus_task_sleeping(c->tid)) {
		ASSERT_GT(BUS_TIMEOUT_MS, bus_elapsed_ms(&start))
			TH_LOG("the call never blocked (returned %ld)", c->ret);
		usleep(1000);
	}
}

/* A 4-byte sendto of val to `to` on bus, for bus_call.fn */
struct bus_send_arg {
	int fd;
	const struct bus_name *bus;
	__u64 to;
	__u32 val;
};

static inline long bus_send_call(void *p)
{
	struct bus_send_arg *a = p;

	return bus_sendto(a->fd, a->bus, a->to, &a->val, sizeof(a->val), 0);
}

/* Wait for the call to return (its own socket timeout bounds it). */
static inline void bus_call_finish(struct __test_metadata *_metadata,
				   struct bus_call *c)
{
	ASSERT_EQ(0, pthread_join(c->thread, NULL));
	close(c->ready[0]);
	close(c->ready[1]);
}

/* kill -9 and reap every process of pids[0..n-1] > 0, setting it to -1. */
static inline void bus_kill_all(pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		pids[i] = -1;
	}
}

#endif /* AF_BUS_TEST_H */
