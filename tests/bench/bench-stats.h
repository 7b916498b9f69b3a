/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Clock, counters and summary statistics shared by the AF_BUS benchmark
 * tools in tests/bench/.  Every tool prints its figures as one line
 *   result KEY=VALUE ...
 * on stdout, which build-aux/bench-report.py collects from the guest log.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Between two operations of a benchmark under the profiler (run-bench
 * sets BENCH_JITTER for `make profile`): spin a pseudo-random number of
 * rounds below BENCH_JITTER. Under -icount the profiler samples every
 * fixed number of instructions, and a loop that runs the same number of
 * instructions every time is then sampled at the same few places of it
 * (a 150 us round trip sampled every 100 us: at three places); the
 * random pause moves the places from one operation to the next. Its
 * own samples fall in bench_jitter(). Without BENCH_JITTER it does
 * nothing.
 */
static __attribute__((unused, noinline)) void bench_jitter(void)
{
	static long max = -1;
	static uint32_t x = 2463534242u;
	volatile uint32_t sink = 0;
	uint32_t n;

	if (max < 0) {
		const char *e = getenv("BENCH_JITTER");

		max = e ? strtol(e, NULL, 10) : 0;
	}
	if (max <= 0)
		return;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	for (n = x % (uint32_t)max; n; n--)
		sink += n;
}

static inline void bench_die(const char *tool, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A positive integer option value, or die. */
static inline long bench_number(const char *tool, const char *opt,
				const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min)
		bench_die(tool, "bad value for %s: '%s' (at least %ld)", opt, s, min);
	return v;
}

/*
 * System-wide counters from /proc/stat: context switches and busy CPU
 * time (user + nice + system + irq + softirq, in clock ticks) of all
 * CPUs.  The guest runs nothing else while a benchmark runs, so their
 * difference over a run is the cost of that run.
 */
struct bench_counters {
	unsigned long long ctxt;
	unsigned long long busy_ticks;
};

static inline struct bench_counters bench_counters_read(void)
{
	struct bench_counters c = { 0, 0 };
	unsigned long long user, nice, sys, idle, iowait, irq, softirq;
	char line[512];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return c;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu",
			   &user, &nice, &sys, &idle, &iowait, &irq, &softirq) == 7)
			c.busy_ticks = user + nice + sys + irq + softirq;
		else
			sscanf(line, "ctxt %llu", &c.ctxt);
	}
	fclose(f);
	return c;
}

/*
 * "ctxt_per_op=X cpu_us_per_op=Y": context switches and busy CPU
 * microseconds (all CPUs) per operation between two readings.
 */
static inline void bench_print_counters(struct bench_counters a,
					struct bench_counters b,
					unsigned long ops)
{
	double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK);

	if (!ops)
		ops = 1;
	printf(" ctxt_per_op=%.2f cpu_us_per_op=%.1f",
	       (double)(b.ctxt - a.ctxt) / ops,
	       (double)(b.busy_ticks - a.busy_ticks) * tick_us / ops);
}

static int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The p-th percentile (0 < p <= 100) of n sorted samples, nearest rank. */
static inline uint64_t bench_percentile(const uint64_t *sorted, size_t n,
					double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Sort n latency samples (ns) and print median_us, p99_us and max_us. */
static inline void bench_print_latency(uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), bench_cmp_u64);
	printf(" median_us=%.1f p99_us=%.1f max_us=%.1f",
	       bench_percentile(ns, n, 50) / 1e3,
	       bench_percentile(ns, n, 99) / 1e3,
	       n ? ns[n - 1] / 1e3 : 0.0);
}

#endif /* BENCH_STATS_H */
