// SPDX-License-Identifier: GPL-2.0
/*
 * Runs a socket-activated bus without systemd, for dbus-broker-launch
 * in the benchmark guest:
 *
 *   bench-activate SOCKET-PATH JOURNAL-PATH COMMAND [ARG...]
 *
 * It binds and listens on a unix stream socket at SOCKET-PATH and runs
 * COMMAND with it as file descriptor 3 and LISTEN_FDS=1, LISTEN_PID set
 * (the sd_listen_fds(3) protocol), and DBUS_SESSION_BUS_ADDRESS set to
 * unix:path=SOCKET-PATH.  It also binds a datagram socket at
 * JOURNAL-PATH (/run/systemd/journal/socket, where dbus-broker logs) and
 * copies the MESSAGE= field of what arrives there to stderr.  It exits
 * with COMMAND's status, and SIGTERM to it is passed on to COMMAND.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-stats.h"

static const char *tool = "bench-activate";
static volatile sig_atomic_t child_pid;
static int chld_pipe[2];

static void pass_on(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* SIGCHLD wakes the poll below (no periodic wake-ups in a benchmark). */
static void child_changed(int sig)
{
	int saved = errno;

	(void)sig;
	if (write(chld_pipe[1], "c", 1) < 0) {
		/* the pipe is full: poll wakes anyway */
	}
	errno = saved;
}

/* mkdir -p of the directory holding path. */
static void make_parent(const char *path)
{
	char *copy = strdup(path), *dir, *p;

	if (!copy)
		bench_die(tool, "out of memory");
	dir = dirname(copy);
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	mkdir(dir, 0755);
	free(copy);
}

static int bound_socket(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sa.sun_path))
		bench_die(tool, "path too long: %s", path);
	strcpy(sa.sun_path, path);
	make_parent(path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (type == SOCK_STREAM && listen(fd, 128)))
		bench_die(tool, "%s: %s", path, strerror(errno));
	return fd;
}

/* Print the MESSAGE= line of a journal datagram. */
static void copy_journal(int fd)
{
	char buf[8192], *line, *save;
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n <= 0)
		return;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "MESSAGE=", 8) == 0)
			fprintf(stderr, "%s: journal: %s\n", tool, line + 8);
}

int main(int argc, char **argv)
{
	int listen_fd, journal_fd, status;
	char address[200];
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: %s SOCKET-PATH JOURNAL-PATH COMMAND [ARG...]\n", tool);
		return 2;
	}
	listen_fd = bound_socket(argv[1], SOCK_STREAM);
	journal_fd = bound_socket(argv[2], SOCK_DGRAM);
	snprintf(address, sizeof(address), "unix:path=%s", argv[1]);

	if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK))
		bench_die(tool, "pipe: %s", strerror(errno));
	signal(SIGCHLD, child_changed);
	signal(SIGTERM, pass_on);
	signal(SIGINT, pass_on);
	pid = fork();
	if (pid < 0)
		bench_die(tool, "fork: %s", strerror(errno));
	if (pid == 0) {
		char pidstr[32];

		/* fd 3 without FD_CLOEXEC (dup2 to itself would keep it) */
		if (listen_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(listen_fd, 3) != 3)
			_exit(127);
		snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
		setenv("LISTEN_FDS", "1", 1);
		setenv("LISTEN_PID", pidstr, 1);
		setenv("DBUS_SESSION_BUS_ADDRESS", address, 1);
		execvp(argv[3], argv + 3);
		fprintf(stderr, "%s: %s: %s\n", tool, argv[3], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	close(listen_fd);

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = journal_fd, .events = POLLIN },
			{ .fd = chld_pipe[0], .events = POLLIN },
		};
		char drain[16];

		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (poll(pfd, 2, -1) <= 0)
			continue;
		if (pfd[0].revents)
			copy_journal(journal_fd);
		if (pfd[1].revents && read(chld_pipe[0], drain, sizeof(drain)) < 0)
			continue;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
