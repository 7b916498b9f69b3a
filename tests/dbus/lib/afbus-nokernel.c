// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for the tests: runs a program as if the kernel had no
 * AF_BUS, or no nfdbus, which the test kernel has built in and cannot
 * unload (and it has no seccomp).  AFBUS_NOKERNEL says what is missing:
 *   afbus   socket(AF_BUS, ...) fails with EAFNOSUPPORT, as on a kernel
 *           built without AF_BUS;
 *   nfdbus  the generic netlink controller is asked for the family
 *           "nfdbuz" when the program asks for "nfdbus", so that the
 *           kernel itself answers ENOENT, as on a kernel without nfdbus;
 *   replies a request that sets a bus's flags (NFDBUS_CMD_SET_BUS) with
 *           reply tracking (NFDBUS_BUS_REPLIES) asks for a flag the
 *           kernel does not know too, so that it answers EINVAL, as an
 *           nfdbus without reply tracking does.
 * Only the tests use it (tests/dbus/dbus-nokernel.sh); the daemon and
 * libdbus take the code paths they take on such a kernel.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/netfilter/nfdbus.h>

#ifndef AF_BUS
#define AF_BUS 46
#endif

static int missing(const char *what)
{
	const char *v = getenv("AFBUS_NOKERNEL");

	return v != NULL && strcmp(v, what) == 0;
}

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if (domain == AF_BUS && missing("afbus")) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return real(domain, type, protocol);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	static ssize_t (*real)(int, const void *, size_t, int,
			       const struct sockaddr *, socklen_t);
	const struct nlmsghdr *nlh = buf;
	const struct genlmsghdr *genl = (const void *)((const char *)buf + NLMSG_HDRLEN);
	char copy[4096];
	char *name;

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, int,
				    const struct sockaddr *, socklen_t))
			dlsym(RTLD_NEXT, "sendto");
	/* CTRL_CMD_GETFAMILY for "nfdbus": ask for a family nobody has */
	if (missing("nfdbus") && len >= NLMSG_HDRLEN + GENL_HDRLEN &&
	    len <= sizeof(copy) && nlh->nlmsg_type == GENL_ID_CTRL &&
	    genl->cmd == CTRL_CMD_GETFAMILY) {
		memcpy(copy, buf, len);
		name = memmem(copy, len, "nfdbus", sizeof("nfdbus"));
		if (name != NULL) {
			name[5] = 'z';
			return real(fd, copy, len, flags, to, tolen);
		}
	}
	/* NFDBUS_CMD_SET_BUS with NFDBUS_BUS_REPLIES: a flag nobody knows */
	if (missing("replies") && len >= NLMSG_HDRLEN + GENL_HDRLEN &&
	    len <= sizeof(copy) && nlh->nlmsg_type != GENL_ID_CTRL &&
	    genl->cmd == NFDBUS_CMD_SET_BUS) {
		size_t off = NLMSG_HDRLEN + GENL_HDRLEN;

		memcpy(copy, buf, len);
		while (off + NLA_HDRLEN <= len) {
			struct nlattr *a = (struct nlattr *)(copy + off);
			uint32_t v;

			if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
				break;
			if ((a->nla_type & NLA_TYPE_MASK) == NFDBUS_A_BUS_FLAGS &&
			    a->nla_len == NLA_HDRLEN + sizeof(v)) {
				memcpy(&v, copy + off + NLA_HDRLEN, sizeof(v));
				if (v & NFDBUS_BUS_REPLIES) {
					v |= 1u << 31;
					memcpy(copy + off + NLA_HDRLEN, &v,
					       sizeof(v));
					return real(fd, copy, len, flags, to,
						    tolen);
				}
			}
			off += NLA_ALIGN(a->nla_len);
		}
	}
	return real(fd, buf, len, flags, to, tolen);
}
