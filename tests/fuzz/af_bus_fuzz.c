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
 * Among that traffic are clients that never read (some with a small
 * SO_RCVBUF or a short queue), eavesdroppers and BUS_SET_MCAST_DROP
 * members that never read; AF_UNIX socket pairs whose sockets travel in
 * AF_BUS messages; and AF_UNIX sends of AF_BUS sockets (cycles through
 * both families included), which AF_UNIX must refuse with EOPNOTSUPP.
 * Now and then a worker thread forks a flow check (flow_child()): on a
 * bus of its own, out of reach of the other threads, it fills a client
 * that never reads and checks that while it is full the same sender's
 * messages to a reader with room still go out, that eavesdroppers and
 * MCAST_DROP members drop and count instead of holding anyone up, and
 * the same AF_UNIX rules, with exact expectations.  A ticker
 * thread in each worker interrupts blocked calls with signals, and the
 * supervisor kill -9s a random worker every few seconds and starts a
 * new one.  The bus names (four abstract, two filesystem) are shared by
 * all workers, so buses and their clients span processes.
 *
 * Its tests (kselftest results, in this order) fail
 *   1. when a call returns an errno outside the set
 *      Documentation/networking/af_bus.rst (or nfdbus.rst) allows for
 *      it, or when nfdbus refuses a valid rule or message or accepts an
 *      invalid one (see nfdbus_ops.c for exactly which);
 *   2. when a flow check finds a sender held up by a recipient it did
 *      not send to, or anything else it expects otherwise (see the
 *      comment before flow_child()); skipped when none finished;
 *   3. when AF_UNIX carries an AF_BUS socket or refuses it other than
 *      with EOPNOTSUPP, or an AF_UNIX socket passed in an AF_BUS message
 *      does not arrive working; skipped when no refusal was seen;
 *   4. when a worker does not finish within 30 seconds of the end;
 *   5-9. when, once every worker is gone and the garbage collector had
 *      up to 15 seconds, the AF_BUS sockets of /proc/net/bus, of
 *      /proc/net/protocols, "sockets: used" (and any AF_BUS line) of
 *      /proc/net/sockstat, the AF_BUS slab objects (/proc/slabinfo and
 *      /sys/kernel/slab/AF_BUS) or the UNIX and UNIX-STREAM ones are not
 *      back at their values from before the first worker started (each
 *      mismatch is printed with both numbers; the slab ones are skipped
 *      when /proc/slabinfo cannot be read).
 * Every failure is also printed as "# UNEXPECTED: ..." when it happens
 * (the first 20; -v: all) and again at the end.  Kernel reports (KASAN,
 * lockdep, ...) are caught by whoever reads the kernel log (run-qemu.sh
 * does).
 *
 * Usage: af_bus_fuzz [-s SEED] [-t SECONDS] [-p PROCESSES] [-j THREADS]
 *                    [-n] [-v]
 *   -s SEED   seed (default: random); printed first, so a run can be
 *             replayed.  Every thread draws its decisions from a
 *             generator seeded by (SEED, process, restart, thread), so
 *             the same seed makes the same choices (a flow check, from
 *             a seed its thread draws); with -p 1 -j 1 -n the run
 *             repeats exactly up to timing.
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
#include <grp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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
#include <linux/sock_diag.h>
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
#define NIDLE		6	/* clients that never read, per worker */
#define NUNIX		8	/* AF_UNIX sockets, per worker */
#define SETTLE_MS	15000	/* for the counts to come back at the end */

/* ---- options and shared state ---- */

static uint64_t opt_seed;
static unsigned int opt_seconds = 120, opt_procs = 4, opt_threads = 3;
static bool opt_nokill, opt_verbose;

struct fuzz_shared *sh;
unsigned int worker_netns_moves;

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
	/*
	 * Clients that never read (no operation takes them from here to
	 * read), and AF_UNIX sockets, which the operations on the slots
	 * do not expect: both tables are apart from the slots.
	 */
	int idle[NIDLE];
	int unix_fds[NUNIX];
	int flow_busy;			/* a flow check child is running */
	long flow_next;			/* no new flow check before (ms) */
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

int slot_at(unsigned int i)
{
	return __atomic_load_n(&w.slots[i % NSLOTS], __ATOMIC_RELAXED);
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

/* The same for the tables of clients that never read and AF_UNIX sockets */
static void table_put(int *table, unsigned int n, struct rng *r, int fd)
{
	int old;

	if (fd < 0)
		return;
	old = __atomic_exchange_n(&table[below(r, n)], fd, __ATOMIC_RELAXED);
	if (old >= 0)
		close(old);
}

static void table_close(int *table, unsigned int n, struct rng *r)
{
	int fd = __atomic_exchange_n(&table[below(r, n)], -1, __ATOMIC_RELAXED);

	if (fd >= 0)
		close(fd);
}

static void idle_put(struct rng *r, int fd)
{
	table_put(w.idle, NIDLE, r, fd);
}

static void unix_put(struct rng *r, int fd)
{
	table_put(w.unix_fds, NUNIX, r, fd);
}

static int unix_get(struct rng *r)
{
	return __atomic_load_n(&w.unix_fds[below(r, NUNIX)], __ATOMIC_RELAXED);
}

/* The address family of socket fd, or -1. */
static int sock_domain(int fd)
{
	int domain;
	socklen_t len = sizeof(domain);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len))
		return -1;
	return domain;
}

/*
 * What a descriptor names, to tell afterwards whether another thread
 * closed it (or put another file under its number) meanwhile.
 */
struct fd_id {
	int domain;		/* the socket's family, -1: not a socket */
	dev_t dev;
	ino_t ino;		/* 0: not open */
};

static void fd_ident(int fd, struct fd_id *id)
{
	struct stat st;

	id->domain = -1;
	id->dev = 0;
	id->ino = 0;
	if (fd < 0 || fstat(fd, &st))
		return;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	if (S_ISSOCK(st.st_mode))
		id->domain = sock_domain(fd);
}

static bool fd_id_same(int fd, const struct fd_id *was)
{
	struct fd_id now;

	fd_ident(fd, &now);
	return now.ino && now.ino == was->ino && now.dev == was->dev &&
	       now.domain == was->domain;
}

/* ---- errno checking ---- */

static bool in_list(const int *list, int err)
{
	for (; *list; list++)
		if (*list == err)
			return true;
	return false;
}

/*
 * Count one failure in *counter and keep its line for the end; the first
 * MAX_REPORTS (every one with -v) are printed at once as well.
 */
static void vreport(uint64_t *counter, const char *kind, const char *fmt,
		    va_list ap)
{
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "%s", kind);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	n = __atomic_fetch_add(&sh->nreports, 1, __ATOMIC_RELAXED);
	if (n < MAX_REPORTS)
		memcpy(sh->reports[n], line, sizeof(line));
	if (n < MAX_REPORTS || opt_verbose)
		fprintf(stderr, "# UNEXPECTED: %s\n", line);
}

/* A call gave a result af_bus.rst (or nfdbus.rst) does not allow. */
void report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(&sh->unexpected, "", fmt, ap);
	va_end(ap);
}

/* The flow checks (flow_child()) found a sender held up, or worse. */
static void __attribute__((format(printf, 1, 2)))
report_flow(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(&sh->flow_failures, "flow: ", fmt, ap);
	va_end(ap);
}

/* AF_UNIX carried an AF_BUS socket, or AF_BUS would not carry AF_UNIX. */
static void __attribute__((format(printf, 1, 2)))
report_xfam(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(&sh->xfam_failures, "cross-family: ", fmt, ap);
	va_end(ap);
}

static void count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
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

/* ---- clients that never read ---- */

static const int *setsockopt_errs = E(EINVAL, ENOPROTOOPT, EPERM, EFAULT,
				      EDOM, EOPNOTSUPP, ENOTSUPP, ENOENT,
				      EBUSY);

/* Half the clients that never read have a small receive buffer. */
static void idle_rcvbuf(struct thread_ctx *t, int c)
{
	int size = 1 + below(&t->r, 16384);

	if (!chance(&t->r, 50))
		return;
	operate_on(t, c);
	check(t, "setsockopt(SO_RCVBUF)",
	      setsockopt(c, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)),
	      setsockopt_errs, "never reads");
	operate_on(t, -1);
}

/*
 * The master's side of a client that never reads, accepted socket a:
 * join it, and make it an eavesdropper (whose copies are dropped once it
 * is full), a BUS_SET_MCAST_DROP member of prefix 1 (which misses
 * multicasts once it is full), or leave it a plain client (which holds
 * up every message sent to it once it is full), sometimes with a short
 * queue.
 */
static void idle_config(struct thread_ctx *t, int a)
{
	struct rng *r = &t->r;
	int one = 1, qlen = 1 + below(r, 16);
	__u64 addr = ((__u64)1 << BUS_PREFIX_SHIFT) | (1 + below(r, 8));

	operate_on(t, a);
	check(t, "setsockopt(BUS_JOIN_BUS)",
	      setsockopt(a, SOL_BUS, BUS_JOIN_BUS, NULL, 0), sol_bus_errs,
	      "never reads");
	switch (below(r, 3)) {
	case 0:
		check(t, "setsockopt(BUS_SET_EAVESDROP)",
		      setsockopt(a, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0),
		      sol_bus_errs, "never reads");
		count(&sh->idle_eavesdrop);
		break;
	case 1:
		/* addresses that random_addr() sends to */
		check(t, "setsockopt(BUS_ADD_ADDR)",
		      bus_opt_addr(a, BUS_ADD_ADDR, addr), sol_bus_errs,
		      "never reads");
		check(t, "setsockopt(BUS_SET_MCAST_DROP)",
		      setsockopt(a, SOL_BUS, BUS_SET_MCAST_DROP, &one,
				 sizeof(one)), sol_bus_errs, "never reads");
		count(&sh->idle_mcast_drop);
		break;
	}
	if (chance(r, 50))
		check(t, "setsockopt(BUS_SET_MAXQLEN)",
		      setsockopt(a, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
				 sizeof(qlen)), sol_bus_errs, "never reads");
	operate_on(t, -1);
}

/*
 * A client that never reads, among the random traffic of a pool name:
 * of our own new master there (then configured by idle_config()), or of
 * whoever holds the name.  Or one of them goes away, which lets the
 * senders waiting for it go on.
 */
static void op_idle(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	struct sockaddr_bus sa;
	socklen_t len;
	int m = -1, c, a;

	if (chance(r, 25)) {
		table_close(w.idle, NIDLE, r);
		return;
	}
	pool_name(below(r, NNAMES), &sa, &len);
	if (chance(r, 50)) {
		m = new_socket(t);
		if (m >= 0 && sa.sbus_path[0] && chance(r, 30))
			unlink(sa.sbus_path);
		if (m >= 0 && (bind(m, (struct sockaddr *)&sa, len) ||
			       listen(m, 8))) {
			close(m);
			m = -1;
		}
	}
	c = new_socket(t);
	if (c >= 0) {
		idle_rcvbuf(t, c);
		if (connect(c, (struct sockaddr *)&sa, len)) {
			close(c);
			c = -1;
		}
	}
	if (c >= 0 && m >= 0) {
		a = accept4(m, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (a >= 0) {
			set_short_timeouts(a, r);
			idle_config(t, a);
			slot_put(r, a);
		}
	}
	if (c >= 0)
		count(&sh->idle_made);
	idle_put(r, c);
	if (m >= 0)
		slot_put(r, m);
}

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
	bool never_reads = chance(r, 25), idle;

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
		/* sometimes the first client never reads: the burst fills it */
		idle = never_reads;
		never_reads = false;
		if (idle)
			idle_rcvbuf(t, c);
		if (connect(c, (struct sockaddr *)&sa, len)) {
			close(c);
			continue;
		}
		if (idle) {
			count(&sh->idle_made);
			idle_put(r, c);
		} else {
			fds[n++] = c;
		}
		if (m < 0)
			continue;
		a = accept4(m, NULL, NULL, SOCK_NONBLOCK);
		if (a < 0)
			continue;
		if (idle) {
			idle_config(t, a);
			fds[n++] = a;
			continue;
		}
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
	case 3:		/* descriptors: AF_BUS sockets, this one too, AF_UNIX ones */
		nfds = 1 + below(r, 6);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		fds = (int *)CMSG_DATA(c);
		for (i = 0; i < nfds; i++) {
			/* AF_UNIX sockets too, as D-Bus passes them */
			fds[i] = chance(r, 15) ? unix_get(r) : -1;
			if (fds[i] < 0)
				fds[i] = chance(r, 30) ? fd : slot_get(r);
		}
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

static const int *send_errs = E(ENOTCONN, EOPNOTSUPP, EHOSTUNREACH, EMSGSIZE,
				EPIPE, ECONNREFUSED, EAGAIN, ENOBUFS, EINVAL,
				EPERM, ESRCH, ETOOMANYREFS, ECONNRESET, EDQUOT);

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
	check(t, "sendmsg", n, send_errs, NULL);
	if (n >= 0) {
		__atomic_add_fetch(&sh->sent, 1, __ATOMIC_RELAXED);
		if (rights)
			__atomic_add_fetch(&sh->fds_passed, 1, __ATOMIC_RELAXED);
	}
}

/*
 * A room notification (BUS_ROOM_NOTIFY, MSG_ERRQUEUE): a struct bus_addr
 * (what fits of it), flagged MSG_ERRQUEUE, or EAGAIN at once.
 */
static void recv_room(struct thread_ctx *t, int fd, struct msghdr *msg,
		      int flags)
{
	struct bus_addr a;
	struct iovec iov = { .iov_base = &a, .iov_len = sizeof(a) };
	ssize_t n;

	if (chance(&t->r, 80)) {
		msg->msg_iov = &iov;
		msg->msg_iovlen = 1;
	}
	msg->msg_flags = 0;
	n = recvmsg(fd, msg, flags | MSG_ERRQUEUE);
	check(t, "recvmsg MSG_ERRQUEUE", n, E(ENOTCONN, EOPNOTSUPP, EAGAIN,
					      EINVAL), NULL);
	if (n < 0)
		return;
	count(&sh->room_read);
	if (!(msg->msg_flags & MSG_ERRQUEUE) ||
	    n > (ssize_t)sizeof(a) ||
	    (n < (ssize_t)sizeof(a) && !(msg->msg_flags & MSG_TRUNC))) {
		if (fd == t->fd && !same_bus_socket(t)) {
			/* a close race, as in check(): not this socket's */
			__atomic_add_fetch(&sh->raced, 1, __ATOMIC_RELAXED);
			return;
		}
		count(&sh->room_bad);
		report("worker thread %u: a room notification of %zd bytes, flags %#x",
		       t->idx, n, msg->msg_flags);
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
	if (chance(r, 10)) {
		recv_room(t, fd, &msg, flags);
		return;
	}
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
			if (!chance(r, 50))
				close(fds[i]);
			else if (sock_domain(fds[i]) == AF_UNIX)
				unix_put(r, fds[i]);	/* not for the slots */
			else
				slot_put(r, fds[i]);
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
		name = chance(r, 80) ? (int)(1 + below(r, 12)) : (int)below(r, 40) - 2;
		if ((name == BUS_SET_SENDBUF || name == BUS_SET_MAXQLEN ||
		     name == BUS_SET_RCVBUF || name == BUS_SET_MCAST_DROP ||
		     name == BUS_SET_MSG_MAX || name == BUS_NO_DEFAULT_ROUTE ||
		     name == BUS_ROOM_NOTIFY) &&
		    chance(r, 80)) {
			/* mostly sensible values, sometimes out of range */
			if (name == BUS_SET_MCAST_DROP ||
			    name == BUS_NO_DEFAULT_ROUTE ||
			    name == BUS_ROOM_NOTIFY)
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
	      setsockopt_errs, detail);
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
		__atomic_add_fetch(&worker_netns_moves, 1, __ATOMIC_RELAXED);
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

/* ---- AF_UNIX sockets ---- */

static const int unix_types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };

/*
 * sendmsg of size bytes (at least one, or a stream socket sends no
 * files) from data, with the nfds descriptors of fds (at most 16) in
 * SCM_RIGHTS, to *to (NULL: the peer), never waiting.
 */
static ssize_t send_fds(int fd, const struct sockaddr_bus *to, socklen_t tolen,
			const void *data, size_t size, const int *fds,
			unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(16 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (to) {
		msg.msg_name = (void *)to;
		msg.msg_namelen = tolen;
	}
	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

#define MAX_RECV_FDS	64

/*
 * recvmsg into buf, never waiting; the descriptors that came (at most
 * MAX_RECV_FDS) are put in fds, their number in *nfds, the flags of the
 * message in *mflags (if not NULL), the sender in *from (if not NULL).
 */
static ssize_t recv_fds(int fd, struct sockaddr_bus *from, void *buf,
			size_t size, int *fds, unsigned int *nfds, int *mflags)
{
	union {
		char buf[CMSG_SPACE(MAX_RECV_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	unsigned int i, k;
	ssize_t n;

	*nfds = 0;
	if (from) {
		memset(from, 0, sizeof(*from));
		msg.msg_name = from;
		msg.msg_namelen = sizeof(*from);
	}
	n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	if (mflags)
		*mflags = msg.msg_flags;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k && *nfds < MAX_RECV_FDS; i++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
	}
	return n;
}

static void close_all(const int *fds, unsigned int n)
{
	while (n--)
		close(fds[n]);
}

/*
 * Judge sendmsg(u) on an AF_UNIX socket whose SCM_RIGHTS held n files,
 * AF_BUS sockets among them (ids: what u and fds named just before).  It
 * must fail with EOPNOTSUPP (patch "af_unix: refuse to pass AF_BUS
 * sockets"), unless AF_UNIX could not send at all, for errors it gives
 * before it looks at the files (the socket or its peer shut down, its
 * buffer full, or ECONNRESET: the error a peer that closed with unread
 * data left on the socket, which sock_alloc_send_pskb() reports first),
 * or another thread closed a descriptor meanwhile or put another file
 * under its number.
 */
static void unix_judge(struct thread_ctx *t, const char *what, ssize_t ret,
		       int err, int u, const struct fd_id *uid, const int *fds,
		       const struct fd_id *ids, unsigned int n)
{
	unsigned int i, nbus = 0;
	bool same = fd_id_same(u, uid);

	t->nops++;
	for (i = 0; i < n; i++) {
		same = same && fd_id_same(fds[i], &ids[i]);
		nbus += ids[i].domain == AF_BUS;
	}
	if (ret < 0 && err == EOPNOTSUPP) {
		count(&sh->unix_refused);
		return;
	}
	if (!same || (ret < 0 && err == EBADF)) {
		count(&sh->unix_raced);
		return;
	}
	if (ret < 0 && in_list(E(EPIPE, ENOTCONN, ECONNRESET, EAGAIN, EINTR,
				 ENOMEM, ENOBUFS, ETOOMANYREFS), err)) {
		count(&sh->unix_nosend);
		return;
	}
	if (ret >= 0)
		report_xfam("worker %u.%u thread %u op %" PRIu64 ": %s: an AF_UNIX socket sent %u AF_BUS socket(s) (of %u files)",
			    w.idx, w.gen, t->idx, t->nops, what, nbus, n);
	else
		report_xfam("worker %u.%u thread %u op %" PRIu64 ": %s: AF_UNIX sendmsg with %u AF_BUS socket(s): %s (errno %d), not EOPNOTSUPP",
			    w.idx, w.gen, t->idx, t->nops, what, nbus,
			    strerror(err), err);
}

/*
 * AF_BUS sockets of the slots (in any state: masters, clients, accepted
 * sockets, sockets in flight, closing), sometimes with the AF_UNIX
 * socket itself, over an AF_UNIX socket of the table or of a new pair.
 */
static void unix_pass_bus(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	int u = unix_get(r), sv[2] = { -1, -1 }, fds[4];
	unsigned int i, n = 1 + below(r, 4), nbus = 0;
	size_t size = 1 + below(r, 64);
	int type = unix_types[below(r, 3)];
	bool fresh = chance(r, 50);
	struct fd_id uid, ids[4];
	ssize_t ret;
	int err;

	if (fresh) {
		/* both ends open: nothing stops the send but the files */
		if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv)) {
			check(t, "socketpair(AF_UNIX)", -1, E(EMFILE, ENFILE),
			      NULL);
			return;
		}
		u = sv[0];
	}
	for (i = 0; i < n; i++)
		fds[i] = chance(r, 15) ? u : slot_get(r);
	fd_ident(u, &uid);
	for (i = 0; i < n; i++) {
		fd_ident(fds[i], &ids[i]);
		nbus += ids[i].domain == AF_BUS;
	}
	if (uid.domain == AF_UNIX && nbus) {
		ret = send_fds(u, NULL, 0, w.zeros, size, fds, n);
		err = errno;
		unix_judge(t, "AF_BUS sockets over AF_UNIX", ret, err, u, &uid,
			   fds, ids, n);
	}
	if (fresh) {
		unix_put(r, sv[0]);
		unix_put(r, sv[1]);
	}
}

/*
 * A cycle through both families, if AF_UNIX allowed it: one end of a new
 * AF_UNIX pair rides a message from an AF_BUS socket b of the slots to b
 * itself (or to the other end of b's pair), and then b is sent over the
 * other end.  The AF_BUS message must go (or fail as any send may); the
 * AF_UNIX one must be refused.
 */
static void unix_cycle(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	int b = slot_get(r), sv[2], type = unix_types[below(r, 3)];
	size_t size1 = 1 + below(r, 64), size2 = 1 + below(r, 64);
	bool to_self = chance(r, 70);
	struct sockaddr_bus self;
	socklen_t len = sizeof(self);
	struct fd_id uid, bid;
	ssize_t ret;
	int err;

	if (b < 0)
		return;
	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv)) {
		check(t, "socketpair(AF_UNIX)", -1, E(EMFILE, ENFILE), NULL);
		return;
	}
	count(&sh->unix_cycles);
	operate_on(t, b);
	if (to_self && getsockname(b, (struct sockaddr *)&self, &len))
		to_self = false;
	self.sbus_family = AF_BUS;
	ret = send_fds(b, to_self ? &self : NULL, SA_NOPATH, w.zeros, size1,
		       &sv[1], 1);
	check(t, "sendmsg", ret, send_errs, "with an AF_UNIX socket");
	if (ret >= 0)
		count(&sh->unix_passed);
	operate_on(t, -1);
	close(sv[1]);
	fd_ident(sv[0], &uid);
	fd_ident(b, &bid);
	if (bid.domain == AF_BUS) {
		ret = send_fds(sv[0], NULL, 0, w.zeros, size2, &b, 1);
		err = errno;
		unix_judge(t, "AF_UNIX-AF_BUS cycle", ret, err, sv[0], &uid,
			   &b, &bid, 1);
	}
	unix_put(r, sv[0]);
}

/* Read an AF_UNIX socket of the table: no AF_BUS socket may come. */
static void unix_drain(struct thread_ctx *t)
{
	int u = unix_get(&t->r), fds[MAX_RECV_FDS];
	unsigned int i, nfds, nbus = 0;
	struct fd_id uid;

	fd_ident(u, &uid);
	if (uid.domain != AF_UNIX)
		return;
	t->nops++;
	if (recv_fds(u, NULL, t->buf, 4096, fds, &nfds, NULL) < 0)
		return;
	for (i = 0; i < nfds; i++)
		nbus += sock_domain(fds[i]) == AF_BUS;
	close_all(fds, nfds);
	/* unless u was replaced by an AF_BUS socket meanwhile */
	if (nbus && fd_id_same(u, &uid))
		report_xfam("worker %u.%u thread %u op %" PRIu64 ": an AF_UNIX socket received %u AF_BUS socket(s)",
			    w.idx, w.gen, t->idx, t->nops, nbus);
}

/*
 * AF_UNIX pairs, whose sockets random_cmsg() passes in AF_BUS messages,
 * and AF_BUS sockets that AF_UNIX must refuse to pass.  No AF_UNIX
 * message of the fuzzer carries files (they are all refused), so the
 * user's AF_UNIX files in flight stay at 0 and AF_UNIX never refuses
 * with ETOOMANYREFS instead of EOPNOTSUPP.
 */
static void op_unix(struct thread_ctx *t)
{
	struct rng *r = &t->r;
	int sv[2], type = unix_types[below(r, 3)];

	switch (below(r, 8)) {
	case 0:
	case 1:
		if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) == 0) {
			unix_put(r, sv[0]);
			unix_put(r, sv[1]);
		} else {
			check(t, "socketpair(AF_UNIX)", -1, E(EMFILE, ENFILE),
			      NULL);
		}
		break;
	case 2:
	case 3:
		unix_pass_bus(t);
		break;
	case 4:
	case 5:
		unix_cycle(t);
		break;
	case 6:
		unix_drain(t);
		break;
	default:
		table_close(w.unix_fds, NUNIX, r);
		break;
	}
}

/* ---- flow checks, in a child process ---- */

/*
 * The operations above race with the other threads of their worker, so
 * all they can check is that every error is a documented one.  What
 * af_bus.rst promises about flow control needs sockets whose state is
 * known: a flow check runs in a child process of the worker, which no
 * other thread can reach the descriptors of, on a bus of its own (an
 * abstract name nobody else uses), while the random traffic goes on
 * around it.  On that bus:
 *
 *   s   the sender (sometimes with a small send buffer)
 *   f   a client that never reads, full after its fill: by a short queue
 *       limit, a small SO_RCVBUF, or bytes
 *   e   an eavesdropper that never reads, with a short queue
 *   d   a BUS_SET_MCAST_DROP member of prefix FLOW_PFX that never reads,
 *       with a short queue
 *   rd  the reader, in prefix FLOW_PFX, with the longest queue and the
 *       largest receive buffer it may have, drained before every send to
 *       it: it always has room
 *
 * and the check fails when
 *
 * - f takes more than its queue limit, or a send to f (or a unicast to
 *   d) goes out once it is full, or leaves the sender with POLLOUT;
 * - while f (and e and d) are full, a send from s, or from f's accepted
 *   socket, to rd (unicast or multicast), or from s to its master, fails
 *   (EAGAIN or anything but ETOOMANYREFS when it carries files), arrives
 *   other than as sent, or leaves the sender without POLLOUT or holding
 *   send buffer;
 * - e and d did not queue or drop (and count, SO_MEMINFO and Drops in
 *   /proc/net/bus) every copy they were sent, or f holds other than
 *   what was queued to it;
 * - an AF_UNIX socket passed in an AF_BUS message does not arrive as that
 *   socket, working;
 * - AF_UNIX passes AF_BUS sockets (all of this bus', in every role) with
 *   anything but EOPNOTSUPP, or sends anything with them, also when the
 *   AF_BUS socket's queue holds the AF_UNIX socket's peer (a cycle).
 *
 * Lack of memory or descriptors makes a flow check stop without a
 * verdict (counted as skipped).  The child's choices come from a seed
 * the thread draws, so the same seed makes the same checks.
 */

#define FLOW_PFX	2
#define FLOW_ADDR_D	(((__u64)FLOW_PFX << BUS_PREFIX_SHIFT) | 1)
#define FLOW_ADDR_RD	(((__u64)FLOW_PFX << BUS_PREFIX_SHIFT) | 2)
#define FLOW_MCAST	(((__u64)FLOW_PFX << BUS_PREFIX_SHIFT) | BUS_CLIENT_MASK)
#define FLOW_MAXMSG	65536
#define FLOW_ALARM_S	30
#define FLOW_SKIPPED	3	/* exit status of a check without verdict */
#define FLOW_UID	20000	/* + the worker's index: the user of a check */

struct flow_peer {
	const char *who;
	int c, a;		/* the client, its accepted socket */
	__u64 addr;		/* the client's prefix-0 address */
	ino_t ino;		/* the client's inode (/proc/net/bus) */
};

/* An AF_UNIX pair: pass is sent (n times) in an AF_BUS message */
struct flow_unix {
	int keep, pass;
	ino_t pass_ino;
	unsigned int n;
	int fds[3];
};

struct flow {
	struct rng r;
	uint64_t id;
	struct sockaddr_bus name;
	socklen_t namelen;
	int m;			/* the master */
	int fresh;		/* an AF_BUS socket that is on no bus */
	struct flow_peer s, f, e, d, rd;
	unsigned int qf, qe, qd;	/* queue limits of f, e and d */
	size_t fill_size;	/* of the messages that fill f */
	size_t maxsize;		/* of the other messages */
	uint64_t f_queued;	/* messages queued to f */
	uint64_t e_seen;	/* messages e got a copy of, or dropped */
	uint64_t d_mcast;	/* multicasts d got or missed */
	uint32_t seq;		/* of the last message */
	long wmem_s, wmem_fa;	/* send buffer held by s, f.a when idle */
	unsigned char *out, *in;
	bool broken;		/* stop: a failure, or no resources */
	bool skipped;		/* no resources */
};

static void __attribute__((format(printf, 3, 4)))
flow_fail(struct flow *fl, bool xfam, const char *fmt, ...)
{
	char line[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (xfam)
		report_xfam("worker %u.%u flow check %" PRIu64 ": %s", w.idx,
			    w.gen, fl->id, line);
	else
		report_flow("worker %u.%u flow check %" PRIu64 ": %s", w.idx,
			    w.gen, fl->id, line);
	/* what is known of the bus may be wrong from here on */
	fl->broken = true;
}

static bool flow_no_resources(struct flow *fl, int err)
{
	if (!in_list(E(ENOMEM, ENOBUFS, EMFILE, ENFILE), err))
		return false;
	fl->skipped = true;
	fl->broken = true;
	return true;
}

/* A call that must work (but for lack of memory or descriptors). */
static bool flow_ok(struct flow *fl, long ret, const char *who,
		    const char *what)
{
	int err = errno;

	if (ret >= 0)
		return true;
	if (!flow_no_resources(fl, err))
		flow_fail(fl, false, "%s: %s: %s (errno %d)", who, what,
			  strerror(err), err);
	return false;
}

static bool flow_setint(struct flow *fl, int fd, int level, int opt, int val,
			const char *who, const char *what)
{
	return flow_ok(fl, setsockopt(fd, level, opt, &val, sizeof(val)), who,
		       what);
}

static int getint(int fd, int opt)
{
	int val = 0;
	socklen_t len = sizeof(val);

	getsockopt(fd, SOL_SOCKET, opt, &val, &len);
	return val;
}

/* What fd holds of its send buffer (SO_MEMINFO) */
static long wmem(int fd)
{
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len))
		return -1;
	return mem[SK_MEMINFO_WMEM_ALLOC];
}

static bool pollout(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT);
}

/* A new client of the bus, accepted and (if join) joined. */
static bool flow_peer_new(struct flow *fl, struct flow_peer *p,
			  const char *who, bool join)
{
	struct sockaddr_bus sa;
	socklen_t len = sizeof(sa);
	struct stat st;

	p->who = who;
	p->c = socket(AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC, BUS_PROTO_NONE);
	if (!flow_ok(fl, p->c, who, "socket") ||
	    !flow_ok(fl, connect(p->c, (struct sockaddr *)&fl->name,
				 fl->namelen), who, "connect"))
		return false;
	p->a = accept4(fl->m, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
	if (!flow_ok(fl, p->a, who, "accept"))
		return false;
	p->addr = sa.sbus_addr.s_addr;
	len = sizeof(sa);
	if (!flow_ok(fl, getsockname(p->c, (struct sockaddr *)&sa, &len), who,
		     "getsockname") ||
	    !flow_ok(fl, fstat(p->c, &st), who, "fstat"))
		return false;
	p->ino = st.st_ino;
	if (sa.sbus_addr.s_addr != p->addr) {
		flow_fail(fl, false, "%s: accept gave address %#llx, getsockname %#llx",
			  who, (unsigned long long)p->addr,
			  (unsigned long long)sa.sbus_addr.s_addr);
		return false;
	}
	return !join || flow_ok(fl, setsockopt(p->a, SOL_BUS, BUS_JOIN_BUS,
					       NULL, 0), who, "BUS_JOIN_BUS");
}

static bool flow_setup(struct flow *fl)
{
	struct rng *r = &fl->r;
	struct flow_peer *s = &fl->s, *f = &fl->f, *e = &fl->e, *d = &fl->d,
			 *rd = &fl->rd;
	int n, sndbuf, rcvbuf;

	memset(&fl->name, 0, sizeof(fl->name));
	fl->name.sbus_family = AF_BUS;
	n = snprintf(fl->name.sbus_path + 1, sizeof(fl->name.sbus_path) - 1,
		     "afbus-fuzz-flow-%d-%" PRIu64, (int)getpid(), fl->id);
	fl->namelen = SA_NOPATH + 1 + n;
	fl->m = socket(AF_BUS, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       BUS_PROTO_NONE);
	if (!flow_ok(fl, fl->m, "master", "socket") ||
	    !flow_ok(fl, bind(fl->m, (struct sockaddr *)&fl->name, fl->namelen),
		     "master", "bind") ||
	    !flow_ok(fl, listen(fl->m, 16), "master", "listen"))
		return false;
	fl->fresh = socket(AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC,
			   BUS_PROTO_NONE);
	if (!flow_ok(fl, fl->fresh, "unconnected socket", "socket") ||
	    !flow_peer_new(fl, s, "sender", true) ||
	    !flow_peer_new(fl, f, "full client", true) ||
	    !flow_peer_new(fl, e, "eavesdropper", chance(r, 50)) ||
	    !flow_peer_new(fl, d, "MCAST_DROP member", true) ||
	    !flow_peer_new(fl, rd, "reader", true))
		return false;

	/* a small send buffer, which queued messages must not hold */
	if (chance(r, 40) &&
	    !flow_setint(fl, s->c, SOL_SOCKET, SO_SNDBUF,
			 2048 + below(r, 30000), s->who, "SO_SNDBUF"))
		return false;

	/* f: full by a short queue, a small receive buffer, or bytes */
	switch (below(r, 3)) {
	case 0:
		fl->qf = 1 + below(r, 32);
		fl->fill_size = 256;
		break;
	case 1:
		fl->qf = 256 + below(r, 1024);
		fl->fill_size = 2048;
		if (!flow_setint(fl, f->c, SOL_SOCKET, SO_RCVBUF,
				 1 + below(r, 16384), f->who, "SO_RCVBUF"))
			return false;
		break;
	default:
		fl->qf = 256 + below(r, 1024);
		fl->fill_size = 16384;
		break;
	}
	if (!flow_setint(fl, f->a, SOL_BUS, BUS_SET_MAXQLEN, fl->qf, f->who,
			 "BUS_SET_MAXQLEN"))
		return false;

	/* e: an eavesdropper with a short queue, maybe a small buffer */
	fl->qe = 1 + below(r, 8);
	if (!flow_ok(fl, setsockopt(e->a, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0),
		     e->who, "BUS_SET_EAVESDROP") ||
	    !flow_setint(fl, e->a, SOL_BUS, BUS_SET_MAXQLEN, fl->qe, e->who,
			 "BUS_SET_MAXQLEN") ||
	    (chance(r, 40) &&
	     !flow_setint(fl, e->c, SOL_SOCKET, SO_RCVBUF, 1 + below(r, 8192),
			  e->who, "SO_RCVBUF")))
		return false;

	/* d: in prefix FLOW_PFX; multicasts skip it when it is full */
	fl->qd = 1 + below(r, 8);
	if (!flow_ok(fl, bus_opt_addr(d->a, BUS_ADD_ADDR, FLOW_ADDR_D), d->who,
		     "BUS_ADD_ADDR") ||
	    !flow_setint(fl, d->a, SOL_BUS, BUS_SET_MCAST_DROP, 1, d->who,
			 "BUS_SET_MCAST_DROP") ||
	    !flow_setint(fl, d->a, SOL_BUS, BUS_SET_MAXQLEN, fl->qd, d->who,
			 "BUS_SET_MAXQLEN"))
		return false;

	/* rd: in prefix FLOW_PFX, the most room it may have */
	if (!flow_ok(fl, bus_opt_addr(rd->a, BUS_ADD_ADDR, FLOW_ADDR_RD),
		     rd->who, "BUS_ADD_ADDR") ||
	    !flow_setint(fl, rd->a, SOL_BUS, BUS_SET_MAXQLEN, 1 << 20, rd->who,
			 "BUS_SET_MAXQLEN") ||
	    !flow_setint(fl, rd->c, SOL_SOCKET, SO_RCVBUF, 1 << 22, rd->who,
			 "SO_RCVBUF"))
		return false;

	/* messages fit in the send buffer, and rd takes many of them */
	sndbuf = getint(s->c, SO_SNDBUF);
	rcvbuf = getint(rd->c, SO_RCVBUF);
	fl->maxsize = FLOW_MAXMSG;
	if ((size_t)sndbuf / 4 < fl->maxsize)
		fl->maxsize = sndbuf / 4;
	if ((size_t)rcvbuf / 4 < fl->maxsize)
		fl->maxsize = rcvbuf / 4;
	if (fl->fill_size > fl->maxsize)
		fl->fill_size = fl->maxsize;
	fl->wmem_s = wmem(s->c);
	fl->wmem_fa = wmem(f->a);
	return true;
}

/*
 * Send a message of size bytes, numbered, from fd to addr (or without
 * an address), carrying the files of u (if any).
 */
static ssize_t flow_send(struct flow *fl, int fd, bool has_dest, __u64 addr,
			 size_t size, const struct flow_unix *u)
{
	struct sockaddr_bus to = fl->name;
	socklen_t tolen = chance(&fl->r, 50) ? SA_NOPATH : fl->namelen;
	uint32_t seq = ++fl->seq;

	memcpy(fl->out, &seq, sizeof(seq));
	to.sbus_addr.s_addr = addr;
	return send_fds(fd, has_dest ? &to : NULL, tolen, fl->out, size,
			u ? u->fds : NULL, u ? u->n : 0);
}

/*
 * After a send from fd (s or f.a) returned, sent or not: it holds no
 * more of its send buffer than before it sent anything.
 */
static void flow_sender_idle(struct flow *fl, int fd, const char *who)
{
	long held = wmem(fd), idle = fd == fl->s.c ? fl->wmem_s : fl->wmem_fa;

	if (held >= 0 && idle >= 0 && held != idle)
		flow_fail(fl, false, "%s holds %ld bytes of its send buffer after sendmsg returned, %ld before it sent anything",
			  who, held, idle);
}

/* Read everything fd has (nothing, normally). */
static void flow_drain(struct flow *fl, int fd, const char *who)
{
	int fds[MAX_RECV_FDS], err;
	unsigned int nfds;

	while (recv_fds(fd, NULL, fl->in, FLOW_MAXMSG + 1, fds, &nfds,
			NULL) >= 0)
		close_all(fds, nfds);
	err = errno;
	if (err != EAGAIN && !flow_no_resources(fl, err))
		flow_fail(fl, false, "%s: recvmsg: %s (errno %d)", who,
			  strerror(err), err);
}

/*
 * A new AF_UNIX pair, whose end pass goes n times in the next AF_BUS
 * message.
 */
static bool flow_unix_new(struct flow *fl, struct flow_unix *u, unsigned int n)
{
	int sv[2], type = unix_types[below(&fl->r, 3)];
	struct stat st;
	unsigned int i;

	u->keep = u->pass = -1;
	u->n = 0;
	if (!flow_ok(fl, socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv),
		     "AF_UNIX pair", "socketpair"))
		return false;
	u->keep = sv[0];
	u->pass = sv[1];
	if (!flow_ok(fl, fstat(u->pass, &st), "AF_UNIX pair", "fstat"))
		return false;
	u->pass_ino = st.st_ino;
	u->n = n;
	for (i = 0; i < n; i++)
		u->fds[i] = u->pass;
	return true;
}

static void flow_unix_close(struct flow_unix *u)
{
	if (u->keep >= 0)
		close(u->keep);
	if (u->pass >= 0)
		close(u->pass);
	u->keep = u->pass = -1;
	u->n = 0;
}

/*
 * fd came in an AF_BUS message for u: it must be u's AF_UNIX socket that
 * was passed, have nothing to read (AF_UNIX refused what was sent to
 * it), and reach u->keep.
 */
static void flow_unix_works(struct flow *fl, int fd, const struct flow_unix *u,
			    const char *who)
{
	char c = 'x', got = 0;
	struct stat st;

	if (sock_domain(fd) != AF_UNIX || fstat(fd, &st) ||
	    st.st_ino != u->pass_ino) {
		flow_fail(fl, true, "%s got a file that is not the AF_UNIX socket passed",
			  who);
		return;
	}
	if (recv(fd, &got, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN) {
		flow_fail(fl, true, "the AF_UNIX socket %s got had something to read after AF_UNIX refused to send",
			  who);
		return;
	}
	if (send(fd, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1 ||
	    recv(u->keep, &got, 1, MSG_DONTWAIT) != 1 || got != c)
		flow_fail(fl, true, "the AF_UNIX socket %s got does not reach its peer: %s",
			  who, strerror(errno));
}

/*
 * fd must have the message just sent, size bytes from src, with u's
 * files if u.
 */
static void flow_expect(struct flow *fl, int fd, const char *who, __u64 src,
			size_t size, const struct flow_unix *u)
{
	struct sockaddr_bus from;
	int fds[MAX_RECV_FDS], mflags = 0;
	unsigned int nfds, i, want = u ? u->n : 0;
	size_t head = size < sizeof(fl->seq) ? size : sizeof(fl->seq);
	ssize_t n;

	n = recv_fds(fd, &from, fl->in, FLOW_MAXMSG + 1, fds, &nfds, &mflags);
	if (n < 0) {
		if (!flow_no_resources(fl, errno))
			flow_fail(fl, false, "%s did not get the message sent to it: %s",
				  who, strerror(errno));
		return;
	}
	if ((size_t)n != size || (mflags & MSG_TRUNC) ||
	    memcmp(fl->in, &fl->seq, head))
		flow_fail(fl, false, "%s got %zd bytes (flags %#x), not message %u of %zu bytes",
			  who, n, mflags, fl->seq, size);
	else if (from.sbus_family != AF_BUS || from.sbus_addr.s_addr != src)
		flow_fail(fl, false, "%s got a message from %#llx, not from %#llx",
			  who, (unsigned long long)from.sbus_addr.s_addr,
			  (unsigned long long)src);
	else if (nfds != want || (mflags & MSG_CTRUNC))
		flow_fail(fl, true, "%s got %u files (flags %#x), %u AF_UNIX sockets were sent",
			  who, nfds, mflags, want);
	else
		for (i = 0; i < nfds && !fl->broken; i++)
			flow_unix_works(fl, fds[i], u, who);
	if (!fl->broken && want)
		__atomic_add_fetch(&sh->unix_checked, want, __ATOMIC_RELAXED);
	close_all(fds, nfds);
}

/* A send from fd that must fail with EAGAIN: its recipient is full. */
static void flow_expect_full(struct flow *fl, ssize_t ret, int err, int fd,
			     const char *who, const char *to)
{
	if (ret >= 0) {
		flow_fail(fl, false, "a send from %s to %s, which never reads and is full, went out",
			  who, to);
		return;
	}
	if (err != EAGAIN) {
		if (!flow_no_resources(fl, err))
			flow_fail(fl, false, "a send from %s to the full %s: %s (errno %d), not EAGAIN",
				  who, to, strerror(err), err);
		return;
	}
	if (pollout(fd))
		flow_fail(fl, false, "POLLOUT for %s right after its send to the full %s failed",
			  who, to);
	else
		flow_sender_idle(fl, fd, who);
}

/*
 * Fill f: messages from s until one fails, with EAGAIN, then messages of
 * one byte until one of them fails too: a message is admitted whole, so
 * a recipient without room for one message may have room for a smaller
 * one, and f is full only when it has none for the smallest.
 */
static void flow_fill(struct flow *fl)
{
	bool topping = false;
	ssize_t ret;
	int err;

	for (;;) {
		ret = flow_send(fl, fl->s.c, true, fl->f.addr,
				topping ? 1 : below(&fl->r, fl->fill_size + 1),
				NULL);
		if (ret < 0 && errno == EAGAIN && !topping && fl->f_queued) {
			topping = true;
			continue;
		}
		if (ret < 0)
			break;
		fl->f_queued++;
		fl->e_seen++;
		if (fl->f_queued > fl->qf) {
			flow_fail(fl, false, "the client that never reads took %" PRIu64 " messages, its queue limit is %u",
				  fl->f_queued, fl->qf);
			return;
		}
		flow_sender_idle(fl, fl->s.c, fl->s.who);
		if (fl->broken)
			return;
	}
	err = errno;
	if (!fl->f_queued && err == EAGAIN)
		flow_fail(fl, false, "the first send to %s, whose queue was empty, failed with EAGAIN",
			  fl->f.who);
	else
		flow_expect_full(fl, ret, err, fl->s.c, fl->s.who, fl->f.who);
}

/*
 * The invariant: from s (or from f's accepted socket, the master), which
 * was just refused for the full f, a message to rd, unicast or multicast
 * to prefix FLOW_PFX (where d is full and skipped), goes out, maybe with
 * AF_UNIX sockets.  Or, from s, one to its master (its accepted socket,
 * which has room too).
 */
static void flow_to_reader(struct flow *fl, int kind)
{
	struct rng *r = &fl->r;
	bool master = chance(r, 30) && kind != 2;
	bool mcast = kind == 1, refused_first = chance(r, 60);
	bool with_fds = chance(r, 30);
	unsigned int copies = 1 + below(r, 3);
	size_t size = below(r, fl->maxsize + 1);
	__u64 to = chance(r, 50) ? fl->rd.addr : FLOW_ADDR_RD;
	int from = master ? fl->f.a : fl->s.c;
	int rfd = kind == 2 ? fl->s.a : fl->rd.c;
	const char *who = master ? "the master (f's accepted socket)" :
				   fl->s.who;
	const char *rwho = kind == 2 ? "its accepted socket" : fl->rd.who;
	__u64 src = master ? BUS_MASTER_ADDR : fl->s.addr;
	struct flow_unix u = { .keep = -1, .pass = -1 };
	ssize_t ret;
	int err;

	if (mcast)
		to = FLOW_MCAST;
	if (refused_first) {
		/* the same sender, refused for a full recipient just before */
		ret = master ? flow_send(fl, from, false, 0, 1, NULL) :
			       flow_send(fl, from, true, fl->f.addr, 1, NULL);
		flow_expect_full(fl, ret, errno, from, who, fl->f.who);
		if (fl->broken)
			return;
	}
	if (with_fds && !flow_unix_new(fl, &u, copies))
		return;
	flow_drain(fl, rfd, rwho);
	if (fl->broken)
		goto out;
	if (kind == 2)	/* to the master: no address, or address 0 */
		ret = flow_send(fl, from, chance(r, 50), BUS_MASTER_ADDR, size,
				with_fds ? &u : NULL);
	else
		ret = flow_send(fl, from, true, to, size, with_fds ? &u : NULL);
	err = errno;
	if (ret < 0) {
		if (with_fds && err == ETOOMANYREFS)
			count(&sh->flow_toomany);	/* the user's files in flight */
		else if (!flow_no_resources(fl, err))
			flow_fail(fl, with_fds && err != EAGAIN,
				  "%s to %s (%s, %zu bytes%s), which has room, while %s is full: %s (errno %d)",
				  who, rwho, mcast ? "multicast" : "unicast",
				  size, with_fds ? ", AF_UNIX sockets" : "",
				  fl->f.who, strerror(err), err);
		goto out;
	}
	count(&sh->flow_invariant);
	if (with_fds)
		__atomic_add_fetch(&sh->unix_passed, u.n, __ATOMIC_RELAXED);
	fl->e_seen++;
	if (mcast) {
		fl->d_mcast++;
		if (fl->d_mcast > fl->qd)
			count(&sh->flow_mcast_past);
	}
	if (!pollout(from))
		flow_fail(fl, false, "no POLLOUT for %s after its send went out", who);
	flow_sender_idle(fl, from, who);
	if (!fl->broken)
		flow_expect(fl, rfd, rwho, src, size, with_fds ? &u : NULL);
out:
	flow_unix_close(&u);
}

static long drops(int fd);

/*
 * Once d is full, a unicast to it waits (fails with EAGAIN) after all.
 * d is known to be full when its queue holds its limit of messages: it
 * was sent at least that many multicasts and dropped only those past it
 * (it may also drop a multicast for lack of bytes, and then have room
 * for a smaller message).
 */
static void flow_to_drop_member(struct flow *fl)
{
	__u64 to = chance(&fl->r, 50) ? fl->d.addr : FLOW_ADDR_D;
	ssize_t ret;

	if (fl->d_mcast < fl->qd ||
	    drops(fl->d.c) != (long)(fl->d_mcast - fl->qd))
		return;		/* not known to be full */
	ret = flow_send(fl, fl->s.c, true, to, 1, NULL);
	flow_expect_full(fl, ret, errno, fl->s.c, fl->s.who, fl->d.who);
}

/* The AF_BUS sockets of the bus, in every role; returns how many. */
static unsigned int flow_bus_fds(struct flow *fl, int *fds)
{
	const struct flow_peer *p[] = { &fl->s, &fl->f, &fl->e, &fl->d, &fl->rd };
	unsigned int i, n = 0;

	fds[n++] = fl->m;
	fds[n++] = fl->fresh;
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		fds[n++] = p[i]->c;
		fds[n++] = p[i]->a;
	}
	return n;
}

/*
 * sendmsg on AF_UNIX socket u with files that include AF_BUS sockets:
 * EOPNOTSUPP, and nothing sent (peer, if >= 0, has nothing to read).
 */
static void flow_refused(struct flow *fl, int u, int peer, const int *fds,
			 unsigned int n, const char *what)
{
	ssize_t ret = send_fds(u, NULL, 0, fl->out,
			       1 + below(&fl->r, 64), fds, n);
	int err = errno;
	char c;

	if (ret >= 0) {
		flow_fail(fl, true, "%s: AF_UNIX sent %u files with AF_BUS sockets among them",
			  what, n);
		return;
	}
	if (err != EOPNOTSUPP) {
		if (!flow_no_resources(fl, err))
			flow_fail(fl, true, "%s: AF_UNIX sendmsg with AF_BUS sockets: %s (errno %d), not EOPNOTSUPP",
				  what, strerror(err), err);
		return;
	}
	count(&sh->unix_refused);
	if (peer >= 0 && (recv(peer, &c, 1, MSG_DONTWAIT) != -1 ||
			  errno != EAGAIN))
		flow_fail(fl, true, "%s: the peer had something to read after AF_UNIX refused to send",
			  what);
}

/* AF_BUS sockets of the bus (and AF_UNIX ones) over a new AF_UNIX pair */
static void flow_refuse(struct flow *fl)
{
	struct rng *r = &fl->r;
	int bus[16], list[4], sv[2], pick[4];
	unsigned int i, nb = flow_bus_fds(fl, bus), n = 1 + below(r, 4);
	int type = unix_types[below(r, 3)];

	for (i = 0; i < n; i++)
		pick[i] = chance(r, 20) ? -1 - (int)below(r, 2) :
					  (int)below(r, nb);
	i = below(r, n);
	pick[i] = below(r, nb);		/* one AF_BUS socket at least */
	if (!flow_ok(fl, socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv),
		     "AF_UNIX pair", "socketpair"))
		return;
	for (i = 0; i < n; i++)
		list[i] = pick[i] >= 0 ? bus[pick[i]] : sv[-1 - pick[i]];
	flow_refused(fl, sv[0], sv[1], list, n, "AF_BUS sockets over AF_UNIX");
	close(sv[0]);
	close(sv[1]);
}

/*
 * A cycle, if AF_UNIX allowed it: one end of an AF_UNIX pair in a
 * message queued to rd (and so held by rd), then rd (or another socket
 * of the bus) sent over the other end.  Then rd reads the AF_UNIX socket,
 * which must work and have nothing to read.
 */
static void flow_cycle(struct flow *fl)
{
	struct rng *r = &fl->r;
	bool mcast = chance(r, 30), self_loop = chance(r, 60);
	size_t size = below(r, fl->maxsize + 1);
	int bus[16], target;
	unsigned int nb = flow_bus_fds(fl, bus);
	struct flow_unix u;
	ssize_t ret;
	int err;

	target = self_loop ? fl->rd.c : bus[below(r, nb)];
	if (!flow_unix_new(fl, &u, 1))
		goto out;
	flow_drain(fl, fl->rd.c, fl->rd.who);
	if (fl->broken)
		goto out;
	ret = flow_send(fl, fl->s.c, true, mcast ? FLOW_MCAST : fl->rd.addr,
			size, &u);
	err = errno;
	if (ret < 0) {
		if (err == ETOOMANYREFS)
			count(&sh->flow_toomany);
		else if (!flow_no_resources(fl, err))
			flow_fail(fl, err != EAGAIN, "the sender to %s (%s, an AF_UNIX socket), which has room, while %s is full: %s (errno %d)",
				  fl->rd.who, mcast ? "multicast" : "unicast",
				  fl->f.who, strerror(err), err);
		goto out;
	}
	count(&sh->flow_invariant);
	count(&sh->unix_passed);
	fl->e_seen++;
	fl->d_mcast += mcast;
	/* now only the message queued to rd holds that end */
	close(u.pass);
	u.pass = -1;
	count(&sh->unix_cycles);
	flow_refused(fl, u.keep, -1, &target, 1,
		     self_loop ? "a cycle through AF_UNIX and AF_BUS" :
				 "AF_BUS socket over AF_UNIX, its peer in flight");
	if (!fl->broken)
		flow_expect(fl, fl->rd.c, fl->rd.who, fl->s.addr, size, &u);
out:
	flow_unix_close(&u);
}

/* Messages lost by fd (sk_drops, SO_MEMINFO), or -1 */
static long drops(int fd)
{
	__u32 mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len))
		return -1;
	return mem[SK_MEMINFO_DROPS];
}

/*
 * At the end, f holds what was queued to it, and every copy for e and d
 * was queued or counted as dropped: as /proc/net/bus shows them (lines
 * it shows, that is: a read in chunks may miss a socket while others
 * come and go in the namespace), and as reading them all, which they do
 * only now, finds them.
 */
static void flow_count(struct flow *fl)
{
	const struct flow_peer *p[] = { &fl->f, &fl->e, &fl->d };
	const uint64_t want[] = { fl->f_queued, fl->e_seen, fl->d_mcast };
	const unsigned int qlen[] = { fl->qf, fl->qe, fl->qd };
	int fds[MAX_RECV_FDS];
	unsigned int recvq, maxq, ndrops, i, nfds;
	unsigned long ino;
	uint64_t queued;
	char line[512];
	long lost;
	FILE *f = fopen("/proc/net/bus", "r");

	if (!f) {
		if (!flow_no_resources(fl, errno))
			flow_fail(fl, false, "/proc/net/bus: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f) && !fl->broken) {
		if (sscanf(line, "%*s %lu %*u %*s %*s %*d %*d %u %u %u", &ino,
			   &recvq, &maxq, &ndrops) != 4)
			continue;
		for (i = 0; i < 3; i++)
			/* f drops nothing: what went out is queued */
			if (ino == p[i]->ino &&
			    (maxq != qlen[i] || recvq > qlen[i] ||
			     recvq + (uint64_t)ndrops != want[i] ||
			     (!i && ndrops)))
				flow_fail(fl, false, "/proc/net/bus: %s has RecvQ %u, MaxQLen %u, Drops %u; it was sent %" PRIu64 " messages (queue limit %u)",
					  p[i]->who, recvq, maxq, ndrops,
					  want[i], qlen[i]);
	}
	fclose(f);
	for (i = 0; i < 3 && !fl->broken; i++) {
		lost = drops(p[i]->c);
		for (queued = 0; recv_fds(p[i]->c, NULL, fl->in, FLOW_MAXMSG + 1,
					  fds, &nfds, NULL) >= 0; queued++)
			close_all(fds, nfds);
		if (errno != EAGAIN) {
			if (!flow_no_resources(fl, errno))
				flow_fail(fl, false, "%s: recvmsg: %s", p[i]->who,
					  strerror(errno));
		} else if (lost >= 0 &&
			   (queued > qlen[i] || queued + lost != want[i] ||
			    (!i && lost)))
			flow_fail(fl, false, "%s had %" PRIu64 " messages queued and %ld dropped; it was sent %" PRIu64 " (queue limit %u)",
				  p[i]->who, queued, lost, want[i], qlen[i]);
	}
}

static void __attribute__((noreturn))
flow_child(uint64_t seed, uint64_t id, pid_t parent)
{
	struct flow fl = { .r.s = seed, .id = id, .m = -1, .fresh = -1 };
	unsigned int i, rounds;

	/* die with the worker; hang for no longer than FLOW_ALARM_S */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	alarm(FLOW_ALARM_S);
	/* nothing of the worker's: other threads' descriptors stay theirs */
	if (close_range(3, ~0U, 0))
		for (i = 3; i < 4096; i++)
			close(i);
	fl.out = calloc(1, FLOW_MAXMSG);
	fl.in = malloc(FLOW_MAXMSG + 1);
	if (!fl.out || !fl.in)
		_exit(FLOW_SKIPPED);
	/*
	 * A user of its own: messages are charged to the budget of their
	 * user (af_bus.rst, "Memory"), which the workers' clients that
	 * never read, all of the fuzzer's user, may have used up; the
	 * check is about this bus's recipients, not about that budget.
	 */
	if (setgroups(0, NULL) || setresgid(FLOW_UID + w.idx, FLOW_UID + w.idx,
					    FLOW_UID + w.idx) ||
	    setresuid(FLOW_UID + w.idx, FLOW_UID + w.idx, FLOW_UID + w.idx))
		_exit(FLOW_SKIPPED);
	if (!flow_setup(&fl))
		goto out;
	flow_fill(&fl);
	/* fill d: multicasts, which go on once it is full */
	for (i = fl.qd + 1 + below(&fl.r, 3); i > 0 && !fl.broken; i--)
		flow_to_reader(&fl, 1);
	rounds = 4 + below(&fl.r, 16);
	for (i = 0; i < rounds && !fl.broken && !stopping(); i++) {
		switch (below(&fl.r, 10)) {
		case 0:		/* f is still full */
			flow_expect_full(&fl, flow_send(&fl, fl.s.c, true,
							fl.f.addr, 1, NULL),
					 errno, fl.s.c, fl.s.who, fl.f.who);
			break;
		case 1:
		case 2:
		case 3:
			flow_to_reader(&fl, 0);
			break;
		case 4:
			flow_to_reader(&fl, 1);
			break;
		case 5:
			flow_to_reader(&fl, 2);
			break;
		case 6:
			flow_to_drop_member(&fl);
			break;
		case 7:
		case 8:
			flow_refuse(&fl);
			break;
		default:
			flow_cycle(&fl);
			break;
		}
	}
	if (!fl.broken)
		flow_count(&fl);
out:
	_exit(fl.skipped ? FLOW_SKIPPED : 0);
}

static long now_ms(void);

/*
 * A flow check (see above) in a child process, which this thread waits
 * for.  One at a time per worker, and at most a fifth of its time: the
 * next one waits four times as long as this one took.  (Whether a check
 * runs depends on timing; the random choices of the thread do not.)
 */
static void op_flow(struct thread_ctx *t)
{
	uint64_t seed = rnd(&t->r), id;
	pid_t parent = getpid(), pid, got;
	long start = now_ms(), end;
	int status;

	t->nops++;
	if (__atomic_exchange_n(&w.flow_busy, 1, __ATOMIC_ACQUIRE))
		return;
	if (start < w.flow_next) {
		__atomic_store_n(&w.flow_busy, 0, __ATOMIC_RELEASE);
		return;
	}
	id = __atomic_add_fetch(&sh->flow_runs, 1, __ATOMIC_RELAXED);
	pid = fork();
	if (pid == 0)
		flow_child(seed, id, parent);
	if (pid < 0) {
		check(t, "fork", -1, E(EAGAIN), NULL);
		count(&sh->flow_skipped);
	} else {
		while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (got < 0)
			report_flow("worker %u.%u flow check %" PRIu64 ": waitpid: %s",
				    w.idx, w.gen, id, strerror(errno));
		else if (WIFSIGNALED(status))
			report_flow("worker %u.%u flow check %" PRIu64 ": killed by signal %d%s",
				    w.idx, w.gen, id, WTERMSIG(status),
				    WTERMSIG(status) == SIGALRM ?
				    " (it took more than 30 s)" : "");
		else if (WEXITSTATUS(status) == FLOW_SKIPPED)
			count(&sh->flow_skipped);
		else if (WEXITSTATUS(status))
			report_flow("worker %u.%u flow check %" PRIu64 ": exit status %d",
				    w.idx, w.gen, id, WEXITSTATUS(status));
		else
			count(&sh->flow_done);
	}
	end = now_ms();
	w.flow_next = end + 4 * (end - start);
	__atomic_store_n(&w.flow_busy, 0, __ATOMIC_RELEASE);
}

/*
 * A D-Bus bus of its own, a caller and a callee that never answers: the
 * master forwards the caller's calls until the kernel refuses them
 * (op_relay_burst()). Everything ends up in the slots.
 */
static void op_relay(struct thread_ctx *t)
{
	struct sockaddr_bus sa = { .sbus_family = AF_BUS };
	int m, c[2] = { -1, -1 }, a[2] = { -1, -1 }, i;
	socklen_t len;

	m = socket(AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC, 1);
	if (m < 0)
		return;
	len = SA_NOPATH + 1 + snprintf(sa.sbus_path + 1,
				       sizeof(sa.sbus_path) - 1,
				       "afbus-fuzz-relay-%d-%u", (int)getpid(),
				       t->idx);
	if (bind(m, (struct sockaddr *)&sa, len) || listen(m, 4))
		goto out;
	for (i = 0; i < 2; i++) {
		c[i] = socket(AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC, 1);
		if (c[i] < 0 || connect(c[i], (struct sockaddr *)&sa, len))
			goto out;
		a[i] = accept4(m, NULL, NULL, SOCK_CLOEXEC);
		if (a[i] < 0 ||
		    setsockopt(a[i], SOL_BUS, BUS_JOIN_BUS, NULL, 0))
			goto out;
		set_short_timeouts(c[i], &t->r);
		set_short_timeouts(a[i], &t->r);
	}
	count(&sh->relay_bursts);
	op_relay_burst(t, m, a[1], c[0], c[1]);
	for (i = 0; i < 2; i++) {
		slot_put(&t->r, c[i]);
		slot_put(&t->r, a[i]);
		c[i] = a[i] = -1;
	}
	slot_put(&t->r, m);
	return;
out:
	for (i = 0; i < 2; i++) {
		if (c[i] >= 0)
			close(c[i]);
		if (a[i] >= 0)
			close(a[i]);
	}
	close(m);
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
	{ 2, op_idle, NULL },
	{ 3, op_unix, NULL },
	{ 1, op_flow, NULL },
	{ 1, op_relay, NULL },
	{ 2, NULL, op_bind },
	{ 2, NULL, op_listen },
	{ 8, NULL, op_accept },
	{ 3, NULL, op_connect },
	{ 3, NULL, op_dbus_mcast },
	{ 17, NULL, op_send },
	{ 15, NULL, op_recv },
	{ 6, NULL, op_setsockopt },
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
	for (i = 0; i < NIDLE; i++)
		w.idle[i] = -1;
	for (i = 0; i < NUNIX; i++)
		w.unix_fds[i] = -1;
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

/* ---- counts at the start and at the end ---- */

/*
 * What the kernel holds, compared before the first worker starts and
 * after the last one is gone (and the AF_BUS garbage collector, a work
 * item, had its time): every count must be back where it was.
 */
#define NSTAT		16
#define NSLABS		3

static const char *const slab_names[NSLABS] = { "AF_BUS", "UNIX", "UNIX-STREAM" };

struct counts {
	long proc_bus;		/* sockets /proc/net/bus lists */
	long protocols;		/* the AF_BUS line of /proc/net/protocols */
	long used;		/* "sockets: used" of /proc/net/sockstat */
	unsigned int nstat;	/* AF_BUS-related fields of sockstat */
	char stat_name[NSTAT][64];
	long stat[NSTAT];
	bool slabinfo;		/* /proc/slabinfo could be read */
	long slab[NSLABS];	/* its active objects (-1: no such cache) */
	long slab_sysfs;	/* BUS_SLAB_DIR/objects (-1: not there) */
};

/*
 * "sockets: used" and every field of the lines of /proc/net/sockstat
 * whose protocol names a bus ("BUS: inuse 3" would be "BUS inuse").
 */
static void read_sockstat(struct counts *c)
{
	char line[512], label[32], key[32], *p;
	FILE *f = fopen("/proc/net/sockstat", "r");
	int off;
	long v;

	c->used = -1;
	c->nstat = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31[^:]:%n", label, &off) != 1)
			continue;
		for (p = line + off; sscanf(p, "%31s %ld%n", key, &v, &off) == 2;
		     p += off) {
			if (!strcmp(label, "sockets") && !strcmp(key, "used"))
				c->used = v;
			if (!strcasestr(label, "BUS") || c->nstat == NSTAT)
				continue;
			snprintf(c->stat_name[c->nstat], sizeof(c->stat_name[0]),
				 "%s %s", label, key);
			c->stat[c->nstat++] = v;
		}
	}
	fclose(f);
}

/*
 * Active objects of the AF_BUS and AF_UNIX caches in /proc/slabinfo,
 * after a shrink of each (which flushes the per-CPU slabs, whose free
 * objects slabinfo counts as active, and KASAN's quarantine).
 */
static void read_slabinfo(struct counts *c)
{
	char line[512], name[64], path[128];
	unsigned int i;
	long active;
	FILE *f;
	int fd;

	for (i = 0; i < NSLABS; i++) {
		c->slab[i] = -1;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink",
			 slab_names[i]);
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			/* without it a count is less exact, that is all */
			ssize_t ignored = write(fd, "1", 1);

			(void)ignored;
			close(fd);
		}
	}
	f = fopen("/proc/slabinfo", "r");
	c->slabinfo = f != NULL;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %ld", name, &active) != 2)
			continue;
		for (i = 0; i < NSLABS; i++)
			if (!strcmp(name, slab_names[i]))
				c->slab[i] = active;
	}
	fclose(f);
}

static void counts_now(struct counts *c)
{
	memset(c, 0, sizeof(*c));
	c->proc_bus = bus_count_proc_lines();
	c->protocols = bus_count_protocol("AF_BUS");
	read_sockstat(c);
	read_slabinfo(c);
	c->slab_sysfs = bus_count_slab();
}

/* Field name of base, in now; -1 if now has no such field. */
static long stat_of(const struct counts *now, const char *name)
{
	unsigned int i;

	for (i = 0; i < now->nstat; i++)
		if (!strcmp(now->stat_name[i], name))
			return now->stat[i];
	return -1;
}

/* Every count that could be read at the start is back. */
static bool counts_back(const struct counts *base, const struct counts *now)
{
	unsigned int i;

	if (now->proc_bus != base->proc_bus ||
	    now->protocols != base->protocols || now->used != base->used ||
	    now->slab_sysfs != base->slab_sysfs)
		return false;
	for (i = 0; i < base->nstat; i++)
		if (stat_of(now, base->stat_name[i]) != base->stat[i])
			return false;
	for (i = 0; base->slabinfo && i < NSLABS; i++)
		if (base->slab[i] >= 0 && now->slab[i] != base->slab[i])
			return false;
	return true;
}

static void counts_print(const char *what, const struct counts *c)
{
	char stat[256] = "", slab[128] = "";
	unsigned int i;
	int n = 0;

	for (i = 0; i < c->nstat && n < (int)sizeof(stat); i++)
		n += snprintf(stat + n, sizeof(stat) - n, ", %s %ld",
			      c->stat_name[i], c->stat[i]);
	for (i = 0, n = 0; c->slabinfo && i < NSLABS && n < (int)sizeof(slab); i++)
		n += snprintf(slab + n, sizeof(slab) - n, ", slabinfo %s %ld",
			      slab_names[i], c->slab[i]);
	ksft_print_msg("%s: /proc/net/bus sockets %ld, AF_BUS in /proc/net/protocols %ld, sockets used %ld%s%s%s, " BUS_SLAB_DIR "/objects %ld\n",
		       what, c->proc_bus, c->protocols, c->used, stat,
		       c->slabinfo ? slab : "",
		       c->slabinfo ? "" : ", /proc/slabinfo not readable",
		       c->slab_sysfs);
}

/* Poll until every count is back, or timeout_ms; *now: the last read. */
static bool counts_settle(const struct counts *base, struct counts *now,
			  int timeout_ms)
{
	long end = 0;
	struct timespec ts;

	for (;;) {
		counts_now(now);
		if (counts_back(base, now))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (!end)
			end = ts.tv_sec * 1000L + ts.tv_nsec / 1000000 + timeout_ms;
		else if (ts.tv_sec * 1000L + ts.tv_nsec / 1000000 >= end)
			return false;
		usleep(50000);
	}
}

/* One test result for a single count: name, before, after. */
static void result_count(const char *name, long before, long after)
{
	if (before < 0)
		ksft_test_result_fail("%s: cannot be read\n", name);
	else if (after != before)
		ksft_test_result_fail("%s: %ld at the start, %ld at the end (seed %#" PRIx64 ")\n",
				      name, before, after, opt_seed);
	else
		ksft_test_result_pass("%s back at the start (%ld)\n", name, after);
}

/*
 * Append "name: before -> after" to msg for a count that differs (and
 * print it); returns whether it does.
 */
static bool mismatch(char *msg, size_t size, const char *name, long before,
		     long after)
{
	size_t n = strlen(msg);

	if (before == after)
		return false;
	ksft_print_msg("mismatch: %s: %ld at the start, %ld at the end\n",
		       name, before, after);
	snprintf(msg + n, size - n, "%s%s %ld at the start, %ld at the end",
		 n ? "; " : "", name, before, after);
	return true;
}

/* The results of the count comparisons (COUNT_TESTS of them). */
#define COUNT_TESTS	5

static void result_counts(const struct counts *base, const struct counts *after)
{
	char msg[512] = "";
	unsigned int i;
	bool bad;

	result_count("AF_BUS sockets in /proc/net/bus", base->proc_bus,
		     after->proc_bus);
	result_count("AF_BUS sockets in /proc/net/protocols", base->protocols,
		     after->protocols);

	/* /proc/net/sockstat: sockets used, and any AF_BUS line */
	if (!base->nstat)
		ksft_print_msg("/proc/net/sockstat has no AF_BUS line: only 'sockets: used' compared\n");
	bad = base->used < 0;
	if (bad)
		snprintf(msg, sizeof(msg), "'sockets: used' cannot be read");
	else
		bad = mismatch(msg, sizeof(msg), "sockets: used", base->used,
			       after->used);
	for (i = 0; i < base->nstat; i++)
		bad |= mismatch(msg, sizeof(msg), base->stat_name[i],
				base->stat[i], stat_of(after, base->stat_name[i]));
	if (bad)
		ksft_test_result_fail("/proc/net/sockstat: %s (seed %#" PRIx64 ")\n",
				      msg, opt_seed);
	else
		ksft_test_result_pass("/proc/net/sockstat back at the start (sockets used %ld)\n",
				      after->used);

	/* slab objects, when /proc/slabinfo can be read */
	if (!base->slabinfo) {
		ksft_print_msg("/proc/slabinfo cannot be read: slab comparisons skipped\n");
		ksft_test_result_skip("AF_BUS slab objects: /proc/slabinfo cannot be read\n");
		ksft_test_result_skip("AF_UNIX slab objects: /proc/slabinfo cannot be read\n");
		return;
	}
	msg[0] = 0;
	bad = false;
	if (base->slab[0] >= 0)
		bad = mismatch(msg, sizeof(msg), "slabinfo AF_BUS",
			       base->slab[0], after->slab[0]);
	if (base->slab_sysfs >= 0)
		bad |= mismatch(msg, sizeof(msg), BUS_SLAB_DIR "/objects",
				base->slab_sysfs, after->slab_sysfs);
	if (base->slab[0] < 0 && base->slab_sysfs < 0)
		ksft_test_result_skip("AF_BUS slab objects: no AF_BUS cache in /proc/slabinfo (merged?)\n");
	else if (bad)
		ksft_test_result_fail("AF_BUS slab objects: %s (seed %#" PRIx64 ")\n",
				      msg, opt_seed);
	else
		ksft_test_result_pass("AF_BUS slab objects back at the start (%ld)\n",
				      after->slab[0] >= 0 ? after->slab[0] :
							    after->slab_sysfs);
	msg[0] = 0;
	bad = false;
	for (i = 1; i < NSLABS; i++)
		if (base->slab[i] >= 0)
			bad |= mismatch(msg, sizeof(msg), slab_names[i],
					base->slab[i], after->slab[i]);
	if (base->slab[1] < 0 && base->slab[2] < 0)
		ksft_test_result_skip("AF_UNIX slab objects: no UNIX cache in /proc/slabinfo (merged?)\n");
	else if (bad)
		ksft_test_result_fail("AF_UNIX slab objects: %s (seed %#" PRIx64 ")\n",
				      msg, opt_seed);
	else
		ksft_test_result_pass("AF_UNIX slab objects back at the start (UNIX %ld, UNIX-STREAM %ld)\n",
				      after->slab[1], after->slab[2]);
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
	unsigned int gens[MAX_PROCS] = { 0 }, i, weights = 0;
	struct counts base, after;
	struct rng sup;
	bool stuck = false;
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
	ksft_set_plan(4 + COUNT_TESTS);
	for (i = 0; i < sizeof(fuzz_ops) / sizeof(fuzz_ops[0]); i++)
		weights += fuzz_ops[i].weight;
	if (weights != 100)
		ksft_exit_fail_msg("operation weights add up to %u, not 100\n",
				   weights);
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
	counts_now(&base);
	counts_print("before", &base);
	fflush(stdout);

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
		       "or whose master's socket was closed meanwhile (tolerated); %"
		       PRIu64 " requests without a master's socket refused\n",
		       sh->perm_races, sh->perm_refused);
	ksft_print_msg("issue 36: %" PRIu64 " client multicasts that were no signals tried "
		       "on managed buses; %" PRIu64 " room notifications read (%" PRIu64
		       " malformed); %" PRIu64 " forwarded call bursts, %" PRIu64
		       " calls refused over their limit (EDQUOT)\n",
		       sh->dbus_not_signal, sh->room_read, sh->room_bad,
		       sh->relay_bursts, sh->relay_quota);
	ksft_print_msg("nfdbus: %" PRIu64 " requests (%" PRIu64 " succeeded, %"
		       PRIu64 " rules added, %" PRIu64 " resyncs); %" PRIu64
		       " D-Bus multicasts sent, %" PRIu64 " refused as malformed, %"
		       PRIu64 " strictly checked; %" PRIu64 " network namespace moves\n",
		       sh->nl_requests, sh->nl_ok, sh->rules_added, sh->nl_resync,
		       sh->dbus_sent, sh->dbus_refused, sh->dbus_strict,
		       sh->netns_moves);
	ksft_print_msg("never reading: %" PRIu64 " clients among the traffic (%"
		       PRIu64 " eavesdroppers, %" PRIu64 " BUS_SET_MCAST_DROP members)\n",
		       sh->idle_made, sh->idle_eavesdrop, sh->idle_mcast_drop);
	ksft_print_msg("flow checks: %" PRIu64 " started, %" PRIu64 " finished, %"
		       PRIu64 " stopped for lack of resources; %" PRIu64
		       " sends to a reader while a recipient was full (%" PRIu64
		       " multicasts past a full BUS_SET_MCAST_DROP member), %"
		       PRIu64 " ETOOMANYREFS\n",
		       sh->flow_runs, sh->flow_done, sh->flow_skipped,
		       sh->flow_invariant, sh->flow_mcast_past, sh->flow_toomany);
	ksft_print_msg("cross-family: %" PRIu64 " AF_UNIX sockets sent in AF_BUS messages, %"
		       PRIu64 " received and checked; %" PRIu64
		       " AF_UNIX sends of AF_BUS sockets refused (EOPNOTSUPP), %"
		       PRIu64 " cycles tried, %" PRIu64 " AF_UNIX sockets that could not send at all, %"
		       PRIu64 " not judged (close races)\n",
		       sh->unix_passed, sh->unix_checked, sh->unix_refused,
		       sh->unix_cycles, sh->unix_nosend, sh->unix_raced);

	/* again here, where the end of a long log shows them */
	for (i = 0; i < (unsigned int)sh->nreports && i < MAX_REPORTS; i++)
		ksft_print_msg("unexpected: %s\n", sh->reports[i]);
	if (sh->unexpected)
		ksft_test_result_fail("%" PRIu64 " unexpected results (seed %#" PRIx64 ")\n",
				      sh->unexpected, opt_seed);
	else
		ksft_test_result_pass("every call gave a documented result\n");
	if (sh->flow_failures)
		ksft_test_result_fail("flow control: %" PRIu64 " failures (seed %#" PRIx64 ")\n",
				      sh->flow_failures, opt_seed);
	else if (!sh->flow_done)
		ksft_test_result_skip("flow control: no flow check finished\n");
	else
		ksft_test_result_pass("flow control: full recipients held up only the sends to them (%"
				      PRIu64 " checks)\n", sh->flow_done);
	if (sh->xfam_failures)
		ksft_test_result_fail("AF_UNIX and AF_BUS: %" PRIu64 " failures (seed %#" PRIx64 ")\n",
				      sh->xfam_failures, opt_seed);
	else if (!sh->unix_refused)
		ksft_test_result_skip("AF_UNIX and AF_BUS: no AF_UNIX send of an AF_BUS socket was judged\n");
	else
		ksft_test_result_pass("AF_UNIX and AF_BUS: AF_UNIX refused AF_BUS sockets (%" PRIu64
				      " times), AF_UNIX sockets travelled in AF_BUS messages (%" PRIu64
				      " checked)\n", sh->unix_refused, sh->unix_checked);
	if (stuck)
		ksft_test_result_fail("workers stuck after the end (seed %#" PRIx64 ")\n",
				      opt_seed);
	else
		ksft_test_result_pass("every worker finished\n");
	/*
	 * Everything is closed; what cycles of descriptors in flight still
	 * hold waits for the garbage collector (a work item).
	 */
	if (!counts_settle(&base, &after, SETTLE_MS))
		ksft_print_msg("counts not back at the start after %d s\n",
			       SETTLE_MS / 1000);
	counts_print("after", &after);
	result_counts(&base, &after);
	ksft_finished();
}
