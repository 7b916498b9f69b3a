/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the LSM tests share (af_bus_lsm.c with Smack, af_bus_selinux.c,
 * nfdbus_apparmor.c): whether an LSM is running, and the label
 * SO_PEERSEC gives. Include after af_bus_test.h (the harness).
 */
#ifndef AF_BUS_LSM_H
#define AF_BUS_LSM_H

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Whether @name is one of the running LSMs, as securityfs's lsm file
 * lists them (comma-separated); securityfs is mounted if it is not.
 */
static inline bool lsm_running(const char *name)
{
	char lsm[256], *tok, *save = NULL;
	ssize_t n = -1;
	int fd = open("/sys/kernel/security/lsm", O_RDONLY);

	if (fd < 0) {
		mkdir("/sys/kernel/security", 0755);
		mount("securityfs", "/sys/kernel/security", "securityfs", 0,
		      NULL);
		fd = open("/sys/kernel/security/lsm", O_RDONLY);
	}
	if (fd >= 0) {
		n = read(fd, lsm, sizeof(lsm) - 1);
		close(fd);
	}
	lsm[n > 0 ? n : 0] = 0;
	for (tok = strtok_r(lsm, ",\n", &save); tok;
	     tok = strtok_r(NULL, ",\n", &save))
		if (!strcmp(tok, name))
			return true;
	return false;
}

/* SO_PEERSEC on @fd gives exactly @want, with its NUL counted. */
static inline void expect_peersec(struct __test_metadata *_metadata, int fd,
				  const char *want)
{
	char label[256];
	socklen_t len = sizeof(label);

	memset(label, 0, sizeof(label));
	ASSERT_EQ(0, getsockopt(fd, SOL_SOCKET, SO_PEERSEC, label, &len));
	ASSERT_EQ(strlen(want) + 1, len);
	ASSERT_STREQ(want, label);
}

#endif /* AF_BUS_LSM_H */
