#include "agent/output/perf_data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"

#ifndef CFIPROF_VERSION
#define CFIPROF_VERSION "0.1.0"
#endif

/* perf's own record types and header features (tools/perf/util/header.h,
 * tools/lib/perf/include/perf/event.h): not in the kernel's uapi. */
#define PERF_RECORD_FINISHED_ROUND 68
enum {
	FEAT_BUILD_ID = 2, FEAT_HOSTNAME, FEAT_OSRELEASE, FEAT_VERSION, FEAT_ARCH, FEAT_NRCPUS,
	FEAT_CPUDESC, FEAT_CPUID, FEAT_TOTAL_MEM, FEAT_CMDLINE, FEAT_EVENT_DESC,
	FEAT_SAMPLE_TIME = 21,
	FEAT_BITS = 256,
};
#define PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15)
#define PERF_FILE_MAGIC 0x32454c4946524550ull /* "PERFILE2" */
#define NAME_ALIGN 64
#define BUILD_ID_SIZE 20
#define HOST_PID UINT32_MAX                    /* perf's HOST_KERNEL_ID: -1 */
/* A FINISHED_ROUND after this many records: what perf's ordered queue
 * holds at once. */
#define ROUND_RECORDS 4096

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

struct file_section {
	uint64_t offset, size;
};

struct file_header {
	uint64_t magic, size, attr_size;
	struct file_section attrs, data, event_types;
	uint64_t features[FEAT_BITS / 64];
};

struct file_attr {
	struct perf_event_attr attr;
	struct file_section ids;
};

/* ---- encoding records -------------------------------------------------- */

struct rec {
	unsigned char *p;
	size_t len;
};

static void put(struct rec *r, const void *v, size_t n)
{
	memcpy(r->p + r->len, v, n);
	r->len += n;
}

static void put64(struct rec *r, uint64_t v)
{
	put(r, &v, sizeof(v));
}

static void put32x2(struct rec *r, uint32_t a, uint32_t b)
{
	put(r, &a, sizeof(a));
	put(r, &b, sizeof(b));
}

/* A NUL-terminated string padded with zeros to `align` bytes. */
static void put_str(struct rec *r, const char *s, size_t max, size_t align)
{
	size_t n = strnlen(s, max), padded = (n + 1 + align - 1) / align * align;

	memcpy(r->p + r->len, s, n);
	memset(r->p + r->len + n, 0, padded - n);
	r->len += padded;
}

static struct rec begin(void *dst, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc };
	struct rec r = { dst, 0 };

	put(&r, &h, sizeof(h));
	return r;
}

static size_t end(struct rec *r, const struct perf_data_sid *at)
{
	uint16_t size;

	if (at) {
		put32x2(r, at->pid, at->tid);
		put64(r, at->time);
		put32x2(r, at->cpu, 0);
		put64(r, at->id);
	}
	/* dst need not be aligned: a spool's buffer is bytes */
	size = (uint16_t)r->len;
	memcpy(r->p + __builtin_offsetof(struct perf_event_header, size), &size, sizeof(size));
	return r->len;
}

size_t perf_data_sample(void *dst, uint64_t id, const struct perf_data_sid *at, uint64_t period,
			bool kernel_mode, const uint64_t *kernel_ips, uint32_t nkernel,
			const uint64_t *user_ips, uint32_t nuser)
{
	struct rec r = begin(dst, PERF_RECORD_SAMPLE,
			     kernel_mode ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER);
	uint64_t nr = (nkernel ? 1 + nkernel : 0) + (nuser ? 1 + nuser : 0);

	put64(&r, id);
	put64(&r, nkernel ? kernel_ips[0] : nuser ? user_ips[0] : 0);
	put32x2(&r, at->pid, at->tid);
	put64(&r, at->time);
	put32x2(&r, at->cpu, 0);
	put64(&r, period);
	put64(&r, nr);
	if (nkernel) {
		put64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
		put(&r, kernel_ips, nkernel * sizeof(uint64_t));
	}
	if (nuser) {
		put64(&r, (uint64_t)PERF_CONTEXT_USER);
		put(&r, user_ips, nuser * sizeof(uint64_t));
	}
	return end(&r, NULL);
}

size_t perf_data_comm(void *dst, const char *comm, bool exec, const struct perf_data_sid *at)
{
	struct rec r = begin(dst, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);

	put32x2(&r, at->pid, at->tid);
	put_str(&r, comm, 255, sizeof(uint64_t));
	return end(&r, at);
}

size_t perf_data_task(void *dst, uint32_t type, uint32_t ppid, const struct perf_data_sid *at)
{
	struct rec r = begin(dst, type, 0);

	put32x2(&r, at->pid, ppid);
	put32x2(&r, at->tid, ppid);
	put64(&r, at->time);
	return end(&r, at);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A hex build-id's bytes (at most BUILD_ID_SIZE, what perf keeps): how
 * many, 0 if none or not hex. */
static size_t build_id_bytes(const char *hex, uint8_t out[BUILD_ID_SIZE])
{
	size_t n = 0;

	memset(out, 0, BUILD_ID_SIZE);
	if (!hex)
		return 0;
	for (; hex[0] && hex[1] && n < BUILD_ID_SIZE; hex += 2) {
		int hi = hex_digit(hex[0]), lo = hex_digit(hex[1]);

		if (hi < 0 || lo < 0)
			return 0;
		out[n++] = (uint8_t)(hi << 4 | lo);
	}
	return hex[0] ? 0 : n;
}

size_t perf_data_mmap2(void *dst, uint64_t start, uint64_t len, uint64_t pgoff,
		       const char *build_id, const char *path, const struct perf_data_sid *at)
{
	uint8_t bid[BUILD_ID_SIZE];
	size_t nbid = build_id_bytes(build_id, bid);
	struct rec r = begin(dst, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER |
			     (nbid ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	uint8_t bid_head[4] = { (uint8_t)nbid };

	put32x2(&r, at->pid, at->tid);
	put64(&r, start);
	put64(&r, len);
	put64(&r, pgoff);
	/* with MMAP_BUILD_ID the device and inode fields hold the build-id */
	put(&r, bid_head, sizeof(bid_head));
	put(&r, bid, sizeof(bid));
	put32x2(&r, PROT_READ | PROT_EXEC, MAP_PRIVATE);
	put_str(&r, path, 4095, sizeof(uint64_t));
	return end(&r, at);
}

/* ---- the file ------------------------------------------------------------ */

/* Sequential writing through the output, buffered: the output may be a
 * pipe, so every offset is computed before the first byte goes. */
struct writer {
	struct output_file *of;
	unsigned char buf[1 << 16];
	size_t n;
	uint64_t pos;
	int err;
	char *errbuf;
	size_t errlen;
};

static void w_flush(struct writer *w)
{
	if (!w->err && w->n)
		w->err = output_file_write(w->of, w->buf, w->n, w->errbuf, w->errlen);
	w->n = 0;
}

static void w_put(struct writer *w, const void *v, size_t len)
{
	const unsigned char *p = v;

	w->pos += len;
	while (len && !w->err) {
		size_t k = sizeof(w->buf) - w->n < len ? sizeof(w->buf) - w->n : len;

		memcpy(w->buf + w->n, p, k);
		w->n += k;
		p += k;
		len -= k;
		if (w->n == sizeof(w->buf))
			w_flush(w);
	}
}

/* A growable buffer for the feature sections, built before writing. */
struct buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void b_put(struct buf *b, const void *v, size_t len)
{
	if (b->err || array_reserve(&b->p, &b->cap, b->len + len)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->len, v, len);
	b->len += len;
}

static void b_u32(struct buf *b, uint32_t v)
{
	b_put(b, &v, sizeof(v));
}

static void b_u64(struct buf *b, uint64_t v)
{
	b_put(b, &v, sizeof(v));
}

/* perf's header string: u32 length (NUL and padding included), then the
 * string padded with zeros to NAME_ALIGN. */
static void b_str(struct buf *b, const char *s)
{
	static const char zeros[NAME_ALIGN];
	size_t n = strlen(s), padded = (n + NAME_ALIGN) / NAME_ALIGN * NAME_ALIGN;

	b_u32(b, (uint32_t)padded);
	b_put(b, s, n);
	b_put(b, zeros, padded - n);
}

/* The first line of /proc/cpuinfo starting with `key`, its value. */
static bool cpuinfo(const char *key, char *out, size_t len)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (colon && !strncmp(line, key, strlen(key)) &&
		    strspn(line + strlen(key), " \t") == (size_t)(colon - line) - strlen(key)) {
			snprintf(out, len, "%s", colon + 1 + strspn(colon + 1, " "));
			out[strcspn(out, "\n")] = 0;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The kernel's build-id, from its notes (as perf reads it). */
static size_t kernel_build_id(uint8_t out[BUILD_ID_SIZE])
{
	unsigned char notes[4096];
	ssize_t n;
	size_t off = 0;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	memset(out, 0, BUILD_ID_SIZE);
	if (fd < 0)
		return 0;
	n = read(fd, notes, sizeof(notes));
	close(fd);
	while (n > 0 && off + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		off += 12;
		if (off + ((namesz + 3) & ~3u) + descsz > (size_t)n)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    !memcmp(notes + off, "GNU", 4)) {
			size_t k = descsz < BUILD_ID_SIZE ? descsz : BUILD_ID_SIZE;

			memcpy(out, notes + off + 4, k);
			return k;
		}
		off += ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
	}
	return 0;
}

/* Where the kernel's text starts (_text in /proc/kallsyms): perf's
 * kernel map and relocation reference. */
static uint64_t kernel_text(void)
{
	char line[256], type, name[128];
	unsigned long long addr;
	uint64_t text = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while (!text && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 && !strcmp(name, "_text"))
			text = addr;
	fclose(f);
	return text;
}

static void build_id_entry(struct buf *b, uint16_t misc, const uint8_t *bid, size_t nbid,
			   const char *name)
{
	struct perf_event_header h = { .misc = misc | PERF_RECORD_MISC_BUILD_ID_SIZE };
	size_t padded = (strlen(name) + NAME_ALIGN) / NAME_ALIGN * NAME_ALIGN;
	uint8_t id[24] = { 0 };
	static const char zeros[NAME_ALIGN];

	memcpy(id, bid, nbid);
	id[BUILD_ID_SIZE] = (uint8_t)nbid;
	h.size = (uint16_t)(sizeof(h) + 4 + sizeof(id) + padded);
	b_put(b, &h, sizeof(h));
	b_u32(b, HOST_PID);
	b_put(b, id, sizeof(id));
	b_put(b, name, strlen(name));
	b_put(b, zeros, padded - strlen(name));
}

/* The command line that made the file, as perf's CMDLINE feature lists
 * its own. */
static void feat_cmdline(struct buf *b)
{
	char args[8192];
	ssize_t n = 0;
	uint32_t nargs = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, args, sizeof(args) - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(args, sizeof(args), "cfiprof");
		n = (ssize_t)strlen(args) + 1;
	}
	args[n] = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1)
		nargs++;
	b_u32(b, nargs);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(args + i) + 1)
		b_str(b, args + i);
}

static void feat_event_desc(struct buf *b, const struct perf_data_desc *d,
			    const struct perf_event_attr *attrs)
{
	b_u32(b, d->nevents);
	b_u32(b, sizeof(struct perf_event_attr));
	for (uint32_t i = 0; i < d->nevents; i++) {
		b_put(b, &attrs[i], sizeof(attrs[i]));
		b_u32(b, 1);
		b_str(b, d->events[i].name);
		b_u64(b, d->events[i].id);
	}
}

/* The features, one section each, in bit order; *present gets their bits. */
static int build_features(const struct perf_data_desc *d, const struct perf_event_attr *attrs,
			  uint64_t first_ns, uint64_t last_ns, struct buf sec[FEAT_BITS],
			  uint64_t *present)
{
	struct utsname u;
	char text[512];
	long mem_pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint8_t bid[BUILD_ID_SIZE];

	uname(&u);
	for (uint32_t i = 0; i < d->ndsos; i++) {
		size_t n = build_id_bytes(d->dsos[i].build_id, bid);

		if (n)
			build_id_entry(&sec[FEAT_BUILD_ID], PERF_RECORD_MISC_USER, bid, n,
				       d->dsos[i].path);
	}
	if (d->kernel) {
		size_t n = kernel_build_id(bid);

		if (n)
			build_id_entry(&sec[FEAT_BUILD_ID], PERF_RECORD_MISC_KERNEL, bid, n,
				       "[kernel.kallsyms]");
	}
	b_str(&sec[FEAT_HOSTNAME], u.nodename);
	b_str(&sec[FEAT_OSRELEASE], u.release);
	b_str(&sec[FEAT_VERSION], "cfiprof " CFIPROF_VERSION);
	b_str(&sec[FEAT_ARCH], u.machine);
	b_u32(&sec[FEAT_NRCPUS], (uint32_t)sysconf(_SC_NPROCESSORS_CONF));
	b_u32(&sec[FEAT_NRCPUS], (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	if (cpuinfo("model name", text, sizeof(text)))
		b_str(&sec[FEAT_CPUDESC], text);
	{
		char vendor[64], family[16], model[16], stepping[16];

		if (cpuinfo("vendor_id", vendor, sizeof(vendor)) &&
		    cpuinfo("cpu family", family, sizeof(family)) &&
		    cpuinfo("model", model, sizeof(model)) &&
		    cpuinfo("stepping", stepping, sizeof(stepping))) {
			snprintf(text, sizeof(text), "%s,%s,%s,%s", vendor, family, model, stepping);
			b_str(&sec[FEAT_CPUID], text);
		}
	}
	if (mem_pages > 0 && page > 0)
		b_u64(&sec[FEAT_TOTAL_MEM], (uint64_t)mem_pages * (uint64_t)page / 1024);
	feat_cmdline(&sec[FEAT_CMDLINE]);
	feat_event_desc(&sec[FEAT_EVENT_DESC], d, attrs);
	b_u64(&sec[FEAT_SAMPLE_TIME], first_ns);
	b_u64(&sec[FEAT_SAMPLE_TIME], last_ns);
	for (int f = 0; f < FEAT_BITS; f++) {
		if (sec[f].err)
			return sec[f].err;
		if (sec[f].len)
			present[f / 64] |= 1ull << (f % 64);
	}
	return 0;
}

struct entry {
	uint64_t time, off;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The spool's entries sorted by time, ties in spool order (a mapping or
 * comm is spooled before the sample that needs it, at the same time). */
static int index_spool(const unsigned char *spool, size_t len, struct entry **out, size_t *n,
		       uint64_t *data_size, char *errbuf, size_t errlen)
{
	struct entry *v = NULL;
	size_t cap = 0, k = 0, off = 0;

	*data_size = 0;
	while (off < len) {
		struct perf_event_header h;

		if (len - off < sizeof(uint64_t) + sizeof(h))
			goto bad;
		memcpy(&h, spool + off + sizeof(uint64_t), sizeof(h));
		if (h.size < sizeof(h) || len - off - sizeof(uint64_t) < h.size)
			goto bad;
		if (array_reserve(&v, &cap, k + 1)) {
			free(v);
			errbuf_set(errbuf, errlen, "perf.data: out of memory sorting %zu records", k);
			return -ENOMEM;
		}
		memcpy(&v[k].time, spool + off, sizeof(uint64_t));
		v[k++].off = off;
		*data_size += h.size;
		off += sizeof(uint64_t) + h.size;
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_entry);
	*out = v;
	*n = k;
	return 0;
bad:
	free(v);
	errbuf_set(errbuf, errlen, "perf.data: the record spool is corrupt at byte %zu", off);
	return -EINVAL;
}

/* perf record's kernel map: PERF_RECORD_MMAP of the host (pid -1) from
 * _text to the end of the address space, named [kernel.kallsyms]_text so
 * that perf relocates /proc/kallsyms (or vmlinux) by _text. */
static size_t kernel_mmap(void *dst, uint64_t text, uint64_t id)
{
	struct perf_data_sid at = { .pid = HOST_PID, .id = id };
	struct rec r = begin(dst, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);

	put32x2(&r, HOST_PID, 0);
	put64(&r, text);
	put64(&r, ~0ull - text);
	put64(&r, text);
	put_str(&r, "[kernel.kallsyms]_text", 64, sizeof(uint64_t));
	return end(&r, &at);
}

int perf_data_write_to(const struct perf_data_desc *d, const void *spool, size_t len,
		       struct output_file *of, char *errbuf, size_t errlen)
{
	struct buf sec[FEAT_BITS];
	struct perf_event_attr *attrs = NULL;
	struct file_header h = { .magic = PERF_FILE_MAGIC, .size = sizeof(h),
				 .attr_size = sizeof(struct file_attr) };
	struct writer *w = NULL;
	struct entry *idx = NULL;
	size_t n = 0, nround = 0;
	unsigned char kmmap[256];
	size_t kmmap_len = 0;
	uint64_t data_size, text, off, first = 0, last = 0;
	struct perf_event_header round = { .type = PERF_RECORD_FINISHED_ROUND,
					   .size = sizeof(round) };
	int ret, nfeat = 0;

	memset(sec, 0, sizeof(sec));
	if (!d->nevents) {
		errbuf_set(errbuf, errlen, "perf.data: no event to write");
		return -EINVAL;
	}
	ret = index_spool(spool, len, &idx, &n, &data_size, errbuf, errlen);
	if (ret)
		return ret;
	if (n) {
		first = idx[0].time;
		last = idx[n - 1].time;
	}
	attrs = calloc(d->nevents, sizeof(*attrs));
	w = malloc(sizeof(*w));
	if (!attrs || !w) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->nevents; i++) {
		struct perf_event_attr *a = &attrs[i];

		*a = d->events[i].attr;
		a->size = sizeof(*a);
		a->sample_type = SAMPLE_TYPE;
		a->read_format = 0;
		a->sample_id_all = 1;
		a->disabled = 0;
		a->inherit = 1;
		a->exclude_callchain_kernel = !d->kernel;
		/* The side-band records are the first attr's, as in perf record. */
		a->mmap = a->comm = a->task = a->mmap2 = a->comm_exec = a->build_id = i == 0;
		a->sample_id_all = 1;
	}
	/* Always, as perf record: without it perf warns that the kernel's
	 * address maps were restricted. */
	if ((text = kernel_text()))
		kmmap_len = kernel_mmap(kmmap, text, d->events[0].id);
	ret = build_features(d, attrs, first, last, sec, h.features);
	if (ret)
		goto out;

	/* Layout: header, ids, attrs, data, feature index, features. */
	nround = (n + ROUND_RECORDS - 1) / ROUND_RECORDS;
	h.attrs.offset = sizeof(h) + d->nevents * sizeof(uint64_t);
	h.attrs.size = d->nevents * sizeof(struct file_attr);
	h.data.offset = h.attrs.offset + h.attrs.size;
	h.data.size = kmmap_len + data_size + nround * sizeof(round);
	for (int f = 0; f < FEAT_BITS; f++)
		nfeat += sec[f].len > 0;

	*w = (struct writer){ .of = of, .errbuf = errbuf, .errlen = errlen };
	w_put(w, &h, sizeof(h));
	for (uint32_t i = 0; i < d->nevents; i++)
		w_put(w, &d->events[i].id, sizeof(uint64_t));
	for (uint32_t i = 0; i < d->nevents; i++) {
		struct file_attr fa = { .attr = attrs[i],
					.ids = { sizeof(h) + i * sizeof(uint64_t), sizeof(uint64_t) } };

		w_put(w, &fa, sizeof(fa));
	}
	w_put(w, kmmap, kmmap_len);
	for (size_t i = 0; i < n && !w->err; i++) {
		const unsigned char *rec = (const unsigned char *)spool + idx[i].off + sizeof(uint64_t);
		struct perf_event_header rh;

		memcpy(&rh, rec, sizeof(rh));
		w_put(w, rec, rh.size);
		if ((i + 1) % ROUND_RECORDS == 0 || i + 1 == n)
			w_put(w, &round, sizeof(round));
	}
	off = h.data.offset + h.data.size + (uint64_t)nfeat * sizeof(struct file_section);
	for (int f = 0; f < FEAT_BITS; f++) {
		struct file_section s = { off, sec[f].len };

		if (!sec[f].len)
			continue;
		w_put(w, &s, sizeof(s));
		off += sec[f].len;
	}
	for (int f = 0; f < FEAT_BITS; f++)
		w_put(w, sec[f].p, sec[f].len);
	w_flush(w);
	ret = w->err;
out:
	if (ret == -ENOMEM && (!w || !w->err))
		errbuf_set(errbuf, errlen, "perf.data: out of memory");
	for (int f = 0; f < FEAT_BITS; f++)
		free(sec[f].p);
	free(attrs);
	free(w);
	free(idx);
	return ret;
}
