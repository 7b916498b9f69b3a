/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel holds for AF_BUS, as the stress, fault and fuzz
 * programs compare it before and after their traffic:
 *
 *   sockets   "sockets: used" of /proc/net/sockstat (every socket of
 *             every family, so the program itself must hold none extra)
 *   bus_socks the "sockets" column of the AF_BUS line of
 *             /proc/net/protocols (AF_BUS sockets of this namespace)
 *   bus_lines the sockets /proc/net/bus lists (lines after its header)
 *   bus_slab  objects of the AF_BUS slab cache, from
 *             /sys/kernel/slab/AF_BUS/objects after writing to its
 *             "shrink" (which flushes the per-CPU slabs and KASAN's
 *             quarantine, so the count is exact; needs CONFIG_SLUB_DEBUG),
 *             plus the live AF_BUS objects KFENCE allocated: a sampled
 *             allocation lives in KFENCE's pool, which the cache's
 *             "objects" does not count (KFENCE's debugfs "objects")
 *
 * Freeing is not always synchronous with close() (a killed process's
 * files are closed by its exit, skbs in flight hold their socket), so
 * bus_counts_settle() polls until the counts are back or a deadline.
 * Plain C, no harness: the fuzzer uses it too.
 */
#ifndef AF_BUS_COUNTS_H
#define AF_BUS_COUNTS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>

#define BUS_SLAB_DIR	"/sys/kernel/slab/AF_BUS"

struct bus_counts {
	long sockets;
	long bus_socks;
	long bus_lines;
	long bus_slab;
};

/* "sockets: used N" of /proc/net/sockstat, or -1. */
static inline long bus_count_sockstat(void)
{
	FILE *f = fopen("/proc/net/sockstat", "r");
	char line[256];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "sockets: used %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The "sockets" column of protocol name in /proc/net/protocols, or -1. */
static inline long bus_count_protocol(const char *name)
{
	FILE *f = fopen("/proc/net/protocols", "r");
	char line[512], proto[64];
	long size, n = -1, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %ld %ld", proto, &size, &v) == 3 &&
		    !strcmp(proto, name)) {
			n = v;
			break;
		}
	}
	fclose(f);
	return n;
}

/* Lines of /proc/net/bus after its header, or -1. */
static inline long bus_count_proc_lines(void)
{
	FILE *f = fopen("/proc/net/bus", "r");
	long n = -1;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		if (c == '\n')
			n++;
	fclose(f);
	return n;
}

#define BUS_KFENCE_OBJECTS	"/sys/kernel/debug/kfence/objects"

/*
 * Live AF_BUS objects in KFENCE's pool: 0 without KFENCE (or with it
 * off, kfence.sample_interval=0), -1 if they cannot be read. Each object
 * of the debugfs file is a block ended by a line of dashes, which says
 * "cache=NAME" on its first line and "freed by task" once freed.
 */
static inline long bus_count_kfence(void)
{
	char line[256];
	bool live = false;
	long n = 0;
	FILE *f;

	if (access("/sys/module/kfence", F_OK))
		return 0;
	f = fopen(BUS_KFENCE_OBJECTS, "r");
	if (!f && errno == ENOENT) {
		/* the guest mounts debugfs only at the end of its run */
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		f = fopen(BUS_KFENCE_OBJECTS, "r");
	}
	if (!f) {
		/* KFENCE off at boot makes no debugfs directory */
		f = fopen("/sys/module/kfence/parameters/sample_interval", "r");
		if (f && fscanf(f, "%ld", &n) == 1 && n == 0) {
			fclose(f);
			return 0;
		}
		if (f)
			fclose(f);
		return -1;
	}
	n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "kfence-#", 8))
			live = strstr(line, ", cache=AF_BUS\n") != NULL;
		else if (!strncmp(line, "freed by task", 13))
			live = false;
		else if (!strncmp(line, "-----", 5)) {
			n += live;
			live = false;
		}
	}
	fclose(f);
	return n;
}

/* Objects allocated in the AF_BUS slab cache, or -1. */
static inline long bus_count_slab(void)
{
	long n = -1;
	FILE *f;
	int fd;

	/* Without SLUB_DEBUG (no /proc/slabinfo) "objects" counts nothing. */
	if (access("/proc/slabinfo", R_OK))
		return -1;
	fd = open(BUS_SLAB_DIR "/shrink", O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, "1", 1) != 1) {
		close(fd);
		return -1;
	}
	close(fd);
	f = fopen(BUS_SLAB_DIR "/objects", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	if (n >= 0) {
		long k = bus_count_kfence();

		n = k < 0 ? -1 : n + k;
	}
	return n;
}

static inline struct bus_counts bus_counts_now(void)
{
	struct bus_counts c = {
		.sockets = bus_count_sockstat(),
		.bus_socks = bus_count_protocol("AF_BUS"),
		.bus_lines = bus_count_proc_lines(),
		.bus_slab = bus_count_slab(),
	};

	return c;
}

/* All three counts could be read. */
static inline bool bus_counts_valid(const struct bus_counts *c)
{
	return c->sockets >= 0 && c->bus_socks >= 0 && c->bus_lines >= 0 &&
	       c->bus_slab >= 0;
}

static inline bool bus_counts_equal(const struct bus_counts *a,
				    const struct bus_counts *b)
{
	return a->sockets == b->sockets && a->bus_socks == b->bus_socks &&
	       a->bus_lines == b->bus_lines && a->bus_slab == b->bus_slab;
}

static inline void bus_counts_print(FILE *f, const char *what,
				    const struct bus_counts *c)
{
	fprintf(f, "# %s: sockets used %ld, AF_BUS sockets %ld, /proc/net/bus lines %ld, AF_BUS slab objects %ld\n",
		what, c->sockets, c->bus_socks, c->bus_lines, c->bus_slab);
}

/*
 * Poll until the counts equal base or timeout_ms passed; returns whether
 * they did, with the last counts read in *now.
 */
static inline bool bus_counts_settle(const struct bus_counts *base,
				     struct bus_counts *now, int timeout_ms)
{
	struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
	int waited = 0;

	for (;;) {
		*now = bus_counts_now();
		if (bus_counts_equal(base, now))
			return true;
		if (waited >= timeout_ms)
			return false;
		nanosleep(&ts, NULL);
		waited += 50;
	}
}

#ifdef __KSELFTEST_HARNESS_H
/* A baseline that all three counts could be read for. */
static inline struct bus_counts bus_counts_base(struct __test_metadata *_metadata)
{
	struct bus_counts c = bus_counts_now();

	bus_counts_print(stderr, "baseline", &c);
	ASSERT_TRUE(bus_counts_valid(&c))
		TH_LOG("cannot read /proc/net/sockstat, /proc/net/protocols, "
		       "/proc/net/bus or " BUS_SLAB_DIR "/objects");
	return c;
}

/* The counts come back to base within 10 seconds. */
static inline void bus_expect_counts(struct __test_metadata *_metadata,
				     const struct bus_counts *base)
{
	struct bus_counts now;
	bool back = bus_counts_settle(base, &now, 10000);

	bus_counts_print(stderr, "after", &now);
	ASSERT_TRUE(back) TH_LOG("the kernel holds more than before the test");
}
#endif

#endif /* AF_BUS_COUNTS_H */
