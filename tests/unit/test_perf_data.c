/* The perf.data writer (agent/output/perf_data.c): record layouts as
 * perf.data-file-format.txt and <linux/perf_event.h> give them, worked out
 * by hand; a spool out of time order written sorted, with FINISHED_ROUND;
 * the header's sections and features; a built profile's samples with
 * their values as periods.  perf itself reads real recordings in
 * tests/record/test_perfdata.py.  And the record log (agent/record/
 * sample_log.c): which side-band records a sample needs before it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/output/perf_data.h"
#include "agent/record/sample_log.h"

struct file {
	unsigned char *p;
	size_t len;
};

/* Writes through output_file into a temporary directory; returns the bytes. */
static int write_file(const struct perf_data_desc *d, const void *spool, size_t len,
		      const struct profile *prof, struct file *f, char *err)
{
	char dir[] = "/tmp/perfdata-XXXXXX", path[64];
	struct output_file of = OUTPUT_FILE_INIT;
	struct stat st;
	int ret, fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(output_file_open(&of, path, err, 256), 0, "%s", err);
	ret = prof ? perf_data_write_profile(prof, &of, err, 256) :
		perf_data_write_to(d, spool, len, &of, err, 256);
	ret = output_file_finish(&of, ret, err, 256);
	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		cr_assert_eq(fstat(fd, &st), 0);
		f->len = (size_t)st.st_size;
		f->p = malloc(f->len + 1);
		cr_assert_eq(read(fd, f->p, f->len), (ssize_t)f->len);
		close(fd);
		unlink(path);
	}
	rmdir(dir);
	return ret;
}

static uint64_t u64_at(const struct file *f, size_t off)
{
	uint64_t v;

	cr_assert_leq(off + 8, f->len);
	memcpy(&v, f->p + off, 8);
	return v;
}

static uint32_t u32_at(const struct file *f, size_t off)
{
	uint32_t v;

	cr_assert_leq(off + 4, f->len);
	memcpy(&v, f->p + off, 4);
	return v;
}

/* Header: magic, size, attr_size, attrs, data, event_types, features. */
#define H_ATTRS 24
#define H_DATA 40
#define H_FEATURES 72

struct rec {
	uint32_t type;
	uint16_t misc, size;
	size_t off;
};

static size_t records(const struct file *f, struct rec *out, size_t max)
{
	uint64_t off = u64_at(f, H_DATA), end = off + u64_at(f, H_DATA + 8);
	size_t n = 0;

	while (off < end && n < max) {
		struct perf_event_header h;

		memcpy(&h, f->p + off, sizeof(h));
		cr_assert_geq(h.size, sizeof(h));
		out[n++] = (struct rec){ h.type, h.misc, h.size, off };
		off += h.size;
	}
	cr_assert_eq(off, end, "records end at the data section's end");
	return n;
}

static size_t spool_add(unsigned char *spool, size_t len, uint64_t time, const void *rec,
			size_t n)
{
	memcpy(spool + len, &time, 8);
	memcpy(spool + len + 8, rec, n);
	return len + 8 + n;
}

Test(perf_data, sample_layout)
{
	uint64_t w[64], k[] = { 0xffffffff81000010ull, 0xffffffff81000020ull },
		 u[] = { 0x401000, 0x402000, 0x403000 };
	struct perf_data_sid at = { .pid = 7, .tid = 8, .time = 1234, .cpu = 1 };
	size_t n = perf_data_sample(w, 3, &at, 1000000, true, k, 2, u, 3);
	struct perf_event_header h;
	uint64_t want[] = { 3, k[0], 8ull << 32 | 7, 1234, 1, 1000000, 7,
			    (uint64_t)PERF_CONTEXT_KERNEL, k[0], k[1],
			    (uint64_t)PERF_CONTEXT_USER, u[0], u[1], u[2] };

	memcpy(&h, w, sizeof(h));
	cr_assert_eq(n, 8 + sizeof(want));
	cr_assert_eq(h.type, PERF_RECORD_SAMPLE);
	cr_assert_eq(h.misc, PERF_RECORD_MISC_KERNEL);
	cr_assert_eq(h.size, n);
	cr_assert_arr_eq(&w[1], want, sizeof(want));

	/* user only: ip is the user leaf, no kernel context */
	n = perf_data_sample(w, 1, &at, 5, false, NULL, 0, u, 1);
	cr_assert_eq(n, 8 + 9 * 8);
	cr_assert_eq(w[2], u[0]);
	cr_assert_eq(w[7], 2);
	cr_assert_eq(w[8], (uint64_t)PERF_CONTEXT_USER);
	memcpy(&h, w, sizeof(h));
	cr_assert_eq(h.misc, PERF_RECORD_MISC_USER);
}

Test(perf_data, mmap2_build_id)
{
	unsigned char r[PERF_DATA_MAX_RECORD];
	struct perf_data_sid at = { .pid = 5, .tid = 5, .time = 9, .id = 1 };
	size_t n = perf_data_mmap2(r, 0x1000, 0x2000, 0x3000, "0102030405060708090a0b0c0d0e0f1011121314",
				   "/x/lib.so", &at);
	struct perf_event_header h;
	uint64_t v;

	memcpy(&h, r, sizeof(h));
	cr_assert_eq(h.type, PERF_RECORD_MMAP2);
	cr_assert_eq(h.misc, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	/* 8 header, 8 pid/tid, 24 addr/len/pgoff, 24 build-id, 8 prot/flags,
	 * 16 name ("/x/lib.so" + NUL, padded to 8), 32 sample_id */
	cr_assert_eq(n, 8 + 8 + 24 + 24 + 8 + 16 + 32);
	cr_assert_eq(r[40], 20, "build_id_size");
	cr_assert_eq(r[44], 0x01);
	cr_assert_eq(r[63], 0x14);
	cr_assert_str_eq((char *)r + 72, "/x/lib.so");
	memcpy(&v, r + 88 + 8, 8);
	cr_assert_eq(v, 9, "sample_id time");
	memcpy(&v, r + 88 + 24, 8);
	cr_assert_eq(v, 1, "sample_id identifier");
	/* no build-id: no MMAP_BUILD_ID flag */
	perf_data_mmap2(r, 0x1000, 0x2000, 0, "", "//anon", &at);
	memcpy(&h, r, sizeof(h));
	cr_assert_eq(h.misc, PERF_RECORD_MISC_USER);
}

Test(perf_data, sorted_with_rounds_and_features)
{
	static unsigned char spool[8192], r[PERF_DATA_MAX_RECORD];
	uint64_t u[] = { 0x401000 };
	struct perf_data_sid at = { .pid = 7, .tid = 7, .id = 1 };
	struct perf_data_event ev[2] = {
		{ .name = "cpu-clock", .attr = { .type = PERF_TYPE_SOFTWARE, .freq = 1,
						 .sample_freq = 99 }, .id = 1 },
		{ .name = PERF_DATA_OFFCPU_NAME, .attr = { .type = PERF_TYPE_SOFTWARE }, .id = 2 },
	};
	struct perf_data_dso dso = { "/bin/x", "aabbccdd" };
	struct perf_data_desc d = { ev, 2, &dso, 1, false };
	struct rec recs[16];
	struct file f;
	uint64_t times[3] = { 30, 10, 20 }, last = 0, feat;
	size_t len = 0, n, samples = 0;
	char err[256] = "";

	for (int i = 0; i < 3; i++) {
		at.time = times[i];
		len = spool_add(spool, len, times[i],
				r, perf_data_sample(r, 1 + (i == 2), &at, 10, false, NULL, 0, u, 1));
	}
	at.time = 10;   /* spooled after the sample of time 10: stays after it */
	len = spool_add(spool, len, 10, r, perf_data_comm(r, "x", false, &at));
	cr_assert_eq(write_file(&d, spool, len, NULL, &f, err), 0, "%s", err);

	cr_assert_eq(u64_at(&f, 0), 0x32454c4946524550ull, "PERFILE2");
	cr_assert_eq(u64_at(&f, 8), 104);
	cr_assert_eq(u64_at(&f, 16), sizeof(struct perf_event_attr) + 16);
	cr_assert_eq(u64_at(&f, H_ATTRS + 8), 2 * (sizeof(struct perf_event_attr) + 16));
	/* each attr's ids section holds its id */
	for (int i = 0; i < 2; i++) {
		size_t a = u64_at(&f, H_ATTRS) + i * (sizeof(struct perf_event_attr) + 16);
		struct perf_event_attr attr;

		memcpy(&attr, f.p + a, sizeof(attr));
		cr_assert(attr.sample_id_all);
		cr_assert(attr.sample_type & PERF_SAMPLE_IDENTIFIER);
		cr_assert_eq(attr.mmap2, i == 0, "side-band records are the first attr's");
		cr_assert_eq(u64_at(&f, a + sizeof(attr) + 8), 8);
		cr_assert_eq(u64_at(&f, u64_at(&f, a + sizeof(attr))), ev[i].id);
	}
	n = records(&f, recs, 16);
	for (size_t i = 0; i < n; i++) {
		uint64_t t;

		if (recs[i].type != PERF_RECORD_SAMPLE)
			continue;
		t = u64_at(&f, recs[i].off + 8 + 24);
		cr_assert_geq(t, last, "samples in time order");
		last = t;
		samples++;
		if (t == 10)
			cr_assert_eq(recs[i + 1].type, PERF_RECORD_COMM, "ties keep spool order");
		if (t == 20)
			cr_assert_eq(u64_at(&f, recs[i].off + 8), 2, "its event's id");
	}
	cr_assert_eq(samples, 3);
	cr_assert_eq(recs[n - 1].type, 68, "FINISHED_ROUND last");
	feat = u64_at(&f, H_FEATURES);
	for (int b = 2; b <= 12; b++)
		if (b != 8 && b != 9 && b != 10)    /* CPUDESC, CPUID, TOTAL_MEM: if known */
			cr_assert(feat & (1ull << b), "feature %d", b);
	cr_assert(feat & (1ull << 21), "SAMPLE_TIME");
	free(f.p);
}

Test(perf_data, corrupt_spool)
{
	unsigned char spool[16] = { 0 };
	struct perf_data_event ev = { .name = "cpu-clock", .id = 1 };
	struct perf_data_desc d = { &ev, 1, NULL, 0, false };
	struct file f;
	char err[256] = "";

	spool[8 + 6] = 4;   /* header.size below the header's own */
	cr_assert_eq(write_file(&d, spool, sizeof(spool), NULL, &f, err), -EINVAL);
	cr_assert(strstr(err, "corrupt"), "%s", err);
	cr_assert_null(f.p, "nothing replaced the output");
}

Test(perf_data, profile_values_are_periods)
{
	struct prof_frame fr = { .function = "f" };
	struct profile_mapping map = { 0x400000, 0x500000, 0x1000, "/bin/x", "aabb" };
	struct prof_location locs[] = {
		{ 0xffffffff81000100ull, 0, 1, &fr },   /* kernel */
		{ 0x401000, 1, 1, &fr },
		{ 0x402000, 1, 1, &fr },
	};
	uint32_t chain[] = { 0, 1, 2 }, user[] = { 2 };
	struct prof_label labels[] = { { "pid", NULL, 42, NULL }, { "tid", NULL, 43, NULL } };
	struct prof_sample s[] = {
		{ chain, 3, (const int64_t[]){ 2, 3000 }, labels, 2, "x" },
		{ user, 1, (const int64_t[]){ 1, 5000 }, labels, 2, "x" },
		{ user, 1, (const int64_t[]){ 0, 0 }, labels, 2, "x" },     /* no value: no sample */
	};
	struct profile p = { .types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
			     .ntypes = 2, .period = 1000, .mappings = &map, .nmappings = 1,
			     .locations = locs, .nlocations = 3, .samples = s, .nsamples = 3,
			     .default_type = 1 };
	struct rec recs[16];
	struct file f;
	char err[256] = "";
	size_t n, k = 0;
	uint64_t periods[2];

	cr_assert_eq(write_file(NULL, NULL, 0, &p, &f, err), 0, "%s", err);
	n = records(&f, recs, 16);
	for (size_t i = 0; i < n; i++) {
		if (recs[i].type == PERF_RECORD_MMAP2) {
			cr_assert_eq(u32_at(&f, recs[i].off + 8), 42);
			cr_assert_eq(u64_at(&f, recs[i].off + 16), 0x400000);
			cr_assert_eq(u64_at(&f, recs[i].off + 32), 0x1000);
			cr_assert_eq(recs[i].misc & PERF_RECORD_MISC_MMAP_BUILD_ID,
				     PERF_RECORD_MISC_MMAP_BUILD_ID);
		}
		if (recs[i].type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_lt(k, 2);
		cr_assert_eq(u64_at(&f, recs[i].off + 8 + 16), 43ull << 32 | 42);
		periods[k] = u64_at(&f, recs[i].off + 8 + 40);
		if (k == 0) {
			cr_assert_eq(recs[i].misc, PERF_RECORD_MISC_KERNEL);
			cr_assert_eq(u64_at(&f, recs[i].off + 8 + 48), 5, "nr");
			cr_assert_eq(u64_at(&f, recs[i].off + 8 + 56), (uint64_t)PERF_CONTEXT_KERNEL);
			cr_assert_eq(u64_at(&f, recs[i].off + 8 + 72), (uint64_t)PERF_CONTEXT_USER);
		}
		k++;
	}
	cr_assert_eq(k, 2);
	cr_assert_eq(periods[0], 3000);
	cr_assert_eq(periods[1], 5000);
	free(f.p);
}

/* ---- agent/record/sample_log.c: what a sample needs spooled before it ---- */

struct spooled {
	uint64_t time;
	uint32_t type;
	uint16_t misc;
};

/* The spool's entries (time stamp, record header), in spool order. */
static size_t spool_entries(struct sample_log *l, struct spooled *out, size_t max)
{
	const unsigned char *p;
	const void *spool;
	size_t len, n = 0, off = 0;

	cr_assert_eq(sample_log_map(l, &spool, &len), 0);
	p = spool;
	while (off + 16 <= len && n < max) {
		struct perf_event_header h;

		memcpy(&out[n].time, p + off, 8);
		memcpy(&h, p + off + 8, sizeof(h));
		cr_assert_geq(h.size, sizeof(h));
		out[n].type = h.type;
		out[n++].misc = h.misc;
		off += 8 + h.size;
	}
	cr_assert_eq(off, len);
	if (len)
		munmap((void *)spool, len);
	return n;
}

static void log_sample(struct sample_log *l, const struct proc *p, uint64_t time,
		       const char *comm, uint64_t pc)
{
	struct sample_event *s = calloc(1, sizeof(*s));

	cr_assert_not_null(s);
	*s = (struct sample_event){ .kind = EVENT_SAMPLE, .pid = 7, .tid = 7, .time_ns = time,
				    .weight = 1, .nuser = 1 };
	strncpy(s->comm, comm, sizeof(s->comm));
	s->addrs[0] = pc;
	sample_log_sample(l, p, s, 0);
	free(s);
}

/* A sample taken inside an execve, in the old program (its user pc in the
 * old libc's execve), reaches the log after the exec's record when its
 * walk waited: the MMAP2 of its frame must still come before it, and the
 * COMM_EXEC wait for the new program's first sample.  (Placed at the
 * exec's time, the mapping came after the sample, and perf script showed
 * a bare address where pprof had libc: record's children-exec.) */
Test(sample_log, sample_from_inside_an_exec_has_its_mapping_before_it)
{
	struct code_mapping old_libc = { .start = 0x7f0000001000, .end = 0x7f0000100000,
					 .offset = 0x26000 };
	struct code_mapping new_exe = { .start = 0x555500001000, .end = 0x555500002000,
					.offset = 0x1000 };
	struct proc old = { .pid = 7, .maps = &old_libc, .n = 1 };
	struct proc new = { .pid = 7, .maps = &new_exe, .n = 1 };
	struct cfiprof_proc_event exec = { .kind = EVENT_EXEC, .pid = 7, .time_ns = 1000 };
	struct spooled e[16];
	struct sample_log l;
	char err[256];
	size_t n, i, sample_at = 0, mmap_at = 0, comm_exec_at = 0, samples = 0;

	cr_assert_eq(sample_log_open(&l, -1, 1, err, sizeof(err)), 0, "%s", err);
	log_sample(&l, &old, 100, "sh", 0x7f0000002000);
	sample_log_proc_event(&l, &exec);
	log_sample(&l, &old, 900, "sh", 0x7f0000050000);     /* in execve, late */
	log_sample(&l, &new, 1100, "rec-deep", 0x555500001100);
	n = spool_entries(&l, e, 16);
	for (i = 0; i < n; i++) {
		if (e[i].type == PERF_RECORD_SAMPLE && ++samples == 2)
			sample_at = i;
		if (e[i].type == PERF_RECORD_MMAP2 && samples == 1)
			mmap_at = i;
		if (e[i].type == PERF_RECORD_COMM && (e[i].misc & PERF_RECORD_MISC_COMM_EXEC))
			comm_exec_at = i;
	}
	cr_assert_eq(samples, 3);
	cr_assert_gt(mmap_at, 0, "the late sample's mapping was not spooled again");
	cr_assert_leq(e[mmap_at].time, e[sample_at].time,
		      "MMAP2 at %llu, after the sample it serves at %llu",
		      (unsigned long long)e[mmap_at].time, (unsigned long long)e[sample_at].time);
	cr_assert_gt(comm_exec_at, sample_at, "the COMM_EXEC went with the old program's sample");
	cr_assert_geq(e[comm_exec_at].time, 1000);
	sample_log_close(&l);
}
