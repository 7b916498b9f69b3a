// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS when processes die in the middle of traffic (kill -9):
 *
 *   senders     two of four multicasting clients are killed: the
 *               receivers go on getting the others' messages, nothing is
 *               lost, every receiver has the same messages in the same
 *               order (the dead senders' included, all or none of each);
 *   receivers   two slow receivers whose full queues hold the senders
 *               back are killed: the senders go on, the other receivers
 *               lose nothing and agree on the order;
 *   master      the master is killed while everybody multicasts: each
 *               client reads a gap-free prefix of every sender's messages,
 *               then end of file, its sends fail with EPIPE or
 *               ECONNRESET, nobody hangs; the bus name (abstract, or a
 *               filesystem path once unlinked) serves a new bus at once.
 *
 * After each, the kernel's socket count, AF_BUS socket count and AF_BUS
 * slab objects are back at what they were before.
 */
#include "af_bus_test.h"
#include "af_bus_counts.h"

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define NSEND		4
#define NRECV		4
#define NCLIENTS	(NSEND + NRECV)
#define END_SEQ		0xffffffffu
/* A process that waits this long for a message or for room is stuck. */
#define STUCK_S		60
/* Messages every receiver gets before, and again after, the kill. */
#define PROGRESS	300
#define MAX_SENDERS	16

struct fault_msg {
	uint32_t from;
	uint32_t seq;
};

struct rx_state {
	uint64_t got;
	uint64_t hash;			/* FNV-1a of the (from, seq) sequence */
	uint32_t per_sender[MAX_SENDERS];
	int ends;
	char why[160];
};

struct fault_shared {
	int stop;			/* senders: send END and stop */
	int alive_senders;		/* END messages a receiver waits for */
	int ready;			/* kill_master: master listening / joined */
	uint64_t sent[MAX_SENDERS];
	char send_why[MAX_SENDERS][160];
	struct rx_state rx[NCLIENTS];
};

static struct fault_shared *fault_map(struct __test_metadata *_metadata)
{
	struct fault_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, sh);
	return sh;
}

static uint64_t fnv(uint64_t h, const struct fault_msg *m)
{
	const unsigned char *p = (const void *)m;
	size_t i;

	if (!h)
		h = 0xcbf29ce484222325ULL;
	for (i = 0; i < sizeof(*m); i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void long_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = STUCK_S };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/*
 * Multicast (from, 0), (from, 1), ... to dest until sh->stop, then an
 * END message.  Returns 0, or the errno of a failed send (recorded).
 */
static int sender_loop(struct fault_shared *sh, int fd,
		       const struct bus_name *bus, __u64 dest, uint32_t from)
{
	struct fault_msg m = { .from = from };
	ssize_t n;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		n = bus_sendto(fd, bus, dest, &m, sizeof(m), 0);
		if (n != sizeof(m))
			goto fail;
		__atomic_store_n(&sh->sent[from], ++m.seq, __ATOMIC_RELEASE);
	}
	m.seq = END_SEQ;
	n = bus_sendto(fd, bus, dest, &m, sizeof(m), 0);
	if (n == sizeof(m))
		return 0;
fail:
	snprintf(sh->send_why[from], sizeof(sh->send_why[from]),
		 "sender %u: send of seq %u returned %zd (%s)", from, m.seq, n,
		 strerror(errno));
	return errno ? errno : EIO;
}

/*
 * Receive on fd until END from sh->alive_senders senders (or, with
 * until_eof, until end of file), checking every sender's sequence has no
 * gap.  Returns 0 or 1 (failure recorded in rx->why).
 */
static int receiver_loop(struct fault_shared *sh, struct rx_state *rx, int fd,
			 bool slow, bool until_eof)
{
	struct fault_msg m;
	ssize_t n;

	for (;;) {
		n = recv(fd, &m, sizeof(m), 0);
		if (until_eof && (n == 0 || (n < 0 && errno == ECONNRESET)))
			return 0;
		if (n != sizeof(m)) {
			snprintf(rx->why, sizeof(rx->why),
				 "recv returned %zd (%s) after %llu messages", n,
				 n < 0 ? strerror(errno) : "short",
				 (unsigned long long)rx->got);
			return 1;
		}
		if (m.from >= MAX_SENDERS) {
			snprintf(rx->why, sizeof(rx->why), "bad sender %u", m.from);
			return 1;
		}
		if (m.seq == END_SEQ) {
			if (++rx->ends == sh->alive_senders && !until_eof)
				return 0;
			continue;
		}
		if (m.seq != rx->per_sender[m.from]) {
			snprintf(rx->why, sizeof(rx->why),
				 "sender %u: got seq %u, expected %u", m.from,
				 m.seq, rx->per_sender[m.from]);
			return 1;
		}
		rx->per_sender[m.from]++;
		rx->hash = fnv(rx->hash, &m);
		__atomic_store_n(&rx->got, rx->got + 1, __ATOMIC_RELEASE);
		if (slow)
			usleep(500);
	}
}

/*
 * Wait until every receiver in mask has at least `least` messages; false
 * after STUCK_S seconds.
 */
static bool wait_progress(struct fault_shared *sh, unsigned int mask,
			  uint64_t least[NCLIENTS])
{
	struct timespec start;
	unsigned int i;
	bool all;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		all = true;
		for (i = 0; i < NCLIENTS; i++)
			if ((mask & 1u << i) && load64(&sh->rx[i].got) < least[i])
				all = false;
		if (all)
			return true;
		usleep(10000);
	} while (bus_elapsed_ms(&start) < STUCK_S * 1000);
	return false;
}

/* Every receiver in mask gets `more` messages more than it has now. */
static bool wait_more(struct fault_shared *sh, unsigned int mask, uint64_t more)
{
	uint64_t least[NCLIENTS];
	int i;

	for (i = 0; i < NCLIENTS; i++)
		least[i] = load64(&sh->rx[i].got) + more;
	return wait_progress(sh, mask, least);
}

/*
 * Master in this process, NSEND sending clients multicasting to prefix 1
 * and NRECV receiving clients, each owning one prefix-1 address, each
 * client in a process of its own.  p[0..NSEND-1] are the senders.
 */
FIXTURE(traffic) {
	struct bus_counts base;
	struct bus_name bus;
	int m;
	struct bus_peer p[NCLIENTS];
	pid_t pid[NCLIENTS];
	struct fault_shared *sh;
};

FIXTURE_SETUP(traffic)
{
	int i;

	self->sh = MAP_FAILED;
	for (i = 0; i < NCLIENTS; i++)
		self->pid[i] = -1;
	self->base = bus_counts_base(_metadata);
	self->sh = fault_map(_metadata);
	bus_open_peers(_metadata, &self->bus, &self->m, self->p, NCLIENTS,
		       NCLIENTS);
	for (i = NSEND; i < NCLIENTS; i++)
		ASSERT_OK(bus_addr_opt(self->p[i].afd, BUS_ADD_ADDR,
				       bus_mkaddr(1, i)));
}

FIXTURE_TEARDOWN(traffic)
{
	bus_kill_all(self->pid, NCLIENTS);
	bus_close_peers(&self->m, self->p, NCLIENTS);
	if (self->sh != MAP_FAILED)
		munmap(self->sh, sizeof(*self->sh));
}

/* Fork the client processes; receivers in slow_mask read slowly. */
static void start_traffic(struct __test_metadata *_metadata,
			  FIXTURE_DATA(traffic) *self, unsigned int slow_mask)
{
	int i, j, rc;

	self->sh->alive_senders = NSEND;
	for (i = 0; i < NCLIENTS; i++) {
		self->pid[i] = fork();
		ASSERT_LE(0, self->pid[i]);
		if (self->pid[i])
			continue;
		for (j = 0; j < NCLIENTS; j++) {
			close(self->p[j].afd);
			if (j != i)
				close(self->p[j].cfd);
		}
		close(self->m);
		long_timeouts(self->p[i].cfd);
		if (i < NSEND)
			rc = sender_loop(self->sh, self->p[i].cfd, &self->bus,
					 bus_mcast(1), i) != 0;
		else
			rc = receiver_loop(self->sh, &self->sh->rx[i],
					   self->p[i].cfd, slow_mask & 1u << i,
					   false);
		_exit(rc);
	}
	for (i = 0; i < NCLIENTS; i++) {
		close(self->p[i].cfd);
		self->p[i].cfd = -1;
	}
}

static void kill_client(struct __test_metadata *_metadata,
			FIXTURE_DATA(traffic) *self, int i)
{
	int status;

	ASSERT_OK(kill(self->pid[i], SIGKILL));
	ASSERT_EQ(self->pid[i], waitpid(self->pid[i], &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("client %d ended with status %#x before the kill", i,
		       status);
	self->pid[i] = -1;
}

/* Stop the senders, wait for every live client to finish cleanly. */
static void stop_traffic(struct __test_metadata *_metadata,
			 FIXTURE_DATA(traffic) *self)
{
	int i, status;

	__atomic_store_n(&self->sh->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NCLIENTS; i++) {
		if (self->pid[i] < 0)
			continue;
		ASSERT_EQ(self->pid[i], waitpid(self->pid[i], &status, 0));
		self->pid[i] = -1;
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("client %d: status %#x: %s%s", i, status,
			       i < NSEND ? self->sh->send_why[i] : "",
			       i < NSEND ? "" : self->sh->rx[i].why);
	}
}

/* The live receivers in mask agree: same messages, same order. */
static void expect_agreement(struct __test_metadata *_metadata,
			     FIXTURE_DATA(traffic) *self, unsigned int mask,
			     unsigned int killed_senders)
{
	struct rx_state *ref = NULL, *rx;
	int i, s;

	for (i = NSEND; i < NCLIENTS; i++) {
		if (!(mask & 1u << i))
			continue;
		rx = &self->sh->rx[i];
		for (s = 0; s < NSEND; s++) {
			if (killed_senders & 1u << s) {
				/* the message in flight at the kill may count */
				ASSERT_GE(self->sh->sent[s] + 1, rx->per_sender[s]);
			} else {
				ASSERT_EQ(self->sh->sent[s], rx->per_sender[s])
					TH_LOG("receiver %d lost messages of sender %d", i, s);
			}
			ASSERT_LE(self->sh->sent[s], rx->per_sender[s]);
		}
		if (!ref) {
			ref = rx;
			continue;
		}
		ASSERT_EQ(ref->got, rx->got);
		for (s = 0; s < NSEND; s++)
			ASSERT_EQ(ref->per_sender[s], rx->per_sender[s]);
		ASSERT_EQ(ref->hash, rx->hash)
			TH_LOG("receiver %d got the messages in another order", i);
	}
	TH_LOG("receivers agree on %llu messages", (unsigned long long)ref->got);
}

#define RECEIVERS	(((1u << NCLIENTS) - 1) & ~((1u << NSEND) - 1))

TEST_F_TIMEOUT(traffic, kill_senders, 600)
{
	start_traffic(_metadata, self, 0);
	ASSERT_TRUE(wait_more(self->sh, RECEIVERS, PROGRESS));
	self->sh->alive_senders = NSEND - 2;
	kill_client(_metadata, self, 0);
	kill_client(_metadata, self, 1);
	/* The others go on. */
	ASSERT_TRUE(wait_more(self->sh, RECEIVERS, PROGRESS))
		TH_LOG("traffic stopped when two senders died");
	stop_traffic(_metadata, self);
	expect_agreement(_metadata, self, RECEIVERS, 3);
	bus_close_peers(&self->m, self->p, NCLIENTS);
	bus_expect_counts(_metadata, &self->base);
}

TEST_F_TIMEOUT(traffic, kill_receivers, 600)
{
	unsigned int slow = 1u << NSEND | 1u << (NSEND + 1);

	start_traffic(_metadata, self, slow);
	ASSERT_TRUE(wait_more(self->sh, RECEIVERS, PROGRESS / 3));
	/* Let the slow receivers' queues fill and hold the senders back. */
	usleep(300 * 1000);
	kill_client(_metadata, self, NSEND);
	kill_client(_metadata, self, NSEND + 1);
	ASSERT_TRUE(wait_more(self->sh, RECEIVERS & ~slow, PROGRESS))
		TH_LOG("traffic stopped when two receivers died");
	stop_traffic(_metadata, self);
	expect_agreement(_metadata, self, RECEIVERS & ~slow, 0);
	bus_close_peers(&self->m, self->p, NCLIENTS);
	bus_expect_counts(_metadata, &self->base);
}

/*
 * The master in a process of its own, NCLIENTS clients that each send
 * multicasts to everybody (prefix 0) and read them in a second thread.
 */
FIXTURE(master) {
	struct bus_counts base;
	struct bus_name bus;
	pid_t master;
	pid_t pid[NCLIENTS];
	struct fault_shared *sh;
};

FIXTURE_VARIANT(master) {
	bool path;
};

FIXTURE_VARIANT_ADD(master, abstract) {
	.path = false,
};

FIXTURE_VARIANT_ADD(master, path) {
	.path = true,
};

FIXTURE_SETUP(master)
{
	int i;

	self->sh = MAP_FAILED;
	self->master = -1;
	for (i = 0; i < NCLIENTS; i++)
		self->pid[i] = -1;
	self->base = bus_counts_base(_metadata);
	self->sh = fault_map(_metadata);
	self->bus = variant->path ? bus_name_tmp() : bus_name_abstract();
}

FIXTURE_TEARDOWN(master)
{
	bus_kill_all(&self->master, 1);
	bus_kill_all(self->pid, NCLIENTS);
	if (variant->path)
		unlink(self->bus.sa.sbus_path);
	if (self->sh != MAP_FAILED)
		munmap(self->sh, sizeof(*self->sh));
}

static bool wait_flag(int *flag, int value)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < value) {
		if (bus_elapsed_ms(&start) > STUCK_S * 1000)
			return false;
		usleep(10000);
	}
	return true;
}

/* The master process: bus up, join every client, multicast until killed. */
static void master_main(struct __test_metadata *_metadata,
			FIXTURE_DATA(master) *self)
{
	int m, afd[NCLIENTS], i;

	m = bus_master(_metadata, &self->bus);
	__atomic_store_n(&self->sh->ready, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NCLIENTS; i++) {
		long_timeouts(m);
		afd[i] = accept(m, NULL, NULL);
		if (afd[i] < 0 || setsockopt(afd[i], SOL_BUS, BUS_JOIN_BUS, NULL, 0))
			_exit(1);
	}
	__atomic_store_n(&self->sh->ready, 2, __ATOMIC_RELEASE);
	long_timeouts(afd[0]);
	sender_loop(self->sh, afd[0], &self->bus, bus_mcast(0), NCLIENTS);
	_exit(1);
}

struct client_rx {
	struct fault_shared *sh;
	struct rx_state *rx;
	int fd;
	int rc;
};

static void *client_reader(void *arg)
{
	struct client_rx *c = arg;

	c->rc = receiver_loop(c->sh, c->rx, c->fd, false, true);
	return NULL;
}

/* A client process: read in a thread, multicast until the bus dies. */
static void client_main(FIXTURE_DATA(master) *self, int i)
{
	struct client_rx c = { .sh = self->sh, .rx = &self->sh->rx[i] };
	pthread_t t;
	int err;

	c.fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_NONE);
	long_timeouts(c.fd);
	if (c.fd < 0 || bus_connect_name(c.fd, &self->bus)) {
		snprintf(c.rx->why, sizeof(c.rx->why), "connect: %s", strerror(errno));
		_exit(1);
	}
	if (!wait_flag(&self->sh->ready, 2) ||
	    pthread_create(&t, NULL, client_reader, &c)) {
		snprintf(c.rx->why, sizeof(c.rx->why), "never joined");
		_exit(1);
	}
	err = sender_loop(self->sh, c.fd, &self->bus, bus_mcast(0), i);
	pthread_join(t, NULL);
	if (c.rc)
		_exit(1);
	if (err != EPIPE && err != ECONNRESET) {
		snprintf(c.rx->why, sizeof(c.rx->why),
			 "after the master died: %s", self->sh->send_why[i]);
		_exit(1);
	}
	_exit(0);
}

TEST_F_TIMEOUT(master, kill_master, 600)
{
	struct bus_peer p;
	int m, i, status;

	self->master = fork();
	ASSERT_LE(0, self->master);
	if (!self->master)
		master_main(_metadata, self);
	ASSERT_TRUE(wait_flag(&self->sh->ready, 1));
	for (i = 0; i < NCLIENTS; i++) {
		self->pid[i] = fork();
		ASSERT_LE(0, self->pid[i]);
		if (!self->pid[i])
			client_main(self, i);
	}
	ASSERT_TRUE(wait_more(self->sh, (1u << NCLIENTS) - 1, PROGRESS))
		TH_LOG("no traffic");

	ASSERT_OK(kill(self->master, SIGKILL));
	ASSERT_EQ(self->master, waitpid(self->master, &status, 0));
	self->master = -1;
	for (i = 0; i < NCLIENTS; i++) {
		ASSERT_EQ(self->pid[i], waitpid(self->pid[i], &status, 0));
		self->pid[i] = -1;
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("client %d: status %#x: %s", i, status,
			       self->sh->rx[i].why);
	}

	/* The name serves a new bus (a path once the old inode is gone). */
	m = bus_socket(_metadata, BUS_PROTO_NONE);
	if (variant->path) {
		ASSERT_ERRNO(EADDRINUSE, bus_bind_name(m, &self->bus));
		ASSERT_OK(unlink(self->bus.sa.sbus_path));
	}
	ASSERT_OK(bus_bind_name(m, &self->bus));
	ASSERT_OK(listen(m, 4));
	bus_peer_open(_metadata, &p, m, &self->bus, true);
	ASSERT_EQ(1, p.addr);
	bus_send_str(_metadata, p.cfd, &self->bus, p.addr, "again");
	bus_expect(_metadata, p.cfd, &self->bus, p.addr, "again");
	bus_send_plain(_metadata, p.afd, "from the new master");
	bus_expect(_metadata, p.cfd, &self->bus, BUS_MASTER_ADDR,
		   "from the new master");
	bus_peer_close(&p);
	close(m);
	bus_expect_counts(_metadata, &self->base);
}

TEST_HARNESS_MAIN
