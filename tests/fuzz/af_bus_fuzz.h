/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of the AF_BUS fuzzer share: af_bus_fuzz.c (the socket
 * operations, the workers and the supervisor) and nfdbus_ops.c (nfdbus
 * netlink commands, match rules and D-Bus messages).
 */
#ifndef AF_BUS_FUZZ_H
#define AF_BUS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/bus.h>

#ifndef AF_BUS
#define AF_BUS 46
#endif
#ifndef SOL_BUS
#define SOL_BUS 288
#endif

#define NSLOTS		24
#define NNAMES		6
#define MAX_REPORTS	20
#define FUZZ_DIR	"/tmp/afbus-fuzz"

#define SA_NOPATH	offsetof(struct sockaddr_bus, sbus_path)

/* Counters and reports, shared by every worker process (mmap). */
struct fuzz_shared {
	int stop;
	uint64_t ops;
	uint64_t unexpected;
	uint64_t kills;
	uint64_t sent, received, fds_passed, fds_received, accepted;
	uint64_t netns_moves, raced;
	uint64_t nl_requests, nl_ok, rules_added, nl_resync, perm_races,
		 perm_refused;
	uint64_t dbus_sent, dbus_refused, dbus_strict, dbus_not_signal;
	/* room notifications (BUS_ROOM_NOTIFY) and forwarded call bursts */
	uint64_t room_read, room_bad, relay_bursts, relay_quota;
	/* clients that never read, made among the random traffic */
	uint64_t idle_made, idle_eavesdrop, idle_mcast_drop;
	/* flow checks (af_bus_fuzz.c, flow_child()) */
	uint64_t flow_runs, flow_done, flow_skipped, flow_invariant,
		 flow_mcast_past, flow_toomany;
	uint64_t flow_failures;		/* reported by report_flow() */
	/* AF_UNIX sockets in AF_BUS messages, AF_BUS sockets over AF_UNIX */
	uint64_t unix_passed, unix_checked, unix_refused, unix_cycles,
		 unix_nosend, unix_raced;
	uint64_t xfam_failures;		/* reported by report_xfam() */
	int nreports;
	char reports[MAX_REPORTS][256];
};

extern struct fuzz_shared *sh;
/* this worker's threads moved to new network namespaces this often */
extern unsigned int worker_netns_moves;

/* ---- random numbers: splitmix64 ---- */

struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static inline unsigned int below(struct rng *r, unsigned int n)
{
	return n ? rnd(r) % n : 0;
}

/* True with probability pct percent. */
static inline bool chance(struct rng *r, unsigned int pct)
{
	return below(r, 100) < pct;
}

struct fuzz_nfdbus;

/* One operation thread of a worker. */
struct thread_ctx {
	unsigned int idx;
	struct rng r;
	uint64_t nops;
	unsigned int netns_moves;
	unsigned char *buf;		/* BIGMSG bytes to receive into */
	struct fuzz_nfdbus *nfd;	/* nfdbus_ops.c's state, or NULL */
	int fd;				/* the descriptor operated on, or -1 */
	dev_t fd_dev;			/* and the file it named when the */
	ino_t fd_ino;			/* operation began (0: closed then) */
};

/* ---- af_bus_fuzz.c ---- */

/* A zero-terminated list of errno values. */
#define E(...)	((const int []){ __VA_ARGS__, 0 })

void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Count one call; ret < 0 must come with an errno in allowed or in the
 * errors every descriptor call may give, else it is reported.
 */
void check(struct thread_ctx *t, const char *what, long ret,
	   const int *allowed, const char *detail);
/* A descriptor of this worker's slots (-1 when empty). */
int slot_get(struct rng *r);
/* Slot i's descriptor (-1 when empty). */
int slot_at(unsigned int i);
/* Bus name i of the shared pool: 0-3 abstract, 4-5 filesystem. */
void pool_name(unsigned int i, struct sockaddr_bus *sa, socklen_t *len);
__u64 random_addr(struct rng *r);

/* ---- nfdbus_ops.c ---- */

/* Netlink commands of the nfdbus family on random buses and peers. */
void op_nfdbus(struct thread_ctx *t);
/* D-Bus multicasts on the bus of fd, with the results checked. */
void op_dbus_mcast(struct thread_ctx *t, int fd);
/* Random match rules for the client whose socket (either end) is fd. */
void nfdbus_rules_for(struct thread_ctx *t, int fd);
/*
 * A D-Bus message (valid, or mutated) in buf, at most size bytes;
 * returns its length.
 */
size_t dbus_payload(struct thread_ctx *t, unsigned char *buf, size_t size);
void nfdbus_thread_end(struct thread_ctx *t);
/*
 * Calls forwarded by the master m (on a, the accepted socket of client k,
 * which never answers them) for the client c: at most max_replies of
 * them wait; and client multicasts that are not signals are refused.
 */
void op_relay_burst(struct thread_ctx *t, int m, int a, int c, int k);

#endif /* AF_BUS_FUZZ_H */
