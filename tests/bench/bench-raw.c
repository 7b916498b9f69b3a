// SPDX-License-Identifier: GPL-2.0
/*
 * Raw sockets, no D-Bus: AF_BUS against AF_UNIX SOCK_SEQPACKET doing the
 * same work.
 *
 *   bench-raw pingpong bus|unix [-n ROUNDS] [-w WARMUP] [-s BYTES]
 *       two processes bounce a BYTES-long message (default 128) back and
 *       forth ROUNDS times (default 10000, after WARMUP, default 1000):
 *       AF_BUS between two joined clients of one bus (each sendto()s the
 *       other's address), AF_UNIX over a socketpair.  Prints
 *       result rounds=N ok=N rounds_per_s=X median_us=X p99_us=X ...
 *   bench-raw fanout bus|unix [-N RECEIVERS] [-m MESSAGES] [-s BYTES]
 *       one sender gives MESSAGES (default 1000) messages to each of
 *       RECEIVERS (default 4) processes: AF_BUS with one multicast per
 *       message (the receivers hold addresses in a prefix of their own,
 *       which the sender has none in), AF_UNIX with one send per
 *       receiver and message.  Every receiver checks that it got every
 *       message once and in order.  Prints
 *       result receivers=N messages=M delivered=D expected=E msgs_per_s=X ...
 *       where the time runs from the first send until the last receiver
 *       has its last message.
 *   bench-raw fanout udp [-N RECEIVERS] [-m MESSAGES] [-s BYTES]
 *       the same with IPv4 UDP multicast on the loopback interface (what
 *       netdev told D-Bus to use in 2012): every receiver joins one
 *       group on lo, the sender sends each message once to the group.
 *       UDP may drop and reorder: each receiver counts what it got, in
 *       order or not, and the sender ends with an end marker, repeated
 *       until every receiver has reported (a receiver also gives up
 *       after 2 s without a message).  Prints the same result line with
 *       lost=L (never delivered, all receivers) and reordered=R
 *       (arrived after a later one); delivered counts every message
 *       that arrived, and the time runs to the last one that did.
 *   fanout ... -S USEC
 *       a slow receiver: the first receiver sleeps USEC microseconds
 *       after each message it reads (a client busy with other work).
 *       AF_BUS and AF_UNIX make the sender wait for its room (a
 *       nonblocking sender would get EAGAIN), UDP drops what does not
 *       fit in its socket buffer.  The result line adds slow_us=U,
 *       slow_got=G, slow_lost=L and slow_reordered=R (that receiver's
 *       own counts) and send_ms=T, the time the sender took to hand
 *       every message over.
 * Exit status 0 if everything arrived intact (udp: if the tool worked,
 * whatever UDP lost).
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <linux/bus.h>

#include "bench-stats.h"

#ifndef AF_BUS
#define AF_BUS 46
#endif
#ifndef SOL_BUS
#define SOL_BUS 288
#endif

static const char *tool = "bench-raw";

/* -S: the first receiver sleeps this long after each message (0: none) */
static long slow_us;

/* The receivers' prefix in fan-out: the sender has no address in it. */
#define FANOUT_PREFIX 2ULL

/* An AF_BUS bus: its master's listening socket and its name. */
struct raw_bus {
	int master;
	struct sockaddr_bus sa;
	socklen_t len;
};

static void raw_bus_open(struct raw_bus *b)
{
	int n;

	memset(b, 0, sizeof(*b));
	b->sa.sbus_family = AF_BUS;
	n = snprintf(b->sa.sbus_path + 1, sizeof(b->sa.sbus_path) - 1,
		     "afbus-bench-raw-%d", (int)getpid());
	b->len = offsetof(struct sockaddr_bus, sbus_path) + 1 + n;
	b->master = socket(AF_BUS, SOCK_SEQPACKET, 0);
	if (b->master < 0 || bind(b->master, (struct sockaddr *)&b->sa, b->len) ||
	    listen(b->master, 128))
		bench_die(tool, "AF_BUS master: %s", strerror(errno));
}

/*
 * A client joined to the bus; *addr is its prefix-0 address.  With
 * extra != 0 the master also gives it that address.  The master's
 * accepted socket stays open (closing it would take the client off the
 * bus) and is returned in *afd.
 */
static int raw_bus_client(struct raw_bus *b, __u64 extra, __u64 *addr, int *afd)
{
	struct sockaddr_bus me;
	socklen_t len = sizeof(me);
	int fd = socket(AF_BUS, SOCK_SEQPACKET, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&b->sa, b->len))
		bench_die(tool, "AF_BUS connect: %s", strerror(errno));
	*afd = accept(b->master, NULL, NULL);
	if (*afd < 0 || setsockopt(*afd, SOL_BUS, BUS_JOIN_BUS, NULL, 0))
		bench_die(tool, "AF_BUS accept/join: %s", strerror(errno));
	if (extra) {
		struct bus_addr a = { .s_addr = extra };

		if (setsockopt(*afd, SOL_BUS, BUS_ADD_ADDR, &a, sizeof(a)))
			bench_die(tool, "BUS_ADD_ADDR: %s", strerror(errno));
	}
	if (getsockname(fd, (struct sockaddr *)&me, &len))
		bench_die(tool, "getsockname: %s", strerror(errno));
	*addr = me.sbus_addr.s_addr;
	return fd;
}

/* Send buf to addr on the sender's own bus (address without a path). */
static ssize_t raw_bus_send(int fd, __u64 addr, const void *buf, size_t len)
{
	struct sockaddr_bus to;

	memset(&to, 0, sizeof(to));
	to.sbus_family = AF_BUS;
	to.sbus_addr.s_addr = addr;
	return sendto(fd, buf, len, MSG_NOSIGNAL, (struct sockaddr *)&to,
		      offsetof(struct sockaddr_bus, sbus_path));
}

/* Where each side of a ping-pong sends: an AF_BUS address or none. */
struct endpoint {
	int fd;
	bool bus;
	__u64 peer;
};

static ssize_t ep_send(const struct endpoint *e, const void *buf, size_t len)
{
	return e->bus ? raw_bus_send(e->fd, e->peer, buf, len)
		      : send(e->fd, buf, len, MSG_NOSIGNAL);
}

static void usage(void)
{
	fprintf(stderr, "usage: %s pingpong bus|unix [-n ROUNDS] [-w WARMUP] [-s BYTES]\n"
		"       %s fanout bus|unix|udp [-N RECEIVERS] [-m MESSAGES] [-s BYTES] [-S USEC]\n",
		tool, tool);
	exit(2);
}

static int pingpong(bool bus, long rounds, long warmup, long size)
{
	struct endpoint me, other;
	struct bench_counters c0, c1;
	unsigned char *buf, *in;
	uint64_t *lat, t0 = 0, t1;
	long i, ok = 0;
	pid_t pid;
	int status;

	buf = malloc(size + 1);
	in = malloc(size + 1);
	lat = calloc(rounds, sizeof(*lat));
	if (!buf || !in || !lat)
		bench_die(tool, "out of memory");
	memset(buf, 0x5a, size + 1);

	memset(&me, 0, sizeof(me));
	memset(&other, 0, sizeof(other));
	if (bus) {
		struct raw_bus b;
		int afd1, afd2;

		raw_bus_open(&b);
		me.bus = other.bus = true;
		me.fd = raw_bus_client(&b, 0, &other.peer, &afd1);
		other.fd = raw_bus_client(&b, 0, &me.peer, &afd2);
	} else {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
			bench_die(tool, "socketpair: %s", strerror(errno));
		me.fd = sv[0];
		other.fd = sv[1];
	}

	pid = fork();
	if (pid < 0)
		bench_die(tool, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* the echo side: send back whatever comes, until EOF or 0 bytes */
		for (;;) {
			ssize_t n = recv(other.fd, in, size + 1, 0);

			if (n <= 0 || ep_send(&other, in, n) != n)
				_exit(n == 0 ? 0 : 1);
		}
	}

	for (i = 0; i < warmup + rounds; i++) {
		uint64_t s = bench_now_ns();
		ssize_t n;

		if (i == warmup) {
			c0 = bench_counters_read();
			t0 = s;
		}
		buf[0] = (unsigned char)i;
		if (ep_send(&me, buf, size ? size : 1) < 0)
			bench_die(tool, "send: %s", strerror(errno));
		n = recv(me.fd, in, size + 1, 0);
		if (n < 0)
			bench_die(tool, "recv: %s", strerror(errno));
		if (i >= warmup) {
			lat[i - warmup] = bench_now_ns() - s;
			ok += n == (size ? size : 1) && in[0] == buf[0];
		}
		/* under the profiler only (the fan-out has none: a pause
		 * would change how sender and receivers take turns)
		 */
		bench_jitter();
	}
	t1 = bench_now_ns();
	c1 = bench_counters_read();

	/* an empty message ends the echo side */
	ep_send(&me, buf, 0);
	waitpid(pid, &status, 0);

	printf("result rounds=%ld ok=%ld rounds_per_s=%.1f", rounds, ok,
	       rounds / ((t1 - t0) / 1e9));
	bench_print_latency(lat, rounds);
	bench_print_counters(c0, c1, rounds);
	printf("\n");
	return ok == rounds ? 0 : 1;
}

/* What a fan-out receiver reports back to the sender. */
struct fanout_report {
	long got, bad, reordered;
	uint64_t last_ns;
	int slow;		/* the slow receiver's (-S) */
};

/* The slow receiver (-S) takes its time after each message. */
static void slow_down(bool slow)
{
	if (slow && slow_us > 0)
		usleep(slow_us);
}

/* The -S part of a result line: the slow receiver's counts (@slow) and
 * how long the sender took to hand everything over. */
static void print_slow(const struct fanout_report *slow, long messages,
		       uint64_t t0, uint64_t sent)
{
	if (slow_us <= 0)
		return;
	printf(" slow_us=%ld slow_got=%ld slow_lost=%ld slow_reordered=%ld send_ms=%.1f",
	       slow_us, slow->got, messages - slow->got, slow->reordered,
	       (sent - t0) / 1e6);
}

/* UDP multicast on lo: the group (in the local network control block,
 * which the kernel routes to the interface asked for without a route). */
#define UDP_GROUP "224.0.0.117"
#define UDP_PORT 45117
#define UDP_END 0xffffffffU

static void udp_mreq(struct ip_mreqn *mr)
{
	memset(mr, 0, sizeof(*mr));
	mr->imr_multiaddr.s_addr = inet_addr(UDP_GROUP);
	mr->imr_ifindex = if_nametoindex("lo");
	if (!mr->imr_ifindex)
		bench_die(tool, "no lo interface");
}

/* lo has no IFF_MULTICAST by default: set it (and up) for the test. */
static void udp_lo_multicast(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
		bench_die(tool, "lo flags: %s", strerror(errno));
	if ((ifr.ifr_flags & (IFF_MULTICAST | IFF_UP)) != (IFF_MULTICAST | IFF_UP)) {
		ifr.ifr_flags |= IFF_MULTICAST | IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			bench_die(tool, "lo multicast on: %s", strerror(errno));
	}
	close(fd);
}

static int udp_receiver(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT) };
	struct ip_mreqn mr;
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM, 0);

	sa.sin_addr.s_addr = inet_addr(UDP_GROUP);
	udp_mreq(&mr);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		bench_die(tool, "UDP receiver: %s", strerror(errno));
	return fd;
}

static int udp_sender(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(UDP_PORT) };
	struct ip_mreqn mr;
	unsigned char loop = 1, ttl = 1;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	sa.sin_addr.s_addr = inet_addr(UDP_GROUP);
	udp_mreq(&mr);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		bench_die(tool, "UDP sender: %s", strerror(errno));
	return fd;
}

/* A UDP receiver: what arrives until the end marker or 2 s of silence. */
static void udp_receive(int fd, int ready, int report, long size, bool slow)
{
	struct fanout_report r = { 0, 0, 0, 0, slow };
	unsigned char *in = malloc(size + 1);
	struct timeval tv = { .tv_sec = 2 };
	long next = 0;
	uint32_t seq;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!in || write(ready, "r", 1) != 1)
		_exit(1);
	for (;;) {
		ssize_t n = recv(fd, in, size + 1, 0);

		if (n <= 0)
			break;
		memcpy(&seq, in, sizeof(seq));
		if (seq == UDP_END)
			break;
		if (n != size) {
			r.bad++;
			continue;
		}
		r.got++;
		if ((long)seq < next)
			r.reordered++;
		else
			next = seq + 1;
		r.last_ns = bench_now_ns();
		slow_down(slow);
	}
	_exit(write(report, &r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

static int fanout_udp(long receivers, long messages, long size)
{
	struct bench_counters c0, c1;
	struct fanout_report slow = { 0, 0, 0, 0, 1 };
	int ready[2], report[2], sender, status;
	long i, j, delivered = 0, bad = 0, reordered = 0, reported = 0;
	uint64_t t0, sent, last = 0;
	unsigned char *buf;

	if (size < (long)sizeof(uint32_t))
		size = sizeof(uint32_t);
	buf = calloc(1, size);
	if (!buf || pipe(ready) || pipe(report))
		bench_die(tool, "out of memory or pipes");
	udp_lo_multicast();
	for (i = 0; i < receivers; i++) {
		int fd = udp_receiver();
		pid_t pid = fork();

		if (pid < 0)
			bench_die(tool, "fork: %s", strerror(errno));
		if (pid == 0)
			udp_receive(fd, ready[1], report[1], size, i == 0);
		close(fd);
	}
	for (i = 0; i < receivers; i++) {
		char ch;

		if (read(ready[0], &ch, 1) != 1)
			bench_die(tool, "a receiver died");
	}
	sender = udp_sender();

	c0 = bench_counters_read();
	t0 = bench_now_ns();
	for (j = 0; j < messages; j++) {
		uint32_t seq = j;

		memcpy(buf, &seq, sizeof(seq));
		if (send(sender, buf, size, 0) != size)
			bench_die(tool, "UDP send: %s", strerror(errno));
	}
	sent = bench_now_ns();
	/* the end marker, until every receiver has reported */
	while (reported < receivers) {
		struct pollfd p = { .fd = report[0], .events = POLLIN };
		uint32_t end = UDP_END;

		memcpy(buf, &end, sizeof(end));
		send(sender, buf, size, 0);
		if (poll(&p, 1, 10) <= 0)
			continue;
		while (reported < receivers) {
			struct fanout_report r;

			if (read(report[0], &r, sizeof(r)) != sizeof(r))
				bench_die(tool, "a receiver died");
			reported++;
			delivered += r.got;
			bad += r.bad;
			reordered += r.reordered;
			if (r.slow)
				slow = r;
			if (r.last_ns > last)
				last = r.last_ns;
			if (poll(&p, 1, 0) <= 0)
				break;
		}
	}
	c1 = bench_counters_read();
	while (wait(&status) > 0)
		;

	printf("result receivers=%ld messages=%ld delivered=%ld expected=%ld bad=%ld"
	       " lost=%ld reordered=%ld msgs_per_s=%.1f",
	       receivers, messages, delivered, receivers * messages, bad,
	       receivers * messages - delivered, reordered,
	       last > t0 ? delivered / ((last - t0) / 1e9) : 0.0);
	print_slow(&slow, messages, t0, sent);
	bench_print_counters(c0, c1, delivered ? delivered : 1);
	printf("\n");
	return bad ? 1 : 0;
}

static void fanout_receive(int fd, int ready, int report, long messages, long size,
			   bool slow)
{
	struct fanout_report r = { 0, 0, 0, 0, slow };
	unsigned char *in = malloc(size + 1);
	struct timeval tv = { .tv_sec = 60 };
	uint32_t seq;

	/* a lost message ends the wait after 60 s instead of never */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!in || write(ready, "r", 1) != 1)
		_exit(1);
	while (r.got + r.bad < messages) {
		ssize_t n = recv(fd, in, size + 1, 0);

		if (n <= 0)
			break;
		memcpy(&seq, in, sizeof(seq));
		if (n == size && seq == (uint32_t)r.got)
			r.got++;
		else
			r.bad++;
		slow_down(slow);
	}
	r.last_ns = bench_now_ns();
	_exit(write(report, &r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

static int fanout(bool bus, long receivers, long messages, long size)
{
	struct bench_counters c0, c1;
	struct fanout_report slow = { 0, 0, 0, 0, 1 };
	int ready[2], report[2], sender = -1, *fds, *afds, status;
	long i, j, delivered = 0, bad = 0;
	uint64_t t0, sent, last = 0;
	unsigned char *buf;
	struct raw_bus b;
	__u64 addr;

	if (size < (long)sizeof(uint32_t))
		size = sizeof(uint32_t);
	buf = calloc(1, size);
	fds = calloc(receivers, sizeof(*fds));
	afds = calloc(receivers + 1, sizeof(*afds));
	if (!buf || !fds || !afds || pipe(ready) || pipe(report))
		bench_die(tool, "out of memory or pipes");

	if (bus) {
		raw_bus_open(&b);
		sender = raw_bus_client(&b, 0, &addr, &afds[receivers]);
	}
	for (i = 0; i < receivers; i++) {
		int sv[2];
		pid_t pid;

		if (bus) {
			fds[i] = raw_bus_client(&b, (FANOUT_PREFIX << BUS_PREFIX_SHIFT) | (i + 1),
						&addr, &afds[i]);
			sv[0] = -1;
			sv[1] = fds[i];
		} else {
			if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
				bench_die(tool, "socketpair: %s", strerror(errno));
			fds[i] = sv[0];
		}
		pid = fork();
		if (pid < 0)
			bench_die(tool, "fork: %s", strerror(errno));
		if (pid == 0)
			fanout_receive(sv[1], ready[1], report[1], messages, size, i == 0);
		if (!bus)
			close(sv[1]);
	}
	for (i = 0; i < receivers; i++) {
		char ch;

		if (read(ready[0], &ch, 1) != 1)
			bench_die(tool, "a receiver died");
	}

	c0 = bench_counters_read();
	t0 = bench_now_ns();
	for (j = 0; j < messages; j++) {
		uint32_t seq = j;

		memcpy(buf, &seq, sizeof(seq));
		if (bus) {
			if (raw_bus_send(sender, (FANOUT_PREFIX << BUS_PREFIX_SHIFT) | BUS_CLIENT_MASK,
					 buf, size) != size)
				bench_die(tool, "multicast: %s", strerror(errno));
			continue;
		}
		for (i = 0; i < receivers; i++)
			if (send(fds[i], buf, size, MSG_NOSIGNAL) != size)
				bench_die(tool, "send: %s", strerror(errno));
	}
	sent = bench_now_ns();
	for (i = 0; i < receivers; i++) {
		struct fanout_report r;

		if (read(report[0], &r, sizeof(r)) != sizeof(r))
			bench_die(tool, "a receiver died");
		delivered += r.got;
		bad += r.bad;
		if (r.last_ns > last)
			last = r.last_ns;
		if (r.slow)
			slow = r;
	}
	c1 = bench_counters_read();
	while (wait(&status) > 0)
		;

	printf("result receivers=%ld messages=%ld delivered=%ld expected=%ld bad=%ld msgs_per_s=%.1f",
	       receivers, messages, delivered, receivers * messages, bad,
	       delivered / ((last - t0) / 1e9));
	print_slow(&slow, messages, t0, sent);
	bench_print_counters(c0, c1, delivered);
	printf("\n");
	return delivered == receivers * messages && !bad ? 0 : 1;
}

int main(int argc, char **argv)
{
	long rounds = 10000, warmup = 1000, size = 128, receivers = 4, messages = 1000;
	bool bus = false, udp = false;
	int a;

	if (argc < 3)
		usage();
	if (strcmp(argv[2], "bus") == 0)
		bus = true;
	else if (strcmp(argv[2], "udp") == 0 && strcmp(argv[1], "fanout") == 0)
		udp = true;
	else if (strcmp(argv[2], "unix") != 0)
		usage();
	for (a = 3; a < argc; a++) {
		if (a + 1 >= argc)
			usage();
		if (strcmp(argv[a], "-n") == 0)
			rounds = bench_number(tool, "-n", argv[++a], 1);
		else if (strcmp(argv[a], "-w") == 0)
			warmup = bench_number(tool, "-w", argv[++a], 0);
		else if (strcmp(argv[a], "-s") == 0)
			size = bench_number(tool, "-s", argv[++a], 1);
		else if (strcmp(argv[a], "-N") == 0)
			receivers = bench_number(tool, "-N", argv[++a], 1);
		else if (strcmp(argv[a], "-m") == 0)
			messages = bench_number(tool, "-m", argv[++a], 1);
		else if (strcmp(argv[a], "-S") == 0)
			slow_us = bench_number(tool, "-S", argv[++a], 0);
		else
			usage();
	}
	if (strcmp(argv[1], "pingpong") == 0)
		return pingpong(bus, rounds, warmup, size);
	if (strcmp(argv[1], "fanout") == 0)
		return udp ? fanout_udp(receivers, messages, size)
			   : fanout(bus, receivers, messages, size);
	usage();
	return 2;
}
