// SPDX-License-Identifier: GPL-2.0
/*
 * What the bus says of a connection's credentials.
 *
 * afbus-creds serve UID GID[,GID...]
 *   Takes UID as its user, the first GID as its group and all of them as
 *   its supplementary groups, connects to the session bus, prints
 *   "ready UNIQUE-NAME PID" and stays connected until killed.
 * afbus-creds query NAME
 *   Prints, one a line and sorted, what GetConnectionCredentials says of
 *   NAME (KEY=VALUE; UnixGroupIDs as a comma-separated list, sorted;
 *   LinuxSecurityLabel without its trailing NUL), then
 *   "GetConnectionUnixUser=N" and "GetConnectionUnixProcessID=N" (or
 *   "...=error NAME").
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dbus/dbus.h>

static DBusConnection *c;

static DBusMessage *call(const char *method, const char *name, DBusError *error)
{
	DBusMessage *m, *r;

	m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
					 DBUS_INTERFACE_DBUS, method);
	dbus_message_append_args(m, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID);
	r = dbus_connection_send_with_reply_and_block(c, m, 10000, error);
	dbus_message_unref(m);
	return r;
}

static int cmp_u32(const void *a, const void *b)
{
	dbus_uint32_t x = *(const dbus_uint32_t *)a, y = *(const dbus_uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int query(const char *name)
{
	DBusError error = DBUS_ERROR_INIT;
	DBusMessageIter iter, dict, entry, var, arr;
	DBusMessage *r;
	const char *methods[] = { "GetConnectionUnixUser", "GetConnectionUnixProcessID" };
	unsigned int i;

	r = call("GetConnectionCredentials", name, &error);
	if (!r) {
		printf("GetConnectionCredentials=error %s\n", error.name);
		dbus_error_free(&error);
	} else {
		dbus_message_iter_init(r, &iter);
		dbus_message_iter_recurse(&iter, &dict);
		while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
			const char *key;

			dbus_message_iter_recurse(&dict, &entry);
			dbus_message_iter_get_basic(&entry, &key);
			dbus_message_iter_next(&entry);
			dbus_message_iter_recurse(&entry, &var);
			printf("%s=", key);
			switch (dbus_message_iter_get_arg_type(&var)) {
			case DBUS_TYPE_UINT32: {
				dbus_uint32_t u;

				dbus_message_iter_get_basic(&var, &u);
				printf("%u", u);
				break;
			}
			case DBUS_TYPE_ARRAY: {
				int n, j;

				dbus_message_iter_recurse(&var, &arr);
				if (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_UINT32) {
					dbus_uint32_t *v, *sorted;

					dbus_message_iter_get_fixed_array(&arr, &v, &n);
					sorted = calloc(n + 1, sizeof(*sorted));
					memcpy(sorted, v, n * sizeof(*v));
					qsort(sorted, n, sizeof(*sorted), cmp_u32);
					for (j = 0; j < n; j++)
						printf("%s%u", j ? "," : "", sorted[j]);
					free(sorted);
				} else if (dbus_message_iter_get_arg_type(&arr) == DBUS_TYPE_BYTE) {
					const char *b;

					dbus_message_iter_get_fixed_array(&arr, &b, &n);
					if (n > 0 && b[n - 1] == '\0')
						n--;
					printf("%.*s", n, b);
				} else {
					printf("(array)");
				}
				break;
			}
			default:
				printf("(type %c)", dbus_message_iter_get_arg_type(&var));
			}
			printf("\n");
			dbus_message_iter_next(&dict);
		}
		dbus_message_unref(r);
	}

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		dbus_uint32_t u;

		r = call(methods[i], name, &error);
		if (!r) {
			printf("%s=error %s\n", methods[i], error.name);
			dbus_error_free(&error);
		} else if (dbus_message_get_args(r, &error, DBUS_TYPE_UINT32, &u,
						 DBUS_TYPE_INVALID)) {
			printf("%s=%u\n", methods[i], u);
			dbus_message_unref(r);
		}
	}
	return 0;
}

static int serve(uid_t uid, char *gid_list)
{
	DBusError error = DBUS_ERROR_INIT;
	gid_t gids[64];
	int n = 0;
	char *s;

	for (s = strtok(gid_list, ","); s && n < 64; s = strtok(NULL, ","))
		gids[n++] = atol(s);
	if (n == 0 || setgroups(n, gids) || setresgid(gids[0], gids[0], gids[0]) ||
	    setresuid(uid, uid, uid)) {
		perror("afbus-creds: serve");
		return 1;
	}
	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-creds: %s\n", error.message);
		return 1;
	}
	printf("ready %s %d\n", dbus_bus_get_unique_name(c), (int)getpid());
	fflush(stdout);
	while (dbus_connection_read_write_dispatch(c, -1))
		;
	return 0;
}

int main(int argc, char **argv)
{
	DBusError error = DBUS_ERROR_INIT;

	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve(atol(argv[2]), argv[3]);
	if (argc != 3 || strcmp(argv[1], "query") != 0) {
		fprintf(stderr, "usage: afbus-creds serve UID GID[,GID...] | query NAME\n");
		return 2;
	}
	c = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
	if (!c) {
		fprintf(stderr, "afbus-creds: %s\n", error.message);
		return 1;
	}
	return query(argv[2]);
}
