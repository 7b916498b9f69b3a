// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/net/bus (af_bus.rst, "/proc/net/bus"): its header, one line per
 * AF_BUS socket of the namespace with role, state, joined and eavesdrop
 * flags, queue length, limit, drops, addresses and path; lines come and
 * go with the sockets; other namespaces' sockets are not listed; a read
 * in short chunks resumes where it stopped.
 */
#include "af_bus_test.h"

#include <sched.h>
#include <sys/wait.h>

#define HEADER "Num              Inode    Proto Role     State        " \
	       "Joined Eavesdrop RecvQ   MaxQLen Drops      Addresses Path"

struct bus_line {
	unsigned long inode;
	unsigned int proto;
	char role[16];
	char state[16];
	int joined, eavesdrop;
	unsigned int recvq, maxqlen, drops;
	char addrs[256];
	char path[256];		/* "" when the line has none */
};

static unsigned long inode_of(struct __test_metadata *_metadata, int fd)
{
	struct stat st;

	ASSERT_OK(fstat(fd, &st));
	return st.st_ino;
}

/*
 * Find the line of the socket with this inode in /proc/net/bus. Returns
 * false if there is none; checks the header and the number of lines.
 */
static bool find_line(struct __test_metadata *_metadata, unsigned long inode,
		      struct bus_line *out, int *nlines)
{
	char line[1024], num[32];
	struct bus_line l;
	bool found = false;
	FILE *f = fopen("/proc/net/bus", "r");
	int n, pos;

	ASSERT_NE(NULL, f) TH_LOG("/proc/net/bus: %s", strerror(errno));
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	line[strcspn(line, "\n")] = 0;
	ASSERT_STREQ(HEADER, line);
	*nlines = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		memset(&l, 0, sizeof(l));
		pos = 0;
		n = sscanf(line, "%31s %lu %u %15s %15s %d %d %u %u %u %255s%n",
			   num, &l.inode, &l.proto, l.role, l.state, &l.joined,
			   &l.eavesdrop, &l.recvq, &l.maxqlen, &l.drops,
			   l.addrs, &pos);
		ASSERT_EQ(11, n) TH_LOG("bad line \"%s\"", line);
		if (line[pos] == ' ')
			snprintf(l.path, sizeof(l.path), "%s", line + pos + 1);
		else
			ASSERT_EQ(0, line[pos]);
		(*nlines)++;
		if (l.inode == inode) {
			ASSERT_FALSE(found) TH_LOG("inode %lu twice", inode);
			*out = l;
			found = true;
		}
	}
	fclose(f);
	return found;
}

static struct bus_line line_of(struct __test_metadata *_metadata, int fd)
{
	struct bus_line l;
	int n;

	ASSERT_TRUE(find_line(_metadata, inode_of(_metadata, fd), &l, &n))
		TH_LOG("no line for fd %d", fd);
	return l;
}

/* "@" and the abstract name as the tests bind it */
static void abstract_path(const struct bus_name *bus, char *buf, size_t len)
{
	snprintf(buf, len, "@%.*s", (int)(bus->len - BUS_SA_NOPATH - 1),
		 bus->sa.sbus_path + 1);
}

static void expect_line(struct __test_metadata *_metadata,
			const struct bus_line *l, const char *role,
			const char *state, int joined, int eavesdrop,
			unsigned int recvq, const char *addrs,
			const char *path)
{
	ASSERT_STREQ(role, l->role);
	ASSERT_STREQ(state, l->state);
	ASSERT_EQ(joined, l->joined);
	ASSERT_EQ(eavesdrop, l->eavesdrop);
	ASSERT_EQ(recvq, l->recvq);
	ASSERT_STREQ(addrs, l->addrs);
	ASSERT_STREQ(path, l->path);
}

TEST(fresh_socket)
{
	int fd = socket(AF_BUS, SOCK_SEQPACKET, BUS_PROTO_DBUS);
	struct bus_line l;

	ASSERT_LE(0, fd);
	l = line_of(_metadata, fd);
	expect_line(_metadata, &l, "none", "unconnected", 0, 0, 0, "-", "");
	ASSERT_EQ(1U, l.proto);
	ASSERT_EQ(BUS_QLEN_MAX, l.maxqlen);
	ASSERT_EQ(0U, l.drops);
	close(fd);
}

TEST(line_goes_with_the_socket)
{
	int fd = socket(AF_BUS, SOCK_SEQPACKET, 0), before, after;
	unsigned long ino;
	struct bus_line l;

	ASSERT_LE(0, fd);
	ino = inode_of(_metadata, fd);
	ASSERT_TRUE(find_line(_metadata, ino, &l, &before));
	close(fd);
	ASSERT_FALSE(find_line(_metadata, ino, &l, &after));
	ASSERT_EQ(before - 1, after);
}

TEST(master_bound_then_listening)
{
	struct bus_name bus = bus_name_abstract();
	int fd = bus_socket(_metadata, BUS_PROTO_NONE);
	struct bus_line l;
	char path[128];

	abstract_path(&bus, path, sizeof(path));
	ASSERT_OK(bus_bind_name(fd, &bus));
	l = line_of(_metadata, fd);
	expect_line(_metadata, &l, "master", "bound", 0, 0, 0,
		    "0000000000000000", path);
	ASSERT_OK(listen(fd, 4));
	l = line_of(_metadata, fd);
	expect_line(_metadata, &l, "master", "listening", 0, 0, 0,
		    "0000000000000000", path);
	close(fd);
}

TEST(filesystem_path_escaped)
{
	char path[64];
	struct bus_name bus;
	struct bus_line l;
	int fd;

	snprintf(path, sizeof(path), "/tmp/afbus proc-%d", (int)getpid());
	unlink(path);
	bus = bus_name_path(path);
	fd = bus_master(_metadata, &bus);
	l = line_of(_metadata, fd);
	snprintf(path, sizeof(path), "/tmp/afbus\\040proc-%d", (int)getpid());
	ASSERT_STREQ(path, l.path);
	close(fd);
	unlink(bus.sa.sbus_path);
}

BUS_PEERS_FIXTURE(pair, 2, 1)

TEST_F(pair, client_and_accepted)
{
	char path[128], addrs[64];
	int qlen = 77, i;
	struct bus_line l;

	abstract_path(&self->bus, path, sizeof(path));
	snprintf(addrs, sizeof(addrs), "%016llx",
		 (unsigned long long)self->p[0].addr);
	l = line_of(_metadata, self->p[0].cfd);
	expect_line(_metadata, &l, "client", "connected", 1, 0, 0, addrs,
		    path);
	l = line_of(_metadata, self->p[0].afd);
	expect_line(_metadata, &l, "accepted", "connected", 1, 0, 0, addrs,
		    path);
	/* p1 has not joined */
	l = line_of(_metadata, self->p[1].cfd);
	ASSERT_EQ(0, l.joined);

	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR,
			       bus_mkaddr(3, 0x42)));
	ASSERT_OK(bus_addr_opt(self->p[0].afd, BUS_ADD_ADDR,
			       bus_mkaddr(0xffff, 7)));
	ASSERT_OK(setsockopt(self->p[0].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	ASSERT_OK(setsockopt(self->p[0].afd, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	for (i = 0; i < 3; i++)
		bus_send_plain(_metadata, self->p[0].afd, "q");
	snprintf(addrs, sizeof(addrs), "%016llx,0003000000000042,ffff000000000007",
		 (unsigned long long)self->p[0].addr);
	l = line_of(_metadata, self->p[0].cfd);
	expect_line(_metadata, &l, "client", "connected", 1, 1, 3, addrs,
		    path);
	ASSERT_EQ(77U, l.maxqlen);
	l = line_of(_metadata, self->p[0].afd);
	expect_line(_metadata, &l, "accepted", "connected", 1, 1, 0, addrs,
		    path);
	ASSERT_EQ(BUS_QLEN_MAX, l.maxqlen);
}

TEST_F(pair, eavesdropper_drops_counted)
{
	int qlen = 1, i;
	struct bus_line l;

	bus_join(_metadata, self->p[1].afd);
	ASSERT_OK(setsockopt(self->p[1].afd, SOL_BUS, BUS_SET_EAVESDROP,
			     NULL, 0));
	ASSERT_OK(setsockopt(self->p[1].afd, SOL_BUS, BUS_SET_MAXQLEN, &qlen,
			     sizeof(qlen)));
	for (i = 0; i < 4; i++)
		bus_send_plain(_metadata, self->p[0].cfd, "x");
	l = line_of(_metadata, self->p[1].cfd);
	ASSERT_EQ(1U, l.recvq);
	ASSERT_EQ(3U, l.drops);
}

TEST_F(pair, accepted_of_closed_client)
{
	char path[128], addrs[32];
	struct bus_line l;

	abstract_path(&self->bus, path, sizeof(path));
	snprintf(addrs, sizeof(addrs), "%016llx",
		 (unsigned long long)self->p[0].addr);
	close(self->p[0].cfd);
	self->p[0].cfd = -1;
	l = line_of(_metadata, self->p[0].afd);
	expect_line(_metadata, &l, "accepted", "disconnected", 0, 0, 0, addrs,
		    path);
}

/* Lines of /proc/net/bus after the header, and whether one is inode's;
 * without assertions, for a forked child.
 */
static int count_lines(unsigned long inode, bool *found)
{
	FILE *f = fopen("/proc/net/bus", "r");
	char line[1024], num[32];
	unsigned long ino;
	int n = 0;

	*found = false;
	if (!f || !fgets(line, sizeof(line), f))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (sscanf(line, "%31s %lu", num, &ino) == 2 && ino == inode)
			*found = true;
	}
	fclose(f);
	return n;
}

/* A socket made in a new network namespace is listed there only. */
TEST(other_namespace_not_listed)
{
	int to_parent[2], to_child[2], status, mine, n;
	unsigned long theirs = 0;
	struct bus_line l;
	bool found;
	pid_t pid;
	char b;

	mine = socket(AF_BUS, SOCK_SEQPACKET, 0);
	ASSERT_LE(0, mine);
	ASSERT_OK(pipe(to_parent));
	ASSERT_OK(pipe(to_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct stat st;
		int fd;

		if (unshare(CLONE_NEWNET))
			_exit(10);
		fd = socket(AF_BUS, SOCK_SEQPACKET, 0);
		if (fd < 0 || fstat(fd, &st))
			_exit(11);
		/* its own socket only, not the parent's */
		if (count_lines(st.st_ino, &found) != 1 || !found)
			_exit(12);
		theirs = st.st_ino;
		if (write(to_parent[1], &theirs, sizeof(theirs)) !=
		    sizeof(theirs))
			_exit(13);
		_exit(read(to_child[0], &b, 1) == 1 ? 0 : 14);
	}
	ASSERT_EQ((ssize_t)sizeof(theirs), read(to_parent[0], &theirs,
						sizeof(theirs)));
	ASSERT_FALSE(find_line(_metadata, theirs, &l, &n));
	ASSERT_TRUE(find_line(_metadata, inode_of(_metadata, mine), &l, &n));
	ASSERT_EQ(1, write(to_child[1], "", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status) TH_LOG("child status %#x", status);
	close(mine);
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

/*
 * A read in short chunks resumes where the last one stopped: with many
 * sockets, read(2) of a few bytes at a time still gives the header once
 * and every socket exactly once, whole lines only.
 */
#define MANY_SOCKS	700

TEST(short_reads_resume)
{
	static unsigned long inodes[MANY_SOCKS];
	static int fds[MANY_SOCKS], seen[MANY_SOCKS];
	size_t len = 0, cap = 1 << 20;
	char *text = malloc(cap), *line, *save;
	int i, f, headers = 0, lines = 0;
	unsigned long ino;
	ssize_t n;

	ASSERT_NE(NULL, text);
	for (i = 0; i < MANY_SOCKS; i++) {
		fds[i] = bus_socket(_metadata, BUS_PROTO_NONE);
		inodes[i] = inode_of(_metadata, fds[i]);
	}
	f = open("/proc/net/bus", O_RDONLY);
	ASSERT_LE(0, f);
	/* 61 bytes: shorter than a line, and prime to its length */
	while ((n = read(f, text + len, 61)) > 0) {
		len += n;
		ASSERT_GT(cap - 61, len);
	}
	ASSERT_EQ(0, n) TH_LOG("read: %s", strerror(errno));
	close(f);
	text[len] = 0;
	ASSERT_EQ('\n', text[len - 1]);

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, HEADER)) {
			headers++;
			continue;
		}
		lines++;
		ASSERT_EQ(1, sscanf(line, "%*s %lu", &ino))
			TH_LOG("bad line \"%s\"", line);
		for (i = 0; i < MANY_SOCKS; i++)
			if (inodes[i] == ino)
				seen[i]++;
	}
	ASSERT_EQ(1, headers);
	ASSERT_LE(MANY_SOCKS, lines);
	for (i = 0; i < MANY_SOCKS; i++) {
		ASSERT_EQ(1, seen[i]) TH_LOG("socket %d (inode %lu)", i,
					     inodes[i]);
		close(fds[i]);
	}
	free(text);
}

TEST_HARNESS_MAIN
