// SPDX-License-Identifier: GPL-2.0
/*
 * Random-operation fuzzer for AF_BUS sockets, run inside the test guest.
 *
 * Several worker processes, each with several threads, share a table of
 * socket descriptors per process and do random operations on them:
 * socket, bind, listen, accept (joining and naming the clients), connect,
 * sendmsg to random destinations with random sizes, flags and control
 * messages (SCM_CREDENTIALS, malformed ones, and SCM_RIGHTS carrying
 * AF_BUS sockets, their own included, so that descriptor cycles form),
 * recvmsg (keeping descriptors that arrive), setsockopt and getsockopt
 * with random levels, names, values and lengths (SOL_BUS included),
 * shutdown, poll, ioctl, dup, close while other threads use the same
 * descriptor, and, rarely, a move to a new network namespace.  Half the
 * buses carry D-Bus (BUS_PROTO_DBUS): nfdbus_ops.c gives their clients
 * random match rules through the nfdbus netlink family (libnfdbus, and
 * raw requests through libmnl), lists, removes and flushes them on real
 * and bogus buses and peers, reads the counters, and sends D-Bus
 * messages marshalled by libdbus (big endian by GDBus), valid, mutated
 * and malformed, so that nfdbus parses and filters fuzzed multicasts.
 * A ticker
 * thread in each worker interrupts blocked calls with signals, and the
 * supervisor kill -9s a random worker every few seconds and starts a
 * new one.  The bus names (four abstract, two filesystem) are shared by
 * all workers, so buses and their clients span processes.
 *
 * It fails when a call returns an errno outside the set
 * Documentation/networking/af_bus.rst (or nfdbus.rst) allows for it,
 * when nfdbus refuses a valid rule or message or accepts an invalid one
 * (see nfdbus_ops.c for exactly which), when a worker does
 * not finish within 30 seconds of the end, or when the AF_BUS socket
 * and slab counts are not back at their starting values once every
 * worker is gone.  Kernel reports (KASAN, lockdep, ...) are caught by
 * whoever reads the kernel log (run-qemu.sh does).
 *
 * Usage: af_bus_fuzz [-s SEED] [-t SECONDS] [-p PROCESSES] [-j THREADS]
 *                    [-n] [-v]
 *   -s SEED   seed (default: random); printed first, so a run can be
 *             replayed.  Every thread draws its decisions from a
 *             generator seeded by (SEED, process, restart, thread), so
 *             the same seed makes the same choices; with -p 1 -j 1 -n
 *             the run repeats exactly up to timing.
 *   -t N      run for N seconds (default 120; env AFBUS_FUZZ_SECONDS)
 *   -p N      worker processes (default 4), -j N threads each (default 3)
 *   -n        never kill workers
 *   -v        print every unexpected result (default: the first 20)
 * The environment variable AFBUS_FUZZ_SEED gives the seed too.
 *
 * Output is kselftest TAP; the last line is the "# Totals:" line.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bus.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sockios.h>

#include "kselftest.h"
#include "../kernel/af_bus_counts.h"
#include "af_bus_fuzz.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

#define MAX_PROCS	32
#define MAX_THREADS	16
#define BIGMSG		(300 * 1024)
#define STUCK_S		30

/* ---- options and shared state ---- */

static uint64_t opt_seed;
static unsigned int opt_seconds = 120, opt_procs = 4, opt_threads = 3;
static bool opt_nokill, opt_verbose;

struct fuzz_shared *sh;

/* Flags, each set with its own probability; the list ends with pct 0. */
struct flag_chance {
	unsigned int pct;
	int flag;
};

static int random_flags(struct rng *r, const struct flag_chance *f)
{
	int flags = 0;

	for (; f->pct; f++)
		if (chance(r, f->pct))
			flags |= f->flag;
	return flags;
}

static uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	struct rng r = { seed ^ (a << 40) ^ (b << 20) ^ c };

	rnd(&r);
	return rnd(&r);
}

/* ---- per-process state ---- */

struct worker {
	unsigned int idx, gen;
	uint64_t seed;
	int slots[NSLOTS];
	pthread_t threads[MAX_THREADS];
	pid_t tids[MAX_THREADS];
	unsigned char *zeros;		/* BIGMSG bytes to send from */
};

static struct worker w;

static bool stopping(void)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);
}

int slot_get(struct rng *r)
{
	return __atomic_load_n(&w.slots[below(r, NSLOTS)], __ATOMIC_RELAXED);
}

/* Put fd in a random slot, closing what was there. */
static void slot_put(struct rng *r, int fd)
{
	int old;

	if (fd < 0)
		return;
	old = __atomic_exchange_n(&w.slots[below(r, NSLOTS)], fd,
				  __ATOMIC_RELAXED);
	if (old >= 0)
		close(old);
}

/* ---- errno checking ---- */

static bool in_list(const int *list, int err)
{
	for (; *list; list++)
		if (*list == err)
			return true;
	return false;
}

void report(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&sh->unexpected, 1, __ATOMIC_RELAXED);
	n = __atomic_fetch_add(&sh->nreports, 1, __ATOMIC_RELAXED);
	if (n < MAX_REPORTS)
		memcpy(sh->reports[n], line, sizeof(line));
	if (n < MAX_REPORTS || opt_verbose)
		fprintf(stderr, "# UNEXPECTED: %s\n", line);
}

/*
 * Whether fd still names the AF_BUS socket t->fd named when the
 * operation began.  Another thread may close a slot's descriptor at any
 * moment, and its number then names whatever is opened next: a netlink
 * socket of nfdbus_ops.c, or another AF_BUS socket in another state.
 */
static bool same_bus_socket(const struct thread_ctx *t)
{
	int domain;
	socklen_t len = sizeof(domain);
	struct stat st;

	if (getsockopt(t->fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) ||
	    domain != AF_BUS || fstat(t->fd, &st))
		return false;
	return st.st_dev == t->fd_dev && st.st_ino == t->fd_ino;
}

/* The operations that follow are on fd (-1: on none). */
static void operate_on(struct thread_ctx *t, int fd)
{
	struct stat st;

	t->fd = fd;
	t->fd_dev = 0;
	t->fd_ino = 0;
	if (fd >= 0 && !fstat(fd, &st)) {
		t->fd_dev = st.st_dev;
		t->fd_ino = st.st_ino;
	}
}

/*
 * Check the result of one call: ret < 0 must come with an errno in
 * allowed or in the errors every descriptor call may give.
 */

void check(struct thread_ctx *t, const char *what, long ret,
	   const int *allowed, const char *detail)
{
	static const int common[] = { EBADF, ENOTSOCK, EINTR, ENOMEM, 0 };
	int err = errno;

	t->nops++;
	if (ret >= 0 || in_list(common, err) || in_list(allowed, err))
		return;
	if (t->fd >= 0 && !same_bus_socket(t)) {
		/*
		 * A close race: another thread closed the descriptor and
		 * its number now names some other file, whose errors are
		 * not those of the socket the operation was meant for.
		 */
		__atomic_add_fetch(&sh->raced, 1, __ATOMIC_RELAXED);
		return;
	}
	report("worker %u.%u thread %u op %" PRIu64 ": %s%s%s: %s (errno %d)",
	       w.idx, w.gen, t->idx, t->nops, what, detail ? " " : "",
	       detail ? detail : "", strerror(err), err);
}

/* ---- names ---- */

void pool_name(unsigned int i, struct sockaddr_bus *sa, socklen_t *len)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sbus_family = AF_BUS;
	if (i < 4) {
		n = snprintf(sa->sbus_path + 1, sizeof(sa->sbus_path) - 1,
			     "afbus-fuzz-%u", i);
		*len = SA_NOPATH + 1 + n;
	} else {
		n = snprintf(sa->sbus_path, sizeof(sa->sbus_path),
			     FUZZ_DIR "/bus%u", i - 4);
		*len = SA_NOPATH + n + 1;
	}
}

__u64 random_addr(struct rng *r)
{
	switch (below(r, 9)) {
	case 0: return 0;
	case 1: return below(r, 40);
	case 2: return ((__u64)1 << BUS_PREFIX_SHIFT) | (1 + below(r, 8));
	case 3: return BUS_CLIENT_MASK;			/* prefix 0 multicast */
	case 4: return ((__u64)1 << BUS_PREFIX_SHIFT) | BUS_CLIENT_MASK;
	case 5: return ((__u64)below(r, 0x10000) << BUS_PREFIX_SHIFT) |
		       BUS_CLIENT_MASK;
	case 6: return ((__u64)1 << BUS_PREFIX_SHIFT) | rnd(r) % 4;
	default: return rnd(r);
	}
}

/*
 * A socket address for bind, connect or sendto: mostly a name of the
 * pool with a sensible length, sometimes garbage.
 */
static void random_name(struct rng *r, struct sockaddr_bus *sa,
			socklen_t *len, bool with_addr)
{
	unsigned int i;

	pool_name(below(r, NNAMES), sa, len);
	if (with_addr)
		sa->sbus_addr.s_addr = random_addr(r);
	else if (chance(r, 3))
		sa->sbus_addr.s_addr = random_addr(r);
	switch (below(r, 20)) {
	case 0:
		*len = SA_NOPATH;
		break;
	case 1:
		*len = below(r, sizeof(*sa) + 8);
		break;
	case 2:
		sa->sbus_family = below(r, 64);
		break;
	case 3:
		*len = sizeof(*sa);
		break;
	case 4:
		for (i = 0; i < sizeof(sa->sbus_path); i++)
			sa->sbus_path[i] = rnd(r);
		if (chance(r, 50))
			sa->sbus_path[0] = 0;
		*len = SA_NOPATH + 1 + below(r, sizeof(sa->sbus_path));
		break;
	case 5:
		/* an unused filesystem name */
		snprintf(sa->sbus_path, sizeof(sa->sbus_path), FUZZ_DIR "/x%u",
			 below(r, 4));
		*len = SA_NOPATH + strlen(sa->sbus_path) + 1;
		break;
	}
}

/* ---- operations ---- */

static void set_short_timeouts(int fd, struct rng *r)
{
	struct timeval tv = { .tv_usec = 1000 * (1 + below(r, 200)) };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int new_socket(struct thread_ctx *t)
{
	static const int types[] = { SOCK_SEQPACKET, SOCK_STREAM, SOCK_DGRAM,
				     SOCK_RAW, SOCK_RDM, 0, 11 };
	struct rng *r = &t->r;
	int type = SOCK_SEQPACKET, proto = below(r, 2), fd;

	if (chance(r, 10))
		type = types[below(r, 7)];
	if (chance(r, 5))
		proto = (int)rnd(r);
	if (chance(r, 30))
		type |= SOCK_NONBLOCK;
	if (chance(r, 30))
		type |= SOCK_CLOEXEC;
	fd = socket(AF_BUS, type, proto);
	check(t, "socket", fd, E(ESOCKTNOSUPPORT, EPROTONOSUPPORT, EINVAL,
				   EMFILE, ENFILE), NULL);
	if (fd >= 0)
		set_short_timeouts(fd, r);
	return fd;
}

static void op_socket(struct thread_ctx *t)
{
	slot_put(&t->r, new_socket(t));
}

static const int *bind_errs = E(EINVAL, EADDRINUSE, ENOENT, EACCES, ENOTDIR,
				ENAMETOOLONG, EEXIST);

static void op_bind(struct thread_ctx *t, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len;

	random_name(&t->r, &sa, &len, false);
	check(t, "bind", bind(fd, (struct sockaddr *)&sa, len), bind_errs, NULL);
}

/* A new master on a pool name: socket, bind, listen. */
static void op_master(struct thread_ctx *t)
{
	struct sockaddr_bus sa;
	socklen_t len;
	unsigned int i = below(&t->r, NNAMES);
	int fd = new_socket(t);

	if (fd < 0)
		return;
	pool_name(i, &sa, &len);
	if (i >= 4 && chance(&t->r, 50))
		unlink(sa.sbus_path);	/* take over a dead master's path */
	if (bind(fd, (struct sockaddr *)&sa, len) == 0)
		check(t, "listen", listen(fd, below(&t->r, 70) - 2),
		      E(EINVAL, EOPNOTSUPP), NULL);
	else
		check(t, "bind", -1, bind_errs, sa.sbus_path[0] ? sa.sbus_path : "(abstract)");
	slot_put(&t->r, fd);
}

static void op_listen(struct thread_ctx *t, int fd)
{
	check(t, "listen", listen(fd, (int)below(&t->r, 80) - 2),
	      E(EINVAL, EOPNOTSUPP), NULL);
}

static int bus_opt_addr(int fd, int opt, __u64 addr)
{
	struct bus_addr a = { .s_addr = addr };

	return setsockopt(fd, SOL_BUS, opt, &a, sizeof(a));
}

static const int *sol_bus_errs = E(ENOPROTOOPT, EPERM, EINVAL, EALREADY,
				   EADDRINUSE, EADDRNOTAVAIL, ENOTCONN, EFAULT);

static void op_accept(struct thread_ctx *t, int fd)
{
	struct rng *r = &t->r;
	struct sockaddr_bus sa;
	socklen_t len = below(r, sizeof(sa) + 4);
	int a, flags = chance(r, 70) ? SOCK_NONBLOCK : 0;

	a = accept4(fd, chance(r, 80) ? (struct sockaddr *)&sa : NULL,
		    chance(r, 95) ? &len : NULL, flags | SOCK_CLOEXEC * chance(r, 50));
	check(t, "accept", a, E(EINVAL, EAGAIN, EOPNOTSUPP, ECONNABORTED,
				EMFILE, ENFILE, EFAULT), NULL);
	if (a < 0)
		return;
	__atomic_add_fetch(&sh->accepted, 1, __ATOMIC_RELAXED);
	set_short_timeouts(a, r);
	if (chance(r, 75))
		check(t, "setsockopt(BUS_JOIN_BUS)",
		      setsockopt(a, SOL_BUS, BUS_JOIN_BUS, NULL, 0), sol_bus_errs,
		      "after accept");
	if (chance(r, 40))
		check(t, "setsockopt(BUS_ADD_ADDR)",
		      bus_opt_addr(a, BUS_ADD_ADDR, random_addr(r)), sol_bus_errs,
		      "after accept");
	if (chance(r, 10))
		check(t, "setsockopt(BUS_SET_EAVESDROP)",
		      setsockopt(a, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0),
		      sol_bus_errs, "after accept");
	slot_put(r, a);
}

static const int *connect_errs = E(EINVAL, EISCONN, EALREADY, ENOENT, EACCES,
				   ECONNREFUSED, EPROTOTYPE, EAGAIN,
				   EADDRNOTAVAIL, ENOTDIR);

static void op_connect(struct thread_ctx *t, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len;

	random_name(&t->r, &sa, &len, false);
	check(t, "connect", connect(fd, (struct sockaddr *)&sa, len),
	      connect_errs, NULL);
}

/* A new client of a pool name. */
static void op_client(struct thread_ctx *t)
{
	struct sockaddr_bus sa;
	socklen_t len;
	int fd = new_socket(t);

	if (fd < 0)
		return;
	pool_name(below(&t->r, NNAMES), &sa, &len);
	check(t, "connect", connect(fd, (struct sockaddr *)&sa, len),
	      connect_errs, NULL);
	slot_put(&t->r, fd);
}

static void op_send(struct thread_ctx *t, int fd);
static void op_recv(struct thread_ctx *t, int fd);

/*
 * A bus with traffic: a new master on a pool name (or, when the name is
 * taken, clients of whoever holds it), up to three clients accepted and
 * joined, and a burst of sends and receives among them, so that random
 * operations meet sockets with messages (and files) queued.  Everything
 * ends up in the slots, for the other threads to race on.
 */
static void op_session(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	struct sockaddr_bus sa;
	socklen_t len;
	int m, fds[7], n = 0, i, a, c;

	pool_name(below(r, NNAMES), &sa, &len);
	m = new_socket(t);
	if (m < 0)
		return;
	if (sa.sbus_path[0] && chance(r, 30))
		unlink(sa.sbus_path);
	if (bind(m, (struct sockaddr *)&sa, len) || listen(m, 8)) {
		close(m);
		m = -1;
	}
	for (i = 1 + below(r, 3); i > 0; i--) {
		c = new_socket(t);
		if (c < 0)
			break;
		if (connect(c, (struct sockaddr *)&sa, len)) {
			close(c);
			continue;
		}
		fds[n++] = c;
		if (m < 0)
			continue;
		a = accept4(m, NULL, NULL, SOCK_NONBLOCK);
		if (a < 0)
			continue;
		setsockopt(a, SOL_BUS, BUS_JOIN_BUS, NULL, 0);
		if (chance(r, 30))
			bus_opt_addr(a, BUS_ADD_ADDR, random_addr(r));
		/* on a D-Bus bus, nfdbus filters the multicasts by these */
		if (chance(r, 60))
			nfdbus_rules_for(t, a);
		fds[n++] = a;
	}
	for (i = 4 * n; i > 0 && n; i--) {
		operate_on(t, fds[below(r, n)]);
		if (chance(r, 15))
			op_dbus_mcast(t, t->fd);
		else if (chance(r, 55))
			op_send(t, t->fd);
		else
			op_recv(t, t->fd);
	}
	operate_on(t, -1);
	for (i = 0; i < n; i++)
		slot_put(r, fds[i]);
	if (m >= 0)
		slot_put(r, m);
}

/* Build a random control message into ctl; returns its length. */
static size_t random_cmsg(struct thread_ctx *t, int fd, char *ctl, size_t size,
			  bool *rights)
{
	struct rng *r = &t->r;
	struct cmsghdr *c = (struct cmsghdr *)ctl;
	struct ucred cred = { getpid(), getuid(), getgid() };
	unsigned int i, nfds;
	size_t len = 0;
	int *fds;

	memset(ctl, 0, size);
	*rights = false;
	switch (below(r, 6)) {
	case 0:		/* our own credentials, or someone else's */
		if (chance(r, 30))
			cred.pid = 1 + below(r, 400);
		if (chance(r, 20))
			cred.uid = below(r, 3);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(cred));
		memcpy(CMSG_DATA(c), &cred, sizeof(cred));
		len = CMSG_SPACE(sizeof(cred));
		break;
	case 1:
	case 2:
	case 3:		/* descriptors: AF_BUS sockets, this one too */
		nfds = 1 + below(r, 6);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		fds = (int *)CMSG_DATA(c);
		for (i = 0; i < nfds; i++)
			fds[i] = chance(r, 30) ? fd : slot_get(r);
		len = CMSG_SPACE(nfds * sizeof(int));
		*rights = true;
		break;
	case 4:		/* malformed */
		c->cmsg_level = chance(r, 50) ? SOL_SOCKET : (int)below(r, 300);
		c->cmsg_type = below(r, 5);
		c->cmsg_len = below(r, 64);
		len = CMSG_ALIGN(below(r, 64));
		break;
	default:	/* credentials and descriptors */
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		*(int *)CMSG_DATA(c) = fd;
		len = CMSG_SPACE(sizeof(int));
		*rights = true;
		c = (struct cmsghdr *)(ctl + len);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(cred));
		memcpy(CMSG_DATA(c), &cred, sizeof(cred));
		len += CMSG_SPACE(sizeof(cred));
		break;
	}
	return len;
}

static void op_send(struct thread_ctx *t, int fd)
{
	struct rng *r = &t->r;
	char ctl[256] __attribute__((aligned(8)));
	unsigned char dbus[8192];
	unsigned char *data = w.zeros;
	struct sockaddr_bus sa;
	struct iovec iov[8];
	struct msghdr msg = { .msg_iov = iov };
	socklen_t len;
	size_t size, left;
	unsigned int i;
	bool rights = false;
	int flags;
	ssize_t n;

	switch (below(r, 20)) {
	case 0: case 1: size = 0; break;
	case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
		size = 1 + below(r, 64); break;
	case 10: case 11: case 12: case 13: case 14:
		size = 65 + below(r, 4096); break;
	case 15: case 16: case 17: size = below(r, 70000); break;
	default: size = below(r, BIGMSG); break;
	}
	if (chance(r, 30)) {
		/* a D-Bus message, for nfdbus on D-Bus buses */
		size = dbus_payload(t, dbus, sizeof(dbus));
		data = dbus;
	}
	msg.msg_iovlen = 1 + below(r, 8);
	for (i = 0, left = size; i < msg.msg_iovlen; i++) {
		iov[i].iov_base = data + (size - left);
		iov[i].iov_len = i + 1 == msg.msg_iovlen ? left : below(r, left + 1);
		left -= iov[i].iov_len;
	}
	if (chance(r, 70)) {
		random_name(r, &sa, &len, true);
		msg.msg_name = &sa;
		msg.msg_namelen = len;
	}
	if (chance(r, 25)) {
		msg.msg_control = ctl;
		msg.msg_controllen = random_cmsg(t, fd, ctl, sizeof(ctl), &rights);
	}
	flags = random_flags(r, (const struct flag_chance[]){
		{ 60, MSG_DONTWAIT }, { 80, MSG_NOSIGNAL }, { 3, MSG_OOB },
		{ 5, MSG_EOR }, { 5, MSG_MORE }, { 0, 0 } });
	n = sendmsg(fd, &msg, flags);
	check(t, "sendmsg", n, E(ENOTCONN, EOPNOTSUPP, EHOSTUNREACH, EMSGSIZE,
				 EPIPE, ECONNREFUSED, EAGAIN, ENOBUFS, EINVAL,
				 EPERM, ESRCH, ETOOMANYREFS, ECONNRESET), NULL);
	if (n >= 0) {
		__atomic_add_fetch(&sh->sent, 1, __ATOMIC_RELAXED);
		if (rights)
			__atomic_add_fetch(&sh->fds_passed, 1, __ATOMIC_RELAXED);
	}
}

static void op_recv(struct thread_ctx *t, int fd)
{
	struct rng *r = &t->r;
	char ctl[512] __attribute__((aligned(8)));
	struct sockaddr_bus sa;
	struct iovec iov = { .iov_base = t->buf };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int flags, *fds;
	size_t i, nfds;
	ssize_t n;

	iov.iov_len = chance(r, 20) ? below(r, 16) : below(r, BIGMSG);
	if (chance(r, 80)) {
		msg.msg_name = &sa;
		msg.msg_namelen = below(r, sizeof(sa) + 1);
	}
	if (chance(r, 70)) {
		msg.msg_control = ctl;
		msg.msg_controllen = below(r, sizeof(ctl) + 1);
	}
	flags = random_flags(r, (const struct flag_chance[]){
		{ 80, MSG_DONTWAIT }, { 10, MSG_PEEK }, { 10, MSG_TRUNC },
		{ 10, MSG_CMSG_CLOEXEC }, { 3, MSG_OOB }, { 3, MSG_WAITALL },
		{ 0, 0 } });
	n = recvmsg(fd, &msg, flags);
	check(t, "recvmsg", n, E(ENOTCONN, EOPNOTSUPP, EAGAIN, EINVAL,
				 ECONNRESET), NULL);
	if (n < 0)
		return;
	__atomic_add_fetch(&sh->received, 1, __ATOMIC_RELAXED);
	if (!msg.msg_control)
		return;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(c);
		__atomic_add_fetch(&sh->fds_received, nfds, __ATOMIC_RELAXED);
		for (i = 0; i < nfds; i++) {
			if (chance(r, 50))
				slot_put(r, fds[i]);
			else
				close(fds[i]);
		}
	}
}

static void op_setsockopt(struct thread_ctx *t, int fd)
{
	static const int sol_socket[] = {
		SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE,
		SO_PASSCRED, SO_PEEK_OFF, SO_RCVTIMEO, SO_SNDTIMEO,
		SO_KEEPALIVE, SO_LINGER, SO_PRIORITY, SO_RCVLOWAT, SO_MARK,
		SO_ATTACH_FILTER, SO_DETACH_FILTER, SO_LOCK_FILTER,
		SO_PASSSEC, SO_TIMESTAMP, SO_BROADCAST, SO_RXQ_OVFL,
	};
	struct rng *r = &t->r;
	unsigned char val[64] __attribute__((aligned(8)));
	struct sock_filter insn[4];
	struct sock_fprog prog;
	struct timeval tv;
	socklen_t len;
	int level, name, ival;
	char detail[64];
	void *p = val;

	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = rnd(r);
	len = below(r, 4) ? (socklen_t[]){ 0, 4, 8, 16 }[below(r, 4)]
			  : below(r, sizeof(val) + 1);
	if (chance(r, 60)) {
		level = SOL_BUS;
		name = chance(r, 80) ? (int)(1 + below(r, 8)) : (int)below(r, 40) - 2;
		if ((name == BUS_SET_SENDBUF || name == BUS_SET_MAXQLEN ||
		     name == BUS_SET_MCAST_DROP) && chance(r, 80)) {
			/* mostly sensible values, sometimes out of range */
			if (name == BUS_SET_MCAST_DROP)
				ival = chance(r, 90) ? (int)below(r, 2) : (int)rnd(r);
			else
				ival = chance(r, 90) ? (int)below(r, 1 << 21) : (int)rnd(r);
			memcpy(val, &ival, sizeof(ival));
			len = chance(r, 90) ? sizeof(ival) : below(r, 9);
		} else if (chance(r, 60)) {
			struct bus_addr a = { random_addr(r) };

			memcpy(val, &a, sizeof(a));
			len = chance(r, 85) ? sizeof(a) : below(r, 17);
		}
		if (chance(r, 5))
			p = NULL;
		snprintf(detail, sizeof(detail), "SOL_BUS %d len %u", name, len);
		check(t, "setsockopt", setsockopt(fd, level, name, p, len),
		      sol_bus_errs, detail);
		return;
	}
	if (chance(r, 10)) {
		/*
		 * any level but SOL_SOCKET's, whose errors are the core's,
		 * and SOL_BUS, whose options are chosen above
		 */
		level = below(r, 300);
		if (level == SOL_SOCKET || level == SOL_BUS)
			level = 0;
		name = below(r, 70);
		snprintf(detail, sizeof(detail), "level %d name %d", level, name);
		check(t, "setsockopt", setsockopt(fd, level, name, val, len),
		      E(ENOPROTOOPT, EOPNOTSUPP, EINVAL, EPERM, EFAULT),
		      detail);
		return;
	}
	name = sol_socket[below(r, sizeof(sol_socket) / sizeof(sol_socket[0]))];
	switch (name) {
	case SO_RCVTIMEO:
	case SO_SNDTIMEO:
		/* never wait long: the ticker's signals end a wait anyway */
		tv.tv_sec = 0;
		tv.tv_usec = chance(r, 10) ? 0 : 1000 * below(r, 300);
		memcpy(val, &tv, sizeof(tv));
		len = chance(r, 90) ? sizeof(tv) : below(r, 20);
		break;
	case SO_ATTACH_FILTER:
		/* accept k bytes: 0 drops, small truncates */
		insn[0] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						       chance(r, 30) ? 0 : below(r, 100000));
		prog.len = chance(r, 90) ? 1 : below(r, 5);
		prog.filter = insn;
		memcpy(val, &prog, sizeof(prog));
		len = chance(r, 90) ? sizeof(prog) : below(r, 20);
		break;
	default:
		ival = below(r, 5) ? (int)below(r, 1 << 20) : (int)rnd(r);
		if (name == SO_PASSCRED)
			ival = below(r, 2);
		memcpy(val, &ival, sizeof(ival));
		if (chance(r, 90))
			len = sizeof(int);
		break;
	}
	snprintf(detail, sizeof(detail), "SOL_SOCKET %d len %u", name, len);
	check(t, "setsockopt", setsockopt(fd, SOL_SOCKET, name, val, len),
	      E(EINVAL, ENOPROTOOPT, EPERM, EFAULT, EDOM, EOPNOTSUPP, ENOTSUPP,
		ENOENT, EBUSY), detail);
}

static void op_getsockopt(struct thread_ctx *t, int fd)
{
	static const int names[] = { SO_PEERCRED, SO_PEEK_OFF, SO_ERROR,
				     SO_TYPE, SO_PROTOCOL, SO_DOMAIN,
				     SO_SNDBUF, SO_RCVBUF, SO_ACCEPTCONN,
				     SO_PASSCRED, SO_PEERSEC, SO_PEERGROUPS };
	struct rng *r = &t->r;
	unsigned char val[256] __attribute__((aligned(8)));
	socklen_t len = below(r, 4) ? below(r, 32) : below(r, sizeof(val) + 1);
	int level = SOL_SOCKET, name;

	if (chance(r, 40)) {
		level = SOL_BUS;
		name = (int)below(r, 12) - 1;
	} else {
		name = names[below(r, sizeof(names) / sizeof(names[0]))];
	}
	check(t, "getsockopt", getsockopt(fd, level, name, val, &len),
	      E(ENOPROTOOPT, EINVAL, EFAULT, EOPNOTSUPP, ERANGE, ENODATA),
	      level == SOL_BUS ? "SOL_BUS" : "SOL_SOCKET");
}

static void op_shutdown(struct thread_ctx *t, int fd)
{
	int how = chance(&t->r, 90) ? (int)below(&t->r, 3) : (int)below(&t->r, 10) - 3;

	check(t, "shutdown", shutdown(fd, how), E(ENOTCONN, EINVAL), NULL);
}

static void op_names(struct thread_ctx *t, int fd)
{
	struct sockaddr_bus sa;
	socklen_t len = below(&t->r, sizeof(sa) + 1);

	if (chance(&t->r, 50))
		check(t, "getsockname", getsockname(fd, (struct sockaddr *)&sa, &len),
		      E(EINVAL), NULL);
	else
		check(t, "getpeername", getpeername(fd, (struct sockaddr *)&sa, &len),
		      E(ENOTCONN, EINVAL), NULL);
}

static void op_ioctl(struct thread_ctx *t, int fd)
{
	static const unsigned long cmds[] = { FIONREAD, SIOCOUTQ, FIONBIO,
					      SIOCATMARK, SIOCOUTQNSD,
					      SIOCGSTAMP_OLD };
	int val = below(&t->r, 2);

	check(t, "ioctl", ioctl(fd, cmds[below(&t->r, 6)], &val),
	      E(ENOTTY, EOPNOTSUPP, EINVAL, ENOENT), NULL);
}

static void op_poll(struct thread_ctx *t)
{
	struct pollfd pfd[4];
	unsigned int i, n = 1 + below(&t->r, 4);

	for (i = 0; i < n; i++) {
		pfd[i].fd = slot_get(&t->r);
		pfd[i].events = POLLIN | POLLOUT | POLLRDHUP | POLLPRI;
	}
	check(t, "poll", poll(pfd, n, below(&t->r, 20)), E(EINVAL), NULL);
}

static void op_fcntl(struct thread_ctx *t, int fd)
{
	(void)t;
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl ^ O_NONBLOCK);
}

static void op_dup(struct thread_ctx *t, int fd)
{
	int other = slot_get(&t->r), n;

	if (chance(&t->r, 20) && other >= 3) {
		/* replace another slot's file under its number */
		dup2(fd, other);
		return;
	}
	n = dup(fd);
	if (n >= 0)
		slot_put(&t->r, n);
}

static void op_close(struct thread_ctx *t)
{
	int fd = __atomic_exchange_n(&w.slots[below(&t->r, NSLOTS)], -1,
				     __ATOMIC_RELAXED);

	if (fd >= 0)
		close(fd);
}

/* Read /proc/net/bus while the sockets it lists come and go. */
static void op_proc(struct thread_ctx *t)
{
	char buf[4096];
	int fd = open("/proc/net/bus", O_RDONLY);
	ssize_t n;

	check(t, "open(/proc/net/bus)", fd, E(ENOENT), NULL);
	if (fd < 0)
		return;
	do
		n = read(fd, buf, below(&t->r, sizeof(buf)) + 1);
	while (n > 0);
	check(t, "read(/proc/net/bus)", n, E(0), NULL);
	close(fd);
}

/* Raise or lower CAP_SYS_ADMIN in this thread's effective set. */
static int sys_admin(bool on)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	const unsigned int bit = 1u << (CAP_SYS_ADMIN % 32);

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	if (on)
		data[CAP_SYS_ADMIN / 32].effective |= bit;
	else
		data[CAP_SYS_ADMIN / 32].effective &= ~bit;
	return syscall(SYS_capset, &hdr, data);
}

/*
 * Rarely: this thread goes on in a new network namespace (which needs
 * CAP_SYS_ADMIN, kept in the permitted set for this alone).
 */
static void op_netns(struct thread_ctx *t)
{
	int ret;

	if (t->netns_moves >= 2 || !chance(&t->r, 5))
		return;
	t->netns_moves++;
	if (sys_admin(true))
		_exit(3);
	ret = unshare(CLONE_NEWNET);
	check(t, "unshare(CLONE_NEWNET)", ret, E(ENOSPC, ENOMEM), NULL);
	if (sys_admin(false))
		_exit(3);
	if (ret == 0) {
		__atomic_add_fetch(&sh->netns_moves, 1, __ATOMIC_RELAXED);
		nfdbus_netns_moved(t);
	}
}

/* Rarely: a new network namespace, or a read of /proc/net/bus. */
static void op_rare(struct thread_ctx *t)
{
	if (chance(&t->r, 50))
		op_netns(t);
	else
		op_proc(t);
}

/*
 * The operations and how often they are drawn (out of 100): those with
 * `any` make their own sockets, those with `on_fd` work on a socket of
 * the slots (nothing, when the slot drawn is empty).
 */
static const struct fuzz_op {
	unsigned int weight;
	void (*any)(struct thread_ctx *t);
	void (*on_fd)(struct thread_ctx *t, int fd);
} fuzz_ops[] = {
	{ 4, op_socket, NULL },
	{ 2, op_master, NULL },
	{ 2, op_session, NULL },
	{ 6, op_client, NULL },
	{ 5, op_close, NULL },
	{ 2, op_poll, NULL },
	{ 1, op_rare, NULL },
	{ 4, op_nfdbus, NULL },
	{ 2, NULL, op_bind },
	{ 2, NULL, op_listen },
	{ 8, NULL, op_accept },
	{ 3, NULL, op_connect },
	{ 3, NULL, op_dbus_mcast },
	{ 20, NULL, op_send },
	{ 17, NULL, op_recv },
	{ 8, NULL, op_setsockopt },
	{ 3, NULL, op_getsockopt },
	{ 3, NULL, op_shutdown },
	{ 2, NULL, op_names },
	{ 1, NULL, op_ioctl },
	{ 1, NULL, op_fcntl },
	{ 1, NULL, op_dup },
};

/* One random operation. */
static void one_op(struct thread_ctx *t)
{
	unsigned int i, pick = below(&t->r, 100);
	int fd = slot_get(&t->r);

	for (i = 0; i < sizeof(fuzz_ops) / sizeof(fuzz_ops[0]); i++) {
		if (pick >= fuzz_ops[i].weight) {
			pick -= fuzz_ops[i].weight;
			continue;
		}
		if (fuzz_ops[i].any) {
			fuzz_ops[i].any(t);
		} else if (fd >= 0) {
			operate_on(t, fd);
			fuzz_ops[i].on_fd(t, fd);
			operate_on(t, -1);
		}
		return;
	}
}

/* ---- worker process ---- */

static void on_signal(int sig)
{
	(void)sig;
}

static void *op_thread(void *arg)
{
	struct thread_ctx *t = arg;

	__atomic_store_n(&w.tids[t->idx], gettid(), __ATOMIC_RELEASE);
	while (!stopping())
		one_op(t);
	nfdbus_thread_end(t);
	__atomic_add_fetch(&sh->ops, t->nops, __ATOMIC_RELAXED);
	__atomic_store_n(&w.tids[t->idx], 0, __ATOMIC_RELEASE);
	return NULL;
}

/* Interrupt a random busy thread every few milliseconds. */
static void ticker(struct rng *r, unsigned int nthreads)
{
	struct timespec ts;
	unsigned int i, live;
	pid_t tid;

	do {
		ts.tv_sec = 0;
		ts.tv_nsec = (2 + below(r, 30)) * 1000000L;
		nanosleep(&ts, NULL);
		for (i = 0, live = 0; i < nthreads; i++)
			live += __atomic_load_n(&w.tids[i], __ATOMIC_ACQUIRE) != 0;
		tid = __atomic_load_n(&w.tids[below(r, nthreads)], __ATOMIC_ACQUIRE);
		if (tid)
			tgkill(getpid(), tid, SIGUSR1);
	} while (live || !stopping());
}

/*
 * Workers run without CAP_NET_ADMIN, CAP_SYS_RESOURCE and CAP_SYS_ADMIN,
 * so that the limits the kernel enforces on unprivileged senders (send
 * buffer within wmem_max, files in flight within RLIMIT_NOFILE) hold and
 * random buffer sizes cannot make the guest run out of memory; nfdbus
 * lets them change rules because they have the uid of the bus masters.
 * CAP_SYS_ADMIN stays permitted, not effective: op_netns() raises it
 * around unshare(CLONE_NEWNET) only.
 */
static void drop_caps(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	static const int drop[] = { CAP_NET_ADMIN, CAP_SYS_RESOURCE,
				    CAP_SYS_ADMIN };
	unsigned int i;

	if (syscall(SYS_capget, &hdr, data))
		return;
	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		data[drop[i] / 32].effective &= ~(1u << (drop[i] % 32));
		if (drop[i] != CAP_SYS_ADMIN)
			data[drop[i] / 32].permitted &= ~(1u << (drop[i] % 32));
		data[drop[i] / 32].inheritable &= ~(1u << (drop[i] % 32));
	}
	if (syscall(SYS_capset, &hdr, data))
		_exit(3);
}

static void worker_main(unsigned int idx, unsigned int gen)
{
	struct thread_ctx ctx[MAX_THREADS];
	struct sigaction sa = { .sa_handler = on_signal };
	struct rng tick;
	unsigned int i;

	memset(&w, 0, sizeof(w));
	w.idx = idx;
	w.gen = gen;
	w.seed = mix_seed(opt_seed, idx, gen, 0);
	for (i = 0; i < NSLOTS; i++)
		w.slots[i] = -1;
	w.zeros = calloc(1, BIGMSG);
	if (!w.zeros)
		_exit(2);
	drop_caps();
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: calls fail EINTR */
	signal(SIGPIPE, SIG_IGN);
	tick.s = mix_seed(opt_seed, idx, gen, 999);
	for (i = 0; i < opt_threads; i++) {
		ctx[i] = (struct thread_ctx){
			.idx = i,
			.r.s = mix_seed(opt_seed, idx, gen, i + 1),
			.fd = -1,
			.buf = malloc(BIGMSG),
		};
		if (!ctx[i].buf || pthread_create(&w.threads[i], NULL, op_thread,
						  &ctx[i]))
			_exit(2);
	}
	ticker(&tick, opt_threads);
	for (i = 0; i < opt_threads; i++)
		pthread_join(w.threads[i], NULL);
	_exit(0);
}

static pid_t spawn(unsigned int idx, unsigned int gen)
{
	pid_t pid = fork();

	if (pid == 0)
		worker_main(idx, gen);
	return pid;
}

/* ---- supervisor ---- */

/* Print a small /proc file, prefixed with what it is. */
static void print_file(const char *path, const char *what, int tid)
{
	char buf[1024];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	ksft_print_msg("thread %d %s: %s%s", tid, what, buf,
		       buf[n - 1] == '\n' ? "" : "\n");
}

/* Where every thread of a stuck worker waits (wchan, kernel stack). */
static void dump_task(pid_t pid)
{
	char path[128];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		int tid = atoi(d->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, tid);
		print_file(path, "waits in", tid);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, tid);
		print_file(path, "stack", tid);
	}
	closedir(dir);
}

/* Wait for pid until deadline (monotonic ms); true if it exited. */
static bool wait_until(pid_t pid, int *status, long deadline_ms)
{
	struct timespec ts;

	for (;;) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec * 1000L + ts.tv_nsec / 1000000 > deadline_ms)
			return false;
		usleep(20000);
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static uint64_t parse_u64(const char *s)
{
	return strtoull(s, NULL, 0);
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-s SEED] [-t SECONDS] [-p PROCESSES] "
		"[-j THREADS] [-n] [-v]\n", argv0);
	exit(KSFT_FAIL);
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_PROCS];
	unsigned int gens[MAX_PROCS] = { 0 }, i;
	struct bus_counts base, after;
	struct rng sup;
	bool stuck = false, back;
	long end;
	int c, status;

	if (getenv("AFBUS_FUZZ_SECONDS"))
		opt_seconds = parse_u64(getenv("AFBUS_FUZZ_SECONDS"));
	if (getenv("AFBUS_FUZZ_SEED") && *getenv("AFBUS_FUZZ_SEED"))
		opt_seed = parse_u64(getenv("AFBUS_FUZZ_SEED"));
	else
		opt_seed = ((uint64_t)time(NULL) << 20) ^ getpid() ^
			   ((uint64_t)now_ms() << 40);
	while ((c = getopt(argc, argv, "s:t:p:j:nv")) != -1) {
		switch (c) {
		case 's': opt_seed = parse_u64(optarg); break;
		case 't': opt_seconds = parse_u64(optarg); break;
		case 'p': opt_procs = parse_u64(optarg); break;
		case 'j': opt_threads = parse_u64(optarg); break;
		case 'n': opt_nokill = true; break;
		case 'v': opt_verbose = true; break;
		default: usage(argv[0]);
		}
	}
	if (!opt_procs || opt_procs > MAX_PROCS || !opt_threads ||
	    opt_threads > MAX_THREADS)
		usage(argv[0]);

	ksft_print_header();
	ksft_set_plan(3);
	ksft_print_msg("seed %#" PRIx64 ", %u s, %u processes x %u threads%s\n",
		       opt_seed, opt_seconds, opt_procs, opt_threads,
		       opt_nokill ? ", no kills" : "");
	ksft_print_msg("replay: af_bus_fuzz -s %#" PRIx64 " -t %u -p %u -j %u%s\n",
		       opt_seed, opt_seconds, opt_procs, opt_threads,
		       opt_nokill ? " -n" : "");
	fflush(stdout);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	mkdir(FUZZ_DIR, 0755);
	if (chdir(FUZZ_DIR))
		ksft_exit_fail_msg("chdir %s: %s\n", FUZZ_DIR, strerror(errno));
	base = bus_counts_now();
	bus_counts_print(stdout, "before", &base);

	for (i = 0; i < opt_procs; i++)
		pids[i] = spawn(i, 0);
	sup.s = mix_seed(opt_seed, 0xfff, 0, 0);
	end = now_ms() + opt_seconds * 1000L;
	while (now_ms() < end) {
		usleep((500 + below(&sup, 3000)) * 1000);
		if (opt_nokill || now_ms() >= end)
			continue;
		i = below(&sup, opt_procs);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		sh->kills++;
		pids[i] = spawn(i, ++gens[i]);
	}

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < opt_procs; i++) {
		if (wait_until(pids[i], &status, now_ms() + STUCK_S * 1000L) &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		stuck = true;
		ksft_print_msg("worker %u (pid %d) did not finish cleanly within %d s\n",
			       i, (int)pids[i], STUCK_S);
		dump_task(pids[i]);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
	for (i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), FUZZ_DIR "/bus%u", i);
		unlink(path);
	}
	ksft_print_msg("%" PRIu64 " operations, %" PRIu64 " clients accepted, %"
		       PRIu64 " messages sent (%" PRIu64 " with SCM_RIGHTS), %" PRIu64
		       " received (%" PRIu64 " files), %" PRIu64 " workers killed\n",
		       sh->ops, sh->accepted, sh->sent, sh->fds_passed, sh->received,
		       sh->fds_received, sh->kills);
	ksft_print_msg("%" PRIu64 " unexpected results on descriptors that were no "
		       "longer AF_BUS sockets (close races)\n", sh->raced);
	ksft_print_msg("nfdbus: %" PRIu64 " EPERM for a bus whose master was going away "
		       "(tolerated; nfdbus should say ENOENT)\n", sh->perm_races);
	ksft_print_msg("nfdbus: %" PRIu64 " requests (%" PRIu64 " succeeded, %"
		       PRIu64 " rules added, %" PRIu64 " resyncs); %" PRIu64
		       " D-Bus multicasts sent, %" PRIu64 " refused as malformed, %"
		       PRIu64 " strictly checked; %" PRIu64 " network namespace moves\n",
		       sh->nl_requests, sh->nl_ok, sh->rules_added, sh->nl_resync,
		       sh->dbus_sent, sh->dbus_refused, sh->dbus_strict,
		       sh->netns_moves);

	/* again here, where the end of a long log shows them */
	for (i = 0; i < (unsigned int)sh->nreports && i < MAX_REPORTS; i++)
		ksft_print_msg("unexpected: %s\n", sh->reports[i]);
	if (sh->unexpected)
		ksft_test_result_fail("%" PRIu64 " unexpected results (seed %#" PRIx64 ")\n",
				      sh->unexpected, opt_seed);
	else
		ksft_test_result_pass("every call gave a documented result\n");
	if (stuck)
		ksft_test_result_fail("workers stuck after the end (seed %#" PRIx64 ")\n",
				      opt_seed);
	else
		ksft_test_result_pass("every worker finished\n");
	/* Descriptors in flight in cycles wait for a garbage collector. */
	if (!bus_counts_valid(&base)) {
		ksft_test_result_fail("cannot count AF_BUS sockets and slab objects (CONFIG_SLUB_DEBUG?)\n");
		ksft_finished();
	}
	back = bus_counts_settle(&base, &after, 15000);
	bus_counts_print(stdout, "after", &after);
	if (back)
		ksft_test_result_pass("AF_BUS sockets and slab objects back at the start\n");
	else
		ksft_test_result_fail("AF_BUS sockets or slab objects leaked (seed %#" PRIx64 ")\n",
				      opt_seed);
	ksft_finished();
}
