// SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later
/*
 * nfdbus-ctl: add, remove, flush and list the D-Bus match rules that the
 * nfdbus kernel module applies to the multicasts of AF_BUS buses, set the
 * flags and the policies of buses and the flags of peers, and show its
 * counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nfdbus.h>

#include "libnfdbus.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfdbus-ctl add BUS PEER RULE [SENDER-ADDR]\n"
		"       nfdbus-ctl remove BUS PEER RULE\n"
		"       nfdbus-ctl flush BUS PEER\n"
		"       nfdbus-ctl list BUS [PEER]\n"
		"       nfdbus-ctl stats\n"
		"       nfdbus-ctl bus BUS [FLAG...]\n"
		"       nfdbus-ctl policy BUS ID [RULE...]\n"
		"       nfdbus-ctl policy-del BUS ID\n"
		"       nfdbus-ctl policy-info BUS ID\n"
		"       nfdbus-ctl peer-policy BUS PEER [ID]\n"
		"       nfdbus-ctl peer BUS PEER monitor|none\n"
		"BUS is a bus path, or @name for an abstract bus name; PEER and\n"
		"SENDER-ADDR are AF_BUS addresses (decimal, or 0x hexadecimal).\n"
		"bus BUS prints the flags of the bus (with replies, its limits);\n"
		"bus BUS FLAG... sets them (FLAG: check-sender, policy, replies,\n"
		"max-replies=N, reply-timeout=MS (0: never), or none).\n"
		"policy sets the rules of policy ID (a number, not 0); a RULE is\n"
		"allow|deny,send|receive[,type=T][,path=P][,interface=I][,member=M]\n"
		"[,error=E][,addr=A][,broadcast|,not-broadcast][,not-replies]\n"
		"[,requested-only].\n"
		"peer-policy prints the policy PEER uses, or makes it use ID (0: none).\n"
		"peer sets the flags of the connected client PEER: monitor (the\n"
		"master's calls to it are copies, awaiting no reply), or none.\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-') {
		fprintf(stderr, "nfdbus-ctl: not an address: %s\n", s);
		return -1;
	}
	return 0;
}

static int parse_u32(const char *s, uint32_t *v)
{
	uint64_t u;

	if (parse_u64(s, &u))
		return -1;
	if (u > UINT32_MAX) {
		fprintf(stderr, "nfdbus-ctl: out of range: %s\n", s);
		return -1;
	}
	*v = u;
	return 0;
}

/* The NFDBUS_BUS_* flags and reply limits named by args; -1 for an
 * unknown name.
 */
static int parse_flags(int n, char **args, uint32_t *flags,
		       uint32_t *max_replies, uint32_t *reply_timeout)
{
	int i;

	*flags = 0;
	*max_replies = 0;
	*reply_timeout = 0;
	for (i = 0; i < n; i++) {
		if (!strcmp(args[i], "check-sender")) {
			*flags |= NFDBUS_BUS_CHECK_SENDER;
		} else if (!strcmp(args[i], "policy")) {
			*flags |= NFDBUS_BUS_POLICY;
		} else if (!strcmp(args[i], "replies")) {
			*flags |= NFDBUS_BUS_REPLIES;
		} else if (!strncmp(args[i], "max-replies=", 12)) {
			if (parse_u32(args[i] + 12, max_replies))
				return -1;
		} else if (!strncmp(args[i], "reply-timeout=", 14)) {
			if (parse_u32(args[i] + 14, reply_timeout))
				return -1;
		} else if (strcmp(args[i], "none")) {
			fprintf(stderr, "nfdbus-ctl: unknown flag: %s\n", args[i]);
			return -1;
		}
	}
	return 0;
}

/* "check-sender policy replies max-replies=N reply-timeout=MS", or "none" */
static void print_bus(uint32_t flags, uint32_t max_replies,
		      uint32_t reply_timeout)
{
	static const struct {
		uint32_t	flag;
		const char	*name;
	} names[] = {
		{ NFDBUS_BUS_CHECK_SENDER, "check-sender" },
		{ NFDBUS_BUS_POLICY, "policy" },
		{ NFDBUS_BUS_REPLIES, "replies" },
	};
	const char *sep = "";
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (flags & names[i].flag) {
			printf("%s%s", sep, names[i].name);
			sep = " ";
		}
	}
	if (flags & NFDBUS_BUS_REPLIES)
		printf(" max-replies=%u reply-timeout=%u", max_replies,
		       reply_timeout);
	printf("%s\n", flags ? "" : "none");
}

/* nfdbus-ctl policy BUS ID RULE... */
static int set_policy(struct nfdbus *h, const struct nfdbus_bus *bus,
		      uint32_t id, int n, char **args)
{
	struct nfdbus_policy_rule *rules = calloc(n ? n : 1, sizeof(*rules));
	int i, err;

	if (!rules)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (nfdbus_policy_rule_parse(&rules[i], args[i])) {
			fprintf(stderr, "nfdbus-ctl: bad policy rule %d\n", i + 1);
			free(rules);
			return -EINVAL;
		}
	}
	err = nfdbus_set_policy(h, bus, id, rules, n);
	free(rules);
	return err;
}

static int print_rule(const struct nfdbus_rule_info *info, void *data)
{
	(void)data;
	printf("0x%016" PRIx64 "\t%s", info->peer, info->rule);
	if (info->has_sender_addr)
		printf("\tsender-addr=0x%016" PRIx64, info->sender_addr);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct nfdbus_stats st;
	struct nfdbus_bus bus;
	uint64_t peer, sender;
	uint32_t flags, id, nrules, refs, max_replies, reply_timeout;
	const char *cmd;
	struct nfdbus *h;
	int err = -EINVAL;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 2)
		goto usage;
	cmd = argv[1];
	if (strcmp(cmd, "stats")) {
		if (argc < 3)
			goto usage;
		if (nfdbus_bus_parse(&bus, argv[2])) {
			fprintf(stderr, "nfdbus-ctl: bad bus name: %s\n", argv[2]);
			return 2;
		}
		if (!strcmp(cmd, "bus")) {
			if (parse_flags(argc - 3, argv + 3, &flags,
					&max_replies, &reply_timeout))
				return 2;
		} else if (!strncmp(cmd, "policy", 6)) {
			if (argc > 3 && parse_u32(argv[3], &id))
				return 2;
		} else if (argc > 3 && parse_u64(argv[3], &peer)) {
			return 2;
		}
		if (!strcmp(cmd, "peer-policy") && argc == 5 &&
		    parse_u32(argv[4], &id))
			return 2;
		if (!strcmp(cmd, "peer") && argc == 5) {
			if (!strcmp(argv[4], "monitor")) {
				flags = NFDBUS_PEER_MONITOR;
			} else if (!strcmp(argv[4], "none")) {
				flags = 0;
			} else {
				fprintf(stderr, "nfdbus-ctl: unknown peer flag: %s\n",
					argv[4]);
				return 2;
			}
		}
	}

	h = nfdbus_open();
	if (!h) {
		fprintf(stderr, "nfdbus-ctl: cannot reach nfdbus: %s\n",
			strerror(errno));
		return 1;
	}
	if (!strcmp(cmd, "add") && (argc == 5 || argc == 6)) {
		if (argc == 6 && parse_u64(argv[5], &sender)) {
			nfdbus_close(h);
			return 2;
		}
		err = nfdbus_add_match(h, &bus, peer, argv[4],
				       argc == 6 ? &sender : NULL);
	} else if (!strcmp(cmd, "remove") && argc == 5) {
		err = nfdbus_remove_match(h, &bus, peer, argv[4]);
	} else if (!strcmp(cmd, "flush") && argc == 4) {
		err = nfdbus_flush(h, &bus, peer);
	} else if (!strcmp(cmd, "list") && (argc == 3 || argc == 4)) {
		err = nfdbus_list(h, &bus, argc == 4 ? &peer : NULL,
				  print_rule, NULL);
		if (err > 0)
			err = 0;
	} else if (!strcmp(cmd, "stats") && argc == 2) {
		err = nfdbus_get_stats(h, &st);
		if (!err)
			printf("parsed %" PRIu64 "\nmalformed %" PRIu64
			       "\noversized %" PRIu64 "\nfiltered %" PRIu64
			       "\nforged %" PRIu64 "\ndenied %" PRIu64
			       "\nunrequested %" PRIu64
			       "\nreplies-exceeded %" PRIu64 "\n",
			       st.parsed, st.malformed, st.oversized,
			       st.filtered, st.forged, st.denied,
			       st.unrequested, st.replies_exceeded);
	} else if (!strcmp(cmd, "bus") && argc > 3) {
		err = nfdbus_set_bus(h, &bus, flags, max_replies,
				     reply_timeout);
	} else if (!strcmp(cmd, "bus")) {
		err = nfdbus_get_bus(h, &bus, &flags, &max_replies,
				     &reply_timeout);
		if (!err)
			print_bus(flags, max_replies, reply_timeout);
	} else if (!strcmp(cmd, "policy") && argc >= 4) {
		err = set_policy(h, &bus, id, argc - 4, argv + 4);
	} else if (!strcmp(cmd, "policy-del") && argc == 4) {
		err = nfdbus_del_policy(h, &bus, id);
	} else if (!strcmp(cmd, "policy-info") && argc == 4) {
		err = nfdbus_get_policy(h, &bus, id, &nrules, &refs);
		if (!err)
			printf("rules %u\npeers %u\n", nrules, refs);
	} else if (!strcmp(cmd, "peer-policy") && argc == 5) {
		err = nfdbus_set_peer_policy(h, &bus, peer, id);
	} else if (!strcmp(cmd, "peer") && argc == 5) {
		err = nfdbus_set_peer(h, &bus, peer, flags);
	} else if (!strcmp(cmd, "peer-policy") && argc == 4) {
		err = nfdbus_get_peer_policy(h, &bus, peer, &id);
		if (!err)
			printf("%u\n", id);
	} else {
		nfdbus_close(h);
		goto usage;
	}
	if (err < 0)
		fprintf(stderr, "nfdbus-ctl: %s: %s%s%s\n", cmd, strerror(-err),
			*nfdbus_error(h) ? ": " : "", nfdbus_error(h));
	nfdbus_close(h);
	return err < 0 ? 1 : 0;
usage:
	usage(stderr);
	return 2;
}
