// SPDX-License-Identifier: GPL-2.0
/*
 * AF_BUS under load: 64 client processes on one bus, 10000 multicasts
 * from the master to them and 10000 from the clients among themselves
 * (each client sends its 1/64th share to the prefix-0 multicast address,
 * which reaches every client, the sender included), all at once.
 *
 * Every client receives all 20000 messages.  Checked: nothing lost or
 * duplicated, each sender's messages in the order it sent them, the
 * payload bytes and source address of every message, and the total
 * order: all 64 clients receive the 20000 messages in the very same
 * order.  Afterwards the kernel's socket count, AF_BUS socket count and
 * AF_BUS slab objects are back at what they were before the test.
 *
 * AFBUS_STRESS_MSGS=N in the environment changes the 10000 (the debug
 * kernel's run uses 2000; see run-qemu.sh).
 */
#include "af_bus_test.h"
#include "af_bus_counts.h"

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define NCLIENTS	64
#define MASTER_IDX	NCLIENTS	/* sender index of the master */
#define DEFAULT_MSGS	10000
/*
 * Longest wait for one message or for room, a guard against hangs only:
 * under KASAN and TCG, with 64 processes on two CPUs, it is generous.
 */
#define STRESS_TIMEOUT_S	600
#define MAX_PAYLOAD	256

struct stress_hdr {
	uint32_t from;		/* sender index: client 0..63, or MASTER_IDX */
	uint32_t seq;		/* per-sender sequence number */
	uint32_t len;		/* whole message length */
};

/* Shared between the test process and its 64 client processes. */
struct stress_shared {
	uint32_t got[NCLIENTS];			/* messages received */
	char why[NCLIENTS][160];		/* first failure, if any */
	uint32_t log[];				/* [client][msg]: from << 24 | seq */
};

static unsigned int nmsgs;

/* Message length for (from, seq): 12..MAX_PAYLOAD, spread out. */
static size_t msg_len(uint32_t from, uint32_t seq)
{
	uint32_t h = (from * 2654435761u) ^ (seq * 40503u);

	return sizeof(struct stress_hdr) +
	       h % (MAX_PAYLOAD - sizeof(struct stress_hdr) + 1);
}

static unsigned char msg_byte(uint32_t from, uint32_t seq, size_t i)
{
	return (unsigned char)(from * 31 + seq * 7 + i);
}

static void msg_fill(unsigned char *buf, uint32_t from, uint32_t seq)
{
	struct stress_hdr h = { from, seq, msg_len(from, seq) };
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < h.len; i++)
		buf[i] = msg_byte(from, seq, i);
}

/* Multicasts client i sends: its share of nmsgs, round robin. */
static uint32_t client_share(unsigned int i)
{
	return (nmsgs - i + NCLIENTS - 1) / NCLIENTS;
}

static uint32_t *client_log(struct stress_shared *sh, unsigned int c)
{
	return sh->log + (size_t)c * 2 * nmsgs;
}

struct receiver {
	struct stress_shared *sh;
	unsigned int idx;
	int fd;
	const struct bus_name *bus;
};

static void *receive_all(void *arg)
{
	struct receiver *r = arg;
	uint32_t *log = client_log(r->sh, r->idx);
	char *why = r->sh->why[r->idx];
	unsigned char buf[MAX_PAYLOAD + 64];
	struct sockaddr_bus from;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct stress_hdr h;
	__u64 want_src;
	ssize_t n;
	size_t i;

	while (r->sh->got[r->idx] < 2 * nmsgs) {
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		n = recvmsg(r->fd, &msg, 0);
		if (n < (ssize_t)sizeof(h)) {
			snprintf(why, sizeof(r->sh->why[0]),
				 "recvmsg returned %zd (%s) after %u messages",
				 n, n < 0 ? strerror(errno) : "short", r->sh->got[r->idx]);
			return NULL;
		}
		memcpy(&h, buf, sizeof(h));
		if (h.from > MASTER_IDX || h.len != (size_t)n ||
		    h.len != msg_len(h.from, h.seq) || (msg.msg_flags & MSG_TRUNC)) {
			snprintf(why, sizeof(r->sh->why[0]),
				 "bad message %zd bytes, from %u seq %u len %u",
				 n, h.from, h.seq, h.len);
			return NULL;
		}
		for (i = sizeof(h); i < h.len; i++) {
			if (buf[i] != msg_byte(h.from, h.seq, i)) {
				snprintf(why, sizeof(r->sh->why[0]),
					 "byte %zu of from %u seq %u is wrong",
					 i, h.from, h.seq);
				return NULL;
			}
		}
		want_src = h.from == MASTER_IDX ? BUS_MASTER_ADDR : h.from + 1;
		if (msg.msg_namelen != r->bus->len ||
		    from.sbus_addr.s_addr != want_src) {
			snprintf(why, sizeof(r->sh->why[0]),
				 "from %u seq %u: source %#llx (namelen %u)",
				 h.from, h.seq,
				 (unsigned long long)from.sbus_addr.s_addr,
				 msg.msg_namelen);
			return NULL;
		}
		log[r->sh->got[r->idx]] = h.from << 24 | h.seq;
		__atomic_store_n(&r->sh->got[r->idx], r->sh->got[r->idx] + 1,
				 __ATOMIC_RELEASE);
	}
	return NULL;
}

static int set_timeouts(int fd, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -1;
	return 0;
}

/* Send count multicasts as sender `from` on fd; 0 or an errno. */
static int send_multicasts(int fd, const struct bus_name *bus, uint32_t from,
			   uint32_t count, char *why, size_t whylen)
{
	unsigned char buf[MAX_PAYLOAD];
	uint32_t seq;
	ssize_t n;

	for (seq = 0; seq < count; seq++) {
		msg_fill(buf, from, seq);
		n = bus_sendto(fd, bus, bus_mcast(0), buf, msg_len(from, seq), 0);
		if (n != (ssize_t)msg_len(from, seq)) {
			snprintf(why, whylen, "sender %u: send of seq %u returned %zd (%s)",
				 from, seq, n, strerror(errno));
			return errno ? errno : EIO;
		}
	}
	return 0;
}

/* Client process i: receive everything in a thread, send its share. */
static void client_main(struct stress_shared *sh, unsigned int i, int fd,
			const struct bus_name *bus)
{
	struct receiver r = { .sh = sh, .idx = i, .fd = fd, .bus = bus };
	char why[160] = "";
	pthread_t t;
	int err;

	if (set_timeouts(fd, STRESS_TIMEOUT_S) ||
	    pthread_create(&t, NULL, receive_all, &r)) {
		snprintf(sh->why[i], sizeof(sh->why[i]), "setup: %s", strerror(errno));
		_exit(1);
	}
	err = send_multicasts(fd, bus, i, client_share(i), why, sizeof(why));
	pthread_join(t, NULL);
	if (err && !sh->why[i][0])
		memcpy(sh->why[i], why, sizeof(why));
	_exit(sh->why[i][0] ? 1 : 0);
}

FIXTURE(stress) {
	struct bus_counts base;
	struct bus_name bus;
	int m;
	struct bus_peer p[NCLIENTS];
	struct stress_shared *sh;
	size_t sh_size;
	pid_t pid[NCLIENTS];
};

FIXTURE_SETUP(stress)
{
	const char *env = getenv("AFBUS_STRESS_MSGS");
	int i;

	nmsgs = env ? (unsigned int)strtoul(env, NULL, 0) : DEFAULT_MSGS;
	ASSERT_LT(0, nmsgs);
	ASSERT_GT(1u << 24, nmsgs);
	self->sh = MAP_FAILED;
	for (i = 0; i < NCLIENTS; i++)
		self->pid[i] = -1;
	self->base = bus_counts_base(_metadata);
	self->sh_size = sizeof(*self->sh) +
			(size_t)NCLIENTS * 2 * nmsgs * sizeof(uint32_t);
	self->sh = mmap(NULL, self->sh_size, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	bus_open_peers(_metadata, &self->bus, &self->m, self->p, NCLIENTS,
		       NCLIENTS);
}

FIXTURE_TEARDOWN(stress)
{
	bus_kill_all(self->pid, NCLIENTS);
	bus_close_peers(&self->m, self->p, NCLIENTS);
	if (self->sh != MAP_FAILED)
		munmap(self->sh, self->sh_size);
}

/* Check client c's log against client 0's and against per-sender FIFO. */
static void check_log(struct __test_metadata *_metadata,
		      struct stress_shared *sh, unsigned int c)
{
	uint32_t next[NCLIENTS + 1] = { 0 };
	uint32_t *log = client_log(sh, c), *ref = client_log(sh, 0);
	uint32_t k, from, seq;

	for (k = 0; k < 2 * nmsgs; k++) {
		from = log[k] >> 24;
		seq = log[k] & 0xffffff;
		ASSERT_EQ(next[from], seq)
			TH_LOG("client %u: message %u is seq %u of sender %u, expected seq %u",
			       c, k, seq, from, next[from]);
		next[from]++;
		ASSERT_EQ(ref[k], log[k])
			TH_LOG("total order: message %u is %u/%u at client %u but %u/%u at client 0",
			       k, from, seq, c, ref[k] >> 24, ref[k] & 0xffffff);
	}
	for (from = 0; from < NCLIENTS; from++)
		ASSERT_EQ(client_share(from), next[from]);
	ASSERT_EQ(nmsgs, next[MASTER_IDX]);
}

TEST_F_TIMEOUT(stress, multicast_64_clients_total_order, 3600)
{
	struct timespec start;
	char why[160] = "";
	int i, j, status, err;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < NCLIENTS; i++) {
		self->pid[i] = fork();
		ASSERT_LE(0, self->pid[i]);
		if (self->pid[i] == 0) {
			/* Hold only its own client socket. */
			for (j = 0; j < NCLIENTS; j++) {
				close(self->p[j].afd);
				if (j != i)
					close(self->p[j].cfd);
			}
			close(self->m);
			client_main(self->sh, i, self->p[i].cfd, &self->bus);
		}
	}
	/* The clients' sockets live in their processes only. */
	for (i = 0; i < NCLIENTS; i++) {
		close(self->p[i].cfd);
		self->p[i].cfd = -1;
	}

	/* The master multicasts from an accepted socket. */
	ASSERT_EQ(0, set_timeouts(self->p[0].afd, STRESS_TIMEOUT_S));
	err = send_multicasts(self->p[0].afd, &self->bus, MASTER_IDX, nmsgs,
			      why, sizeof(why));
	ASSERT_EQ(0, err) TH_LOG("%s", why);

	for (i = 0; i < NCLIENTS; i++) {
		ASSERT_EQ(self->pid[i], waitpid(self->pid[i], &status, 0));
		self->pid[i] = -1;
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("client %d: status %#x: %s", i, status,
			       self->sh->why[i]);
	}
	for (i = 0; i < NCLIENTS; i++) {
		ASSERT_EQ(2 * nmsgs, self->sh->got[i])
			TH_LOG("client %d received %u of %u", i,
			       self->sh->got[i], 2 * nmsgs);
		check_log(_metadata, self->sh, i);
	}
	TH_LOG("64 clients received the same %u messages in the same order (%ld ms)",
	       2 * nmsgs, bus_elapsed_ms(&start));

	/*
	 * Nothing was left queued for the master: the accepted sockets of
	 * the clients, which have exited, read end of file at once.
	 */
	for (i = 0; i < NCLIENTS; i++)
		ASSERT_EQ(0, recv(self->p[i].afd, why, sizeof(why), MSG_DONTWAIT))
			TH_LOG("accepted socket %d: %s", i, strerror(errno));
	bus_close_peers(&self->m, self->p, NCLIENTS);
	bus_expect_counts(_metadata, &self->base);
}

TEST_HARNESS_MAIN
