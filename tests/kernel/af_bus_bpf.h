/* SPDX-License-Identifier: GPL-2.0 */
/*
 * eBPF socket filters for the AF_BUS tests, written as raw instructions
 * of the kernel's UAPI (<linux/bpf.h>, no libbpf): the instruction
 * macros, BPF_PROG_LOAD of a BPF_PROG_TYPE_SOCKET_FILTER program,
 * SO_ATTACH_BPF, and a one-slot array map a program can count in.
 */
#ifndef AF_BUS_BPF_H
#define AF_BUS_BPF_H

#include "af_bus_test.h"

#include <linux/bpf.h>
#include <sys/syscall.h>

/* eBPF instructions, written out as the UAPI defines them. */
#define EBPF_MOV64_IMM(D, I)					\
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K,	\
			    .dst_reg = D, .imm = I })
#define EBPF_MOV64_REG(D, S)					\
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_X,	\
			    .dst_reg = D, .src_reg = S })
/* r0 = the byte at offset off of the packet (the context is in r6) */
#define EBPF_LD_ABS_B(O)						\
	((struct bpf_insn){ .code = BPF_LD | BPF_B | BPF_ABS, .imm = O })
#define EBPF_JNE_IMM(D, I, O)					\
	((struct bpf_insn){ .code = BPF_JMP | BPF_JNE | BPF_K,		\
			    .dst_reg = D, .off = O, .imm = I })
#define EBPF_EXIT()							\
	((struct bpf_insn){ .code = BPF_JMP | BPF_EXIT })

/* Load a BPF_PROG_TYPE_SOCKET_FILTER program with bpf(2); returns its fd. */
/* *(u32 *)(D + O) = S */
#define EBPF_STX_W(D, S, O)						\
	((struct bpf_insn){ .code = BPF_STX | BPF_MEM | BPF_W,		\
			    .dst_reg = D, .src_reg = S, .off = O })
/* D = *(u32 *)(S + O) */
#define EBPF_LDX_W(D, S, O)						\
	((struct bpf_insn){ .code = BPF_LDX | BPF_MEM | BPF_W,		\
			    .dst_reg = D, .src_reg = S, .off = O })
#define EBPF_ADD64_IMM(D, I)					\
	((struct bpf_insn){ .code = BPF_ALU64 | BPF_ADD | BPF_K,	\
			    .dst_reg = D, .imm = I })
#define EBPF_JEQ_IMM(D, I, O)					\
	((struct bpf_insn){ .code = BPF_JMP | BPF_JEQ | BPF_K,		\
			    .dst_reg = D, .off = O, .imm = I })
#define EBPF_CALL(F)							\
	((struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .imm = F })
/* lock *(u64 *)(D + O) += S */
#define EBPF_ATOMIC_ADD_DW(D, S, O)					\
	((struct bpf_insn){ .code = BPF_STX | BPF_ATOMIC | BPF_DW,	\
			    .dst_reg = D, .src_reg = S, .off = O,	\
			    .imm = BPF_ADD })
/* D = the map of descriptor FD (two instructions) */
#define EBPF_LD_MAP_FD(D, FD)						\
	((struct bpf_insn){ .code = BPF_LD | BPF_DW | BPF_IMM,		\
			    .dst_reg = D, .src_reg = BPF_PSEUDO_MAP_FD,	\
			    .imm = FD }),				\
	((struct bpf_insn){ 0 })

static inline int load_ebpf(struct __test_metadata *_metadata,
		     const struct bpf_insn *insns, unsigned int n)
{
	static char log[4096];
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (__u64)(unsigned long)insns;
	attr.insn_cnt = n;
	attr.license = (__u64)(unsigned long)"GPL";
	attr.log_buf = (__u64)(unsigned long)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	log[0] = 0;
	fd = syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	ASSERT_LE(0, fd) TH_LOG("BPF_PROG_LOAD: %s\n%s", strerror(errno), log);
	return fd;
}

static inline void attach_ebpf(struct __test_metadata *_metadata, int fd,
			const struct bpf_insn *insns, unsigned int n)
{
	int prog = load_ebpf(_metadata, insns, n);

	ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, &prog,
			     sizeof(prog)));
	/* the socket holds the program now */
	close(prog);
}


/* A BPF_MAP_TYPE_ARRAY of one u64 at key 0; returns its fd. */
static inline int ebpf_counter_create(struct __test_metadata *_metadata)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(__u32);
	attr.value_size = sizeof(__u64);
	attr.max_entries = 1;
	fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	ASSERT_LE(0, fd) TH_LOG("BPF_MAP_CREATE: %s", strerror(errno));
	return fd;
}

/* The counter of ebpf_counter_create() */
static inline __u64 ebpf_counter_read(struct __test_metadata *_metadata,
				      int map)
{
	union bpf_attr attr;
	__u32 key = 0;
	__u64 val = 0;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = map;
	attr.key = (__u64)(unsigned long)&key;
	attr.value = (__u64)(unsigned long)&val;
	ASSERT_OK(syscall(__NR_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr)));
	return val;
}

#endif /* AF_BUS_BPF_H */
