// SPDX-License-Identifier: GPL-2.0
/*
 * guest-check: sanity checks of the test guest, run before the tests.
 *
 *   guest-check cpus N      exactly N CPUs are online (sysconf, affinity
 *                           mask and /sys/devices/system/cpu/online agree)
 *   guest-check clocksource the current clocksource is tsc or hpet
 *   guest-check hrtimer     high-resolution timers are active:
 *                           clock_getres(CLOCK_MONOTONIC) is 1 ns
 *
 * Prints one line saying what it found; exits 0 when the check holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Count the CPUs in a list such as "0-3,5". Returns -1 if malformed. */
static int count_cpu_list(const char *list)
{
	const char *p = list;
	int n = 0;

	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -1;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo)
				return -1;
			p = end;
		}
		n += hi - lo + 1;
		if (*p == ',')
			p++;
	}
	return n;
}

static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, size, f)) {
		fprintf(stderr, "guest-check: cannot read %s: %s\n",
			path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int check_cpus(int want)
{
	char online[256];
	cpu_set_t set;
	long conf = sysconf(_SC_NPROCESSORS_ONLN);
	int affinity = -1, listed;

	if (read_line("/sys/devices/system/cpu/online", online, sizeof(online)))
		return 1;
	listed = count_cpu_list(online);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		affinity = CPU_COUNT(&set);

	printf("cpus: want %d, online %s (%d), sysconf %ld, affinity %d\n",
	       want, online, listed, conf, affinity);
	return !(listed == want && conf == want && affinity == want);
}

static int check_clocksource(void)
{
	static const char path[] =
		"/sys/devices/system/clocksource/clocksource0/current_clocksource";
	char cs[64];

	if (read_line(path, cs, sizeof(cs)))
		return 1;
	printf("clocksource: %s (want tsc or hpet)\n", cs);
	return !(strcmp(cs, "tsc") == 0 || strcmp(cs, "hpet") == 0);
}

static int check_hrtimer(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC, &res)) {
		perror("guest-check: clock_getres");
		return 1;
	}
	printf("hrtimer: CLOCK_MONOTONIC resolution %ld.%09ld s (want 1 ns)\n",
	       (long)res.tv_sec, res.tv_nsec);
	return !(res.tv_sec == 0 && res.tv_nsec == 1);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "cpus") == 0)
		return check_cpus(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "clocksource") == 0)
		return check_clocksource();
	if (argc == 2 && strcmp(argv[1], "hrtimer") == 0)
		return check_hrtimer();
	fprintf(stderr, "usage: guest-check cpus N | clocksource | hrtimer\n");
	return 2;
}
