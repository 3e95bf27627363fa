/*
 * A small synthetic profile shared by the output tests: two mappings with
 * build ids, a kernel location without mapping, inline chains, a function
 * name with semicolons, the same function name in two files, string and
 * numeric labels, two sample types and two samples with the same stack.
 */
#ifndef TESTS_OUTPUT_SYNTH_H
#define TESTS_OUTPUT_SYNTH_H

#include "agent/profile/profile.h"

#define SYN_APP "/usr/bin/synthapp"
#define SYN_LIB "/usr/lib/libsynth.so.1"
#define SYN_APP_BUILD_ID "0123456789abcdef0123456789abcdef01234567"
#define SYN_LIB_BUILD_ID "fedcba98765432100011223344556677"

static const struct profile_mapping syn_mappings[] = {
	{ 0x400000, 0x480000, 0x0, SYN_APP, SYN_APP_BUILD_ID },
	{ 0x7f0000000000, 0x7f0000200000, 0x1000, SYN_LIB, SYN_LIB_BUILD_ID },
};

/* innermost first: inl_leaf inlined into inl_mid inlined into work */
static const struct prof_frame syn_f_work_inl[] = {
	{ "inl_leaf", "/src/app/inl.h", 11, NULL },
	{ "inl_mid", "/src/app/inl.h", 22, NULL },
	{ "work", "/src/app/work.c", 33, NULL },
};
static const struct prof_frame syn_f_main[] = { { "main", "/src/app/main.c", 7, NULL } };
static const struct prof_frame syn_f_work2[] = { { "work", "/src/app/work.c", 38, NULL } };
/* helper: same name as the static function in the app, other file */
static const struct prof_frame syn_f_lib[] = {
	{ "helper", "/src/lib/helper.c", 5, NULL },
	{ "lib_compute", "/src/lib/compute.c", 42, NULL },
};
static const struct prof_frame syn_f_app_helper[] = { { "helper", "/src/app/work.c", 50, NULL } };
static const struct prof_frame syn_f_weird[] = { { "ns;weird", "/src/app/weird.c", 60, NULL } };
static const struct prof_frame syn_f_kernel[] = { { "do_syscall_64", NULL, 0, NULL } };

enum { L_WORK_INL, L_MAIN, L_WORK2, L_LIB, L_APP_HELPER, L_WEIRD, L_KERNEL, SYN_NLOC };

static const struct prof_location syn_locations[] = {
	[L_WORK_INL]   = { 0x401234, 1, 3, syn_f_work_inl },
	[L_MAIN]       = { 0x400800, 1, 1, syn_f_main },
	[L_WORK2]      = { 0x401300, 1, 1, syn_f_work2 },
	[L_LIB]        = { 0x7f0000001abc, 2, 2, syn_f_lib },
	[L_APP_HELPER] = { 0x401500, 1, 1, syn_f_app_helper },
	[L_WEIRD]      = { 0x401600, 1, 1, syn_f_weird },
	[L_KERNEL]     = { 0xffffffff81000100, 0, 1, syn_f_kernel },
};

/* stacks, leaf first */
static const uint32_t syn_s_inl[] = { L_WORK_INL, L_MAIN };
static const uint32_t syn_s_lib[] = { L_LIB, L_WORK2, L_MAIN };
static const uint32_t syn_s_kernel[] = { L_KERNEL, L_WEIRD, L_MAIN };
static const uint32_t syn_s_helper[] = { L_APP_HELPER, L_MAIN };
static const uint32_t syn_s_main[] = { L_MAIN };

static const struct prof_label syn_l_app1[] = {
	{ "pid", NULL, 4242, NULL },
	{ "tid", NULL, 4243, NULL },
	{ "comm", "synthapp", 0, NULL },
	{ "alloc", NULL, 4096, "bytes" },
};
static const struct prof_label syn_l_worker[] = {
	{ "pid", NULL, 4242, NULL },
	{ "tid", NULL, 4250, NULL },
	{ "comm", "worker;1", 0, NULL },
};

enum { S_INL_A, S_INL_B, S_LIB, S_KERNEL, S_HELPER, S_ZERO, SYN_NSAMPLES };

static const struct prof_sample syn_samples[] = {
	[S_INL_A]  = { syn_s_inl, 2, (const int64_t[]){ 3, 30000000 }, syn_l_app1, 4, "synthapp" },
	[S_INL_B]  = { syn_s_inl, 2, (const int64_t[]){ 2, 20000000 }, syn_l_app1, 3, "synthapp" },
	[S_LIB]    = { syn_s_lib, 3, (const int64_t[]){ 1, 1500 }, syn_l_worker, 3, "worker;1" },
	[S_KERNEL] = { syn_s_kernel, 3, (const int64_t[]){ 7, 999 }, NULL, 0, NULL },
	[S_HELPER] = { syn_s_helper, 2, (const int64_t[]){ 5, 5000000 }, NULL, 0, "synthapp" },
	[S_ZERO]   = { syn_s_main, 1, (const int64_t[]){ 0, 0 }, NULL, 0, "synthapp" },
};

static const char *const syn_comments[] = { "cfiprof synthetic test", "second comment" };

static const struct profile syn_profile = {
	.types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
	.ntypes = 2,
	.period_type = { "cpu", "nanoseconds" },
	.period = 10000000,
	.time_nanos = 1700000000123456789LL,
	.duration_nanos = 2500000000LL,
	.mappings = syn_mappings,
	.nmappings = 2,
	.locations = syn_locations,
	.nlocations = SYN_NLOC,
	.samples = syn_samples,
	.nsamples = SYN_NSAMPLES,
	.comments = syn_comments,
	.ncomments = 2,
	.default_type = 1,
};

#endif
