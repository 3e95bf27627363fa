/*
 * The symbolizer: modules registered by fd and shared by build-id (or by
 * file identity), one libdwfl session per module opened on first lookup,
 * results cached per (module, address), kernel addresses from kallsyms.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "symbolize.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debugfile.h"
#include "intern.h"
#include "kallsyms.h"
#include "plt.h"
#include "resolve.h"
#include "table.h"

#define DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define KALLSYMS_PATH "/proc/kallsyms"
/* Modules kept open at once, whatever their size: each holds fds (the
 * object, its debug file, its alt file). */
#define KEEP_MODULES_MAX 64
/* What a module kept open holds besides its sections: libdwfl's session,
 * fds, the indexes' tables. */
#define KEEP_MODULE_OVERHEAD (64 * 1024)

struct module {
	int fd;                  /* our duplicate, close-on-exec: libdwfl gets
				  * a duplicate of it at each opening */
	const char *path;        /* interned */
	const char *base;        /* basename of path, for "base+0xOFF" */
	const char *build_id;    /* interned lower-case hex, "" if none */
	dev_t dev;               /* the file registered first */
	ino_t ino;
	Dwfl *dwfl;              /* opened on first lookup */
	Dwfl_Module *dmod;
	Dwarf *alt;              /* its DWARF's dwz alt file, ours to end */
	int alt_fd;
	struct sym_fnindex functions;   /* of its DWARF, per unit */
	struct sym_symtab symbols;      /* of its symbol table */
	struct sym_plt plt;             /* its PLT stubs */
	bool dwfl_tried;
	bool kept;               /* released but kept open (symbolizer_keep_open) */
	size_t kept_bytes;       /* what keeping it open holds, estimated */
	uint32_t kept_releases;  /* releases it was kept open through since
				  * its DWARF was opened */
	uint64_t last_release;   /* s->releases when last released: LRU */
	uint32_t release_round;  /* s->round when last released */
	/* Of its files opened now (main ELF, debug file, dwz alt file, by
	 * DROP_* bit): those found in a clean file mapping of ours, and those
	 * found otherwise.  The mapping is libelf's, fixed until the module
	 * is ended, so smaps is read once per file, not at every release. */
	uint8_t drop_clean, drop_dirty;
	bool removed;            /* symbolizer_remove: its id is free */
	bool symtab_kept;        /* `symbols` counts in symtab_kept_bytes */
	uint32_t users;          /* registrations not yet removed */
	uint64_t start, end;     /* the module's address range */
};

/* A file registered, by identity: several may name one module. */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int32_t module;
};

struct cached {
	uint64_t vaddr;
	int32_t module;
	uint32_t nframes;
	struct sym_frame *frames;   /* ours (malloc): freed with the entry; the
				     * strings they point at are interned */
	uint32_t round;             /* s->round when last looked up: the trim's clock */
};

struct symbolizer {
	struct sym_arena arena;     /* the interned strings' (compact_strings) */
	struct sym_intern strings;
	size_t strings_live_bytes;  /* strings_bytes after the last compaction */
	uint64_t strings_compactions;
	bool demangle;
	char *debug_dir;            /* NULL: no separate debug files */
	int (*debug_prepared)(void *ctx, const char *build_id_hex, int fd);
	void *debug_prepared_ctx;
	Dwfl_Callbacks callbacks;
	struct module *opening;     /* whose debug files libdwfl may ask for */
	struct sym_no_alt no_alt;   /* made when first needed */

	struct module *modules;
	size_t nmodules, capmodules;
	struct sym_table by_build_id;
	int32_t *free_ids;          /* of removed modules, taken first */
	size_t nfree_ids, capfree_ids;
	struct file_id *files;
	size_t nfiles, capfiles;
	struct sym_table by_file;   /* -> files[] */

	struct cached *cache;
	size_t ncache, capcache;
	size_t cache_frame_bytes;   /* of the entries' frames */
	struct sym_table cache_index;
	uint32_t round;             /* symbolizer_trim calls so far */
	uint64_t cache_dropped;     /* entries symbolizer_trim dropped */

	struct sym_kallsyms kallsyms;
	struct sym_arena kallsyms_arena;   /* its names: never compacted */
	bool kallsyms_loaded;
	uint64_t symtab_builds;     /* symbol indexes sorted (symbolizer_symtab_builds) */
	size_t symtab_kept_bytes;   /* of the indexes kept across releases */

	/* symbolizer_keep_open: released modules kept open, within budget */
	size_t keep_budget;         /* 0: a release ends the module's DWARF */
	uint32_t keep_releases;     /* a module kept open through as many is ended */
	size_t kept_bytes;          /* of the modules kept */
	uint32_t nkept;
	uint64_t releases;
};

/* The object's ELF is reported by fd: libdwfl has no file to find. */
static int no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		  char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	*file_name = NULL;
	*elfp = NULL;
	return -1;
}

/* The file to read DWARF from in place of `fd` (symbolizer_opts:
 * debug_prepared): `fd` itself, or the hook's, `fd` then closed. */
static int prepared(struct symbolizer *s, const struct module *m, int fd)
{
	int other;

	if (!s->debug_prepared || fd < 0)
		return fd;
	other = s->debug_prepared(s->debug_prepared_ctx, m->build_id, fd);
	if (other < 0)
		return fd;
	close(fd);
	return other;
}

/* libdwfl's standard search opens what the object names with a blocking
 * open(2), a FIFO there would hang us: ours (debugfile.h) never blocks.
 * No file name may be left behind with -1: libdwfl would open it. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct symbolizer *s = *userdata;
	const struct module *m = s ? s->opening : NULL;
	struct sym_debug_want want = { .check_crc = debuglink_file && debuglink_crc,
				       .crc = debuglink_crc };
	Dwarf_Addr dwbias = 0;
	GElf_Addr vaddr;
	int len, fd;

	(void)modname;
	(void)base;
	*debuginfo_file_name = NULL;
	/* Asked again, with the DWARF open (its bias known), this is for the
	 * dwz alt file: open_dwfl finds that one itself. */
	dwfl_module_info(mod, NULL, NULL, NULL, &dwbias, NULL, NULL, NULL);
	errno = 0;   /* (else libdwfl takes -1 for an error, not "none") */
	if (!m || !s->debug_dir || dwbias != (Dwarf_Addr)-1)
		return -1;
	len = dwfl_module_build_id(mod, &want.build_id, &vaddr);
	want.build_id_len = len > 0 ? (size_t)len : 0;
	want.dev = m->dev;
	want.ino = m->ino;
	fd = sym_debug_open(s->debug_dir, file_name, debuglink_file, &want, debuginfo_file_name);
	/* (its name stays the original's: libdwfl looks for a dwz alt
	 * file relative to it) */
	fd = prepared(s, m, fd);
	errno = 0;
	return fd < 0 ? -1 : fd;
}

struct symbolizer *symbolizer_new(const struct symbolizer_opts *opts)
{
	const struct symbolizer_opts none = { 0 };
	struct symbolizer *s;

	if (!opts)
		opts = &none;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	elf_version(EV_CURRENT);
	/* libdwfl's standard debuginfo search asks debuginfod servers when
	 * DEBUGINFOD_URLS is set: a profiler must not block on the network
	 * while symbolizing, so debug files come from disk only. */
	unsetenv("DEBUGINFOD_URLS");
	sym_intern_init(&s->strings, &s->arena);
	s->demangle = !opts->no_demangle;
	s->debug_prepared = opts->debug_prepared;
	s->debug_prepared_ctx = opts->debug_prepared_ctx;
	s->callbacks.find_elf = no_elf;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.find_debuginfo = find_debuginfo;
	if (!opts->debug_dir || *opts->debug_dir) {
		s->debug_dir = strdup(opts->debug_dir ? opts->debug_dir : DEFAULT_DEBUG_DIR);
		if (!s->debug_dir) {
			free(s);
			return NULL;
		}
	}
	return s;
}

/* The symbol indexes kept across releases, for all modules: a busy
 * machine's programs' tables are a few MiB (libLLVM-15's is 4 MiB). */
#define SYMTAB_KEEP_MAX (8u << 20)

/* What a module's lookups took: its indexes, its libdwfl session (which
 * ends its DWARF, not the alt file we gave it) and its fds; `forever`:
 * its own fd too, else the next lookup not cached opens it again. */
static void module_release(struct symbolizer *s, struct module *m, bool forever)
{
	if (m->kept) {
		s->kept_bytes -= m->kept_bytes;
		s->nkept--;
		m->kept = false;
	}
	sym_fnindex_free(&m->functions);
	/* The symbol index owns its names and serves the next session, within
	 * SYMTAB_KEEP_MAX for all modules: beyond, it goes as the rest. */
	if (m->symbols.built) {
		size_t bytes = sym_symtab_bytes(&m->symbols);

		if (forever || (!m->symtab_kept && s->symtab_kept_bytes + bytes > SYMTAB_KEEP_MAX)) {
			if (m->symtab_kept)
				s->symtab_kept_bytes -= bytes;
			m->symtab_kept = false;
			sym_symtab_free(&m->symbols);
		} else if (!m->symtab_kept) {
			s->symtab_kept_bytes += bytes;
			m->symtab_kept = true;
		}
	}
	sym_plt_free(&m->plt);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->dmod = NULL;
	m->dwfl_tried = forever;
	m->kept_releases = 0;
	m->drop_clean = m->drop_dirty = 0;
	if (m->alt)
		dwarf_end(m->alt);
	m->alt = NULL;
	if (m->alt_fd >= 0)
		close(m->alt_fd);
	m->alt_fd = -1;
	if (forever && m->fd >= 0)
		close(m->fd);
	if (forever)
		m->fd = -1;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmodules; i++)
		module_release(s, &s->modules[i], true);
	sym_no_alt_close(&s->no_alt);
	free(s->modules);
	free(s->free_ids);
	for (size_t i = 0; i < s->ncache; i++)
		free(s->cache[i].frames);
	sym_table_free(&s->by_build_id);
	free(s->files);
	sym_table_free(&s->by_file);
	free(s->cache);
	sym_table_free(&s->cache_index);
	sym_kallsyms_free(&s->kallsyms);
	sym_arena_free(&s->kallsyms_arena);
	sym_intern_free(&s->strings);
	sym_arena_free(&s->arena);
	free(s->debug_dir);
	free(s);
}

/* ---- module registration ---- */

struct file_key {
	const struct symbolizer *s;
	const struct stat *st;
};

static uint64_t file_id_hash(dev_t dev, ino_t ino, off_t size, const struct timespec *mtime)
{
	uint64_t h = sym_hash_u64((uint64_t)dev);

	h = sym_hash_u64(h ^ (uint64_t)ino);
	h = sym_hash_u64(h ^ (uint64_t)size);
	h = sym_hash_u64(h ^ (uint64_t)mtime->tv_sec);
	return sym_hash_u64(h ^ (uint64_t)mtime->tv_nsec);
}

static uint64_t file_hash(const struct stat *st)
{
	return file_id_hash(st->st_dev, st->st_ino, st->st_size, &st->st_mtim);
}

static bool file_eq(void *ctx, int32_t id)
{
	const struct file_key *k = ctx;
	const struct file_id *f = &k->s->files[id];

	return f->dev == k->st->st_dev && f->ino == k->st->st_ino && f->size == k->st->st_size &&
	       f->mtime.tv_sec == k->st->st_mtim.tv_sec &&
	       f->mtime.tv_nsec == k->st->st_mtim.tv_nsec;
}

/* Remembers that the file `st` is module `module`.  0, or -ENOMEM. */
static int add_file(struct symbolizer *s, const struct stat *st, uint64_t hash, int32_t module)
{
	struct file_id *f;

	if (s->nfiles >= INT32_MAX)
		return -ENOMEM;
	if (s->nfiles == s->capfiles) {
		size_t cap = s->capfiles ? s->capfiles * 2 : 16;
		struct file_id *v = realloc(s->files, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->files = v;
		s->capfiles = cap;
	}
	if (sym_table_insert(&s->by_file, hash, (int32_t)s->nfiles))
		return -ENOMEM;
	f = &s->files[s->nfiles++];
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtime = st->st_mtim;
	f->module = module;
	return 0;
}

struct bid_key {
	const struct symbolizer *s;
	const char *hex;   /* interned: compares by pointer */
};

static bool bid_eq(void *ctx, int32_t id)
{
	const struct bid_key *k = ctx;

	return (size_t)id < k->s->nmodules && !k->s->modules[id].removed &&
	       k->s->modules[id].build_id == k->hex;
}

/* The build-id of the ELF open at fd as hex into `hex` (size >= 2*len+1),
 * "" if none.  0, or -ENOEXEC if fd is not an ELF object. */
static int read_build_id(int fd, char *hex, size_t size)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr ehdr;
	const void *id = NULL;
	ssize_t len;
	int rc = 0;

	hex[0] = '\0';
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		rc = -ENOEXEC;
		goto out;
	}
	len = dwelf_elf_gnu_build_id(elf, &id);
	if (len > 0 && (size_t)len * 2 < size) {
		const unsigned char *b = id;

		for (ssize_t i = 0; i < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", b[i]);
	}
out:
	elf_end(elf);
	return rc;
}

/* Makes modules[id] (a removed module's, or the next one) the module of
 * the file `st` open at `fd`, whose build-id is `hex` ("" if none; its
 * hash `bh`).  Returns id, or a negative errno. */
static int add_module_at(struct symbolizer *s, int32_t id, int fd, const struct stat *st,
			 uint64_t fh, const char *hex, uint64_t bh, const char *path)
{
	bool reused = (size_t)id < s->nmodules;
	struct module *m = &s->modules[id];
	const char *slash;
	int dupfd;

	dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return -errno;
	memset(m, 0, sizeof(*m));
	/* (Until it is complete, a reused id stays free: removed.) */
	m->removed = reused;
	m->fd = dupfd;
	m->alt_fd = -1;
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->path = sym_intern(&s->strings, path ? path : "");
	slash = m->path ? strrchr(m->path, '/') : NULL;
	m->base = slash ? sym_intern(&s->strings, slash + 1) : m->path;
	m->build_id = sym_intern(&s->strings, hex);
	if (!m->path || !m->base || !m->build_id ||
	    (hex[0] && sym_table_insert(&s->by_build_id, bh, id))) {
		/* (a build-id entry already made for this id is harmless:
		 * bid_eq ignores ids >= nmodules and removed ones, and the
		 * module that later takes the id is compared on its own
		 * build-id) */
		close(dupfd);
		m->fd = -1;
		return -ENOMEM;
	}
	m->users = 1;
	if (reused) {
		m->removed = false;
		s->nfree_ids--;
	} else {
		s->nmodules++;
	}
	/* (failing this only costs an ELF read at the next registration) */
	(void)add_file(s, st, fh, id);
	return id;
}

int symbolizer_add_module(struct symbolizer *s, int fd, const char *path)
{
	struct stat st;
	struct file_key fk = { s, &st };
	struct bid_key bk = { s, NULL };
	char hex[2 * 64 + 1];
	uint64_t fh, bh = 0;
	int32_t id;
	int rc;

	if (!s || fd < 0)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	fh = file_hash(&st);
	id = sym_table_find(&s->by_file, fh, file_eq, &fk);
	if (id >= 0) {
		s->modules[s->files[id].module].users++;
		return s->files[id].module;
	}

	rc = read_build_id(fd, hex, sizeof(hex));
	if (rc)
		return rc;
	if (!(bk.hex = sym_intern(&s->strings, hex)))
		return -ENOMEM;
	if (hex[0]) {
		bh = sym_hash_bytes(hex, strlen(hex));
		id = sym_table_find(&s->by_build_id, bh, bid_eq, &bk);
		if (id >= 0) {
			/* Another file, same object: remember it too, so that
			 * the next registration of it skips the ELF read. */
			rc = add_file(s, &st, fh, id);
			if (rc)
				return rc;
			s->modules[id].users++;
			return id;
		}
	}

	if (s->nmodules >= INT32_MAX)
		return -ENOSPC;
	/* The id of a removed module first: a daemon's modules come and go. */
	if (s->nfree_ids)
		return add_module_at(s, s->free_ids[s->nfree_ids - 1], fd, &st, fh, hex, bh, path);
	if (s->nmodules == s->capmodules) {
		size_t cap = s->capmodules ? s->capmodules * 2 : 16;
		struct module *mods = realloc(s->modules, cap * sizeof(*mods));

		if (!mods)
			return -ENOMEM;
		s->modules = mods;
		s->capmodules = cap;
	}
	return add_module_at(s, (int32_t)s->nmodules, fd, &st, fh, hex, bh, path);
}

static const struct module *get_module(const struct symbolizer *s, int module)
{
	if (!s || module < 0 || (size_t)module >= s->nmodules || s->modules[module].removed)
		return NULL;
	return &s->modules[module];
}

const char *symbolizer_module_path(const struct symbolizer *s, int module)
{
	const struct module *m = get_module(s, module);

	return m ? m->path : NULL;
}

const char *symbolizer_module_build_id(const struct symbolizer *s, int module)
{
	const struct module *m = get_module(s, module);

	return m ? m->build_id : NULL;
}

/* ---- lookup ---- */

/* Gives the module's DWARF its dwz alt file, found without blocking; or,
 * failing that, an empty one, so that libdw does not search itself. */
static void attach_alt(struct symbolizer *s, struct module *m, Dwarf *dw)
{
	struct sym_debug_want want = { .dev = m->dev, .ino = m->ino };
	const char *altname, *mainfile = NULL, *debugfile = NULL;
	const void *id;
	ssize_t len = dwelf_dwarf_gnu_debugaltlink(dw, &altname, &id);
	char *found = NULL;
	int fd = -1;

	if (len <= 0)
		return;
	want.build_id = id;
	want.build_id_len = (size_t)len;
	dwfl_module_info(m->dmod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	if (s->debug_dir)
		fd = sym_debug_open_alt(s->debug_dir, debugfile ? debugfile : mainfile, altname,
					&want, &found);
	free(found);
	if (fd >= 0) {
		m->alt = dwarf_begin(fd, DWARF_C_READ);
		if (m->alt) {
			m->alt_fd = fd;
			dwarf_setalt(dw, m->alt);
			return;
		}
		close(fd);
	}
	if (s->no_alt.dwarf || sym_no_alt_open(&s->no_alt) == 0)
		dwarf_setalt(dw, s->no_alt.dwarf);
}

static void open_dwfl(struct symbolizer *s, struct module *m)
{
	Dwarf_Addr start, end, bias;
	void **userdata;
	Dwarf *dw;
	int fd;

	m->dwfl_tried = true;
	fd = m->fd >= 0 ? fcntl(m->fd, F_DUPFD_CLOEXEC, 0) : -1;
	/* The object may hold its DWARF itself (built with -gz): a prepared
	 * copy keeps every other section where it is, and so its program
	 * headers, addresses and symbols. */
	fd = prepared(s, m, fd);
	if (fd < 0)
		return;
	m->dwfl = dwfl_begin(&s->callbacks);
	if (!m->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(m->dwfl);
	/* Base 0 with p_vaddr added: module addresses are the file's
	 * virtual addresses (bias 0) for ET_EXEC and ET_DYN alike.  On
	 * success libdwfl owns the fd (and maps the file): ours stays, for
	 * opening it again after symbolizer_release. */
	m->dmod = dwfl_report_elf(m->dwfl, m->base, m->path, fd, 0, true);
	if (!m->dmod) {
		close(fd);
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
	dwfl_module_info(m->dmod, &userdata, &start, &end, NULL, NULL, NULL, NULL);
	m->start = start;
	m->end = end;
	/* Debug files are looked for now, while the callback can know whose
	 * they are: libdwfl asks once for each, and keeps the answer. */
	*userdata = s;
	s->opening = m;
	dwfl_module_getsymtab(m->dmod);
	dw = dwfl_module_getdwarf(m->dmod, &bias);
	s->opening = NULL;
	if (dw)
		attach_alt(s, m, dw);
}

struct cache_key {
	const struct symbolizer *s;
	int32_t module;
	uint64_t vaddr;
};

static uint64_t cache_hash(int32_t module, uint64_t vaddr)
{
	return sym_hash_u64(vaddr ^ ((uint64_t)(uint32_t)module << 48) ^
			    ((uint64_t)(uint32_t)module * 0x9e3779b97f4a7c15ull));
}

static bool cache_eq(void *ctx, int32_t id)
{
	const struct cache_key *k = ctx;
	const struct cached *c = &k->s->cache[id];

	return c->module == k->module && c->vaddr == k->vaddr;
}

static int cache_add(struct symbolizer *s, int32_t module, uint64_t vaddr,
		     const struct sym_frame *frames, int n, const struct cached **out)
{
	struct cached *c;

	if (s->ncache >= INT32_MAX)
		return -ENOSPC;
	if (s->ncache == s->capcache) {
		size_t cap = s->capcache ? s->capcache * 2 : 1024;
		struct cached *nc = realloc(s->cache, cap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		s->cache = nc;
		s->capcache = cap;
	}
	c = &s->cache[s->ncache];
	c->vaddr = vaddr;
	c->module = module;
	c->round = s->round;
	c->nframes = (uint32_t)n;
	c->frames = malloc((size_t)n * sizeof(*frames));
	if (!c->frames)
		return -ENOMEM;
	memcpy(c->frames, frames, (size_t)n * sizeof(*frames));
	if (sym_table_insert(&s->cache_index, cache_hash(module, vaddr), (int32_t)s->ncache)) {
		free(c->frames);
		return -ENOMEM;
	}
	s->ncache++;
	s->cache_frame_bytes += (size_t)n * sizeof(*frames);
	*out = c;
	return 0;
}

static const char *unknown_name(struct symbolizer *s, const char *base, uint64_t off)
{
	char buf[64];
	char *name;
	const char *r;

	if (strlen(base) < sizeof(buf) - 20) {
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, off);
		return sym_intern(&s->strings, buf);
	}
	if (asprintf(&name, "%s+0x%" PRIx64, base, off) < 0)
		return NULL;
	r = sym_intern(&s->strings, name);
	free(name);
	return r;
}

/* "sin@plt" for an address in the stub of sin: 1, 0 if in no stub,
 * -ENOMEM. */
static int plt_name(struct symbolizer *s, struct module *m, uint64_t vaddr,
		    struct sym_frame *out)
{
	const char *target = sym_plt_find(&m->plt, m->dmod, vaddr);
	char *name;

	if (!target)
		return 0;
	if (asprintf(&name, "%s@plt", target) < 0)
		return -ENOMEM;
	out->function = out->system_name = sym_intern(&s->strings, name);
	free(name);
	if (!out->function)
		return -ENOMEM;
	out->file = NULL;
	out->line = 0;
	out->inlined = false;
	return 1;
}

int symbolizer_lookup(struct symbolizer *s, int module, uint64_t vaddr,
		      struct sym_frame *out, int max)
{
	struct cache_key k = { s, module, vaddr };
	const struct cached *c;
	struct module *m;
	int32_t id;
	int n;

	if (!get_module(s, module))
		return -EINVAL;
	m = &s->modules[module];
	id = sym_table_find(&s->cache_index, cache_hash(module, vaddr), cache_eq, &k);
	if (id >= 0) {
		s->cache[id].round = s->round;
		c = &s->cache[id];
	} else {
		struct sym_frame frames[SYM_MAX_CHAIN];
		int rc;

		if (!m->dwfl_tried)
			open_dwfl(s, m);
		n = 0;
		if (m->dmod && vaddr >= m->start && vaddr < m->end) {
			/* (PLT stubs have no symbols, and no DWARF but for the
			 * nearest unit's line table: first) */
			n = plt_name(s, m, vaddr, frames);
			if (n == 0) {
				bool had_symtab = m->symbols.built;

				n = sym_resolve(m->dmod, &m->functions, &m->symbols, vaddr,
						s->demangle, &s->strings, frames);
				s->symtab_builds += !had_symtab && m->symbols.built;
			}
		}
		if (n < 0)
			return n;
		if (n == 0) {
			frames[0].file = NULL;
			frames[0].line = 0;
			frames[0].inlined = false;
			frames[0].function = NULL;
			n = 1;
		}
		if (!frames[n - 1].function) {
			frames[n - 1].function = unknown_name(s, m->base, vaddr);
			if (!frames[n - 1].function)
				return -ENOMEM;
			frames[n - 1].system_name = frames[n - 1].function;
		}
		for (int i = 0; i < n; i++)
			if (!frames[i].system_name)
				frames[i].system_name = frames[i].function;
		rc = cache_add(s, module, vaddr, frames, n, &c);
		if (rc)
			return rc;
	}
	n = (int)c->nframes;
	if (max < 0)
		max = 0;
	if (n > max)
		n = max;
	if (n)
		memcpy(out, c->frames, (size_t)n * sizeof(*out));
	return n;
}

/* ---- kernel ---- */

int symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	const struct sym_ksym *k;
	const char *name;

	if (!s || !out)
		return -EINVAL;
	if (!s->kallsyms_loaded) {
		/* Unreadable kallsyms behaves as restricted: "[kernel]+0x...". */
		s->kallsyms_loaded = true;
		if (sym_kallsyms_load(&s->kallsyms, KALLSYMS_PATH, &s->kallsyms_arena) == -ENOMEM)
			s->kallsyms_loaded = false;
	}
	k = sym_kallsyms_find(&s->kallsyms, addr);
	name = k ? k->name : unknown_name(s, "[kernel]", addr);
	if (!name)
		return -ENOMEM;
	out->function = out->system_name = name;
	out->file = NULL;
	out->line = 0;
	out->inlined = false;
	return 1;
}

uint64_t symbolizer_symtab_builds(const struct symbolizer *s)
{
	return s->symtab_builds;
}

/* An index's slots, as symbolizer_memory counts them. */
static size_t table_bytes(const struct sym_table *t)
{
	return t->slots ? (t->mask + 1) * sizeof(*t->slots) : 0;
}

/* The interned strings: their arena, and by id their pointers, lengths
 * and index. */
static size_t strings_bytes(const struct symbolizer *s)
{
	return s->arena.bytes + s->strings.cap * (sizeof(*s->strings.strs) + sizeof(*s->strings.lens)) +
	       table_bytes(&s->strings.index);
}

void symbolizer_memory(const struct symbolizer *s, struct symbolizer_memory *m)
{
	*m = (struct symbolizer_memory){
		.results_bytes = s->capcache * sizeof(*s->cache) + s->cache_frame_bytes +
				 table_bytes(&s->cache_index),
		.results = s->ncache,
		.strings_bytes = strings_bytes(s),
		.symbol_index_bytes = s->symtab_kept_bytes,
		.kallsyms_bytes = s->kallsyms.count * sizeof(*s->kallsyms.syms) +
				  s->kallsyms_arena.bytes,
		.dwarf_kept_bytes = s->kept_bytes,
		.results_dropped = s->cache_dropped,
		.strings_compactions = s->strings_compactions,
		.modules_kept = s->nkept,
	};
}

size_t symbolizer_cache_bytes(const struct symbolizer *s)
{
	struct symbolizer_memory m;

	symbolizer_memory(s, &m);
	return m.results_bytes + m.strings_bytes + m.symbol_index_bytes + m.kallsyms_bytes;
}

/* What one cached entry holds: itself, its frames, and about two index
 * slots (the index is kept at most half full). */
static size_t cached_bytes(const struct cached *c)
{
	return sizeof(*c) + c->nframes * sizeof(*c->frames) + 2 * sizeof(struct sym_table_slot);
}

/* Drops the results looked up least recently (symbolizer_trim). */
static size_t trim_results(struct symbolizer *s, size_t budget, uint32_t now)
{
	/* Ages in rounds; the oldest share the last bucket. */
	enum { AGES = 64 };
	size_t by_age[AGES] = { 0 }, kept, dropped = 0, j = 0;
	uint32_t max_age = 0;
	struct symbolizer_memory m;

	symbolizer_memory(s, &m);
	if (!budget || m.results_bytes <= budget)
		return 0;
	for (size_t i = 0; i < s->ncache; i++) {
		uint32_t age = now - s->cache[i].round;
		size_t b = cached_bytes(&s->cache[i]);

		by_age[age < AGES ? age : AGES - 1] += b;
	}
	/* The youngest ages that fit half the budget stay; the round just
	 * ended stays whatever its size. */
	kept = by_age[0];
	while (max_age + 1 < AGES && kept + by_age[max_age + 1] <= budget / 2)
		kept += by_age[++max_age];
	/* What stays is indexed afresh, the index sized for it; an entry it
	 * cannot take (out of memory) goes too, so that every entry is found. */
	sym_table_free(&s->cache_index);
	for (size_t i = 0; i < s->ncache; i++) {
		struct cached *c = &s->cache[i];
		uint32_t age = now - c->round;

		if ((age < AGES ? age : AGES - 1) > max_age ||
		    sym_table_insert(&s->cache_index, cache_hash(c->module, c->vaddr), (int32_t)j)) {
			s->cache_frame_bytes -= c->nframes * sizeof(*c->frames);
			free(c->frames);
			dropped++;
			continue;
		}
		s->cache[j++] = *c;
	}
	s->ncache = j;
	if (s->capcache > 1024 && s->capcache > 2 * s->ncache) {
		size_t cap = s->ncache * 2 > 1024 ? s->ncache * 2 : 1024;
		struct cached *nc = realloc(s->cache, cap * sizeof(*nc));

		if (nc) {
			s->cache = nc;
			s->capcache = cap;
		}
	}
	s->cache_dropped += dropped;
	return dropped;
}

/* The interned strings are compacted once their arena is twice what the
 * last compaction left, and at least this. */
#define STRINGS_COMPACT_MIN (1u << 20)

/* Interns *p into `to`, and points *p at the copy if `repoint`. */
static int move_string(struct sym_intern *to, const char **p, bool repoint)
{
	const char *c;

	if (!*p)
		return 0;
	c = sym_intern(to, *p);
	if (!c)
		return -ENOMEM;
	if (repoint)
		*p = c;
	return 0;
}

/* Every string the symbolizer refers to (its modules' names, its cached
 * results' names and files) into `to`; pointed at there if `repoint`.
 * A removed module's names are no one's: "" (its id is reused whole). */
static int move_strings(struct symbolizer *s, struct sym_intern *to, bool repoint)
{
	for (size_t i = 0; i < s->nmodules; i++) {
		struct module *m = &s->modules[i];

		if (m->removed) {
			if (repoint)
				m->path = m->base = m->build_id = "";
			continue;
		}
		if (move_string(to, &m->path, repoint) || move_string(to, &m->base, repoint) ||
		    move_string(to, &m->build_id, repoint))
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->ncache; i++) {
		for (uint32_t k = 0; k < s->cache[i].nframes; k++) {
			struct sym_frame *f = &s->cache[i].frames[k];

			if (move_string(to, &f->function, repoint) ||
			    move_string(to, &f->system_name, repoint) ||
			    move_string(to, &f->file, repoint))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Interned strings are never freed one by one: those of results dropped
 * and of modules removed would pile up as long as a daemon runs (every
 * new program's paths and names).  So they are copied, those still
 * referred to, into a fresh arena, and the old one freed: a copy in two
 * passes, so that running out of memory halfway changes nothing. */
static void compact_strings(struct symbolizer *s)
{
	struct sym_arena arena = { 0 };
	size_t now = strings_bytes(s);
	struct sym_intern to;

	if (now < STRINGS_COMPACT_MIN || now < 2 * s->strings_live_bytes)
		return;
	sym_intern_init(&to, &arena);
	if (move_strings(s, &to, false)) {
		sym_intern_free(&to);
		sym_arena_free(&arena);
		return;
	}
	/* (each found now: no allocation, no failure) */
	move_strings(s, &to, true);
	sym_intern_free(&s->strings);
	sym_arena_free(&s->arena);
	s->arena = arena;
	s->strings = to;
	s->strings.arena = &s->arena;
	s->strings_live_bytes = strings_bytes(s);
	s->strings_compactions++;
}

size_t symbolizer_trim(struct symbolizer *s, size_t budget)
{
	size_t dropped = trim_results(s, budget, s->round++);

	compact_strings(s);
	return dropped;
}

/* The sections symbolizing parses: units and their DIEs, abbreviations,
 * line tables, ranges and the strings and addresses they refer to.  Not
 * location lists, macros, call frames or name indexes, which a lookup of
 * function, file, line and inlined calls never reads. */
static bool debug_section_parsed(const char *name)
{
	static const char *const parsed[] = { "info", "abbrev", "line", "line_str", "str",
					      "str_offsets", "addr", "ranges", "rnglists",
					      "aranges", "types" };

	if (!strncmp(name, ".debug_", 7))
		name += 7;
	else if (!strncmp(name, ".zdebug_", 8))
		name += 8;
	else
		return false;
	for (size_t i = 0; i < sizeof(parsed) / sizeof(parsed[0]); i++)
		if (!strcmp(name, parsed[i]))
			return true;
	return false;
}

/* What keeping `elf`'s debug sections open may hold: two and a half
 * times the sections symbolizing parses (what libdw and our indexes
 * build from them), and every debug section whose data sits in the heap
 * (decompressed by libdw) rather than in libelf's mapping of the file,
 * whose pages drop_resident gives back. */
static size_t debug_sections_bytes(Elf *elf)
{
	size_t shstrndx, rawlen = 0, bytes = 0;
	const char *raw = elf ? elf_rawfile(elf, &rawlen) : NULL;
	Elf_Scn *scn = NULL;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug", 6) && strncmp(name, ".zdebug", 7)))
			continue;
		if (debug_section_parsed(name))
			bytes += sh.sh_size * 5 / 2;
		/* (libelf's data of a section read in place points into the
		 * mapping; a decompressed one is a heap copy) */
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size &&
		    (!raw || (const char *)d->d_buf < raw || (const char *)d->d_buf >= raw + rawlen))
			bytes += d->d_size;
	}
	return bytes;
}

/* What keeping `m` open may hold: debug_sections_bytes of its files.
 * Measured with every unit parsed (`NO_RELEASE=1 HEAP_EVERY=100
 * bench/symbolize-libc cuts 1200 20`, and OBJECT=PATH), the heap took
 * 21.5 MiB for libc6-dbg's libc (estimated 20.4) and 25 MiB for a
 * libpython3.11 built with -g (estimated 31); a daemon's kept module
 * parses only the units its samples fall in, and is ended after
 * symbolizer_keep_open's count of releases.  An estimate fixed when the
 * module is released, not a measure of the heap: mallinfo2 cannot tell
 * this thread's allocations from the table compiler's, and walks every
 * bin at each call. */
static size_t module_open_bytes(struct module *m)
{
	Dwarf_Addr bias;
	size_t bytes = 0;
	Dwarf *dw;

	if (!m->dmod)
		return KEEP_MODULE_OVERHEAD;
	bytes += debug_sections_bytes(dwfl_module_getelf(m->dmod, &bias));
	dw = dwfl_module_getdwarf(m->dmod, &bias);
	if (dw && dwarf_getelf(dw) != dwfl_module_getelf(m->dmod, &bias))
		bytes += debug_sections_bytes(dwarf_getelf(dw));
	if (m->alt)
		bytes += debug_sections_bytes(dwarf_getelf(m->alt));
	return KEEP_MODULE_OVERHEAD + bytes;
}

/* Whether [p, p + len) lies in one file mapping of ours without a page
 * of its own: what libelf mapped (libdwfl's ELF_C_READ_MMAP_PRIVATE,
 * writable but, for the shared objects and debug files we open, never
 * written), not a copy read into the heap, nor one whose pages were
 * copied on a write (which MADV_DONTNEED would undo). */
static bool in_clean_file_mapping(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool found = false, ok = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino, kb;

		if (!found) {
			if (sscanf(line, "%lx-%lx %*s %*x %*x:%*x %lu", &lo, &hi, &ino) == 3 &&
			    a >= lo && a < hi) {
				found = true;
				if (!ino || a + len > hi)
					break;
			}
			continue;
		}
		if (sscanf(line, "Anonymous: %lu kB", &kb) == 1) {
			ok = kb == 0;
			break;
		}
	}
	fclose(f);
	return ok;
}

/* Gives back the pages of `elf`'s file that lookups made resident: they
 * are the file's, read again from the page cache when touched.  A module
 * kept open for the next cuts then holds what libdw parsed, not the debug
 * file's pages it read once (libc's: up to 9 MiB). */
enum { DROP_MAIN = 1, DROP_DEBUG = 2, DROP_ALT = 4 };

static void drop_resident(struct module *m, Elf *elf, uint8_t which)
{
	size_t len = 0;
	char *p = elf ? elf_rawfile(elf, &len) : NULL;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t lo, hi;

	if (!p || !len || page <= 0 || (m->drop_dirty & which))
		return;
	if (!(m->drop_clean & which)) {
		if (!in_clean_file_mapping(p, len)) {
			m->drop_dirty |= which;
			return;
		}
		m->drop_clean |= which;
	}
	lo = (uintptr_t)p & ~((uintptr_t)page - 1);
	hi = (uintptr_t)p + len;
	madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void drop_resident_module(struct module *m)
{
	Dwarf_Addr bias;
	Elf *main_elf;
	Dwarf *dw;

	if (!m->dmod)
		return;
	main_elf = dwfl_module_getelf(m->dmod, &bias);
	drop_resident(m, main_elf, DROP_MAIN);
	dw = dwfl_module_getdwarf(m->dmod, &bias);
	if (dw && dwarf_getelf(dw) != main_elf)
		drop_resident(m, dwarf_getelf(dw), DROP_DEBUG);
	if (m->alt)
		drop_resident(m, dwarf_getelf(m->alt), DROP_ALT);
}

static bool has_dwarf(struct module *m)
{
	Dwarf_Addr bias;

	return m->dmod && dwfl_module_getdwarf(m->dmod, &bias);
}

/* The least recently released kept module. */
static struct module *oldest_kept(struct symbolizer *s)
{
	struct module *oldest = NULL;

	for (size_t i = 0; i < s->nmodules; i++)
		if (s->modules[i].kept &&
		    (!oldest || s->modules[i].last_release < oldest->last_release))
			oldest = &s->modules[i];
	return oldest;
}

/* Ends the least recently released kept module's DWARF. */
static void release_oldest_kept(struct symbolizer *s)
{
	struct module *oldest = oldest_kept(s);

	if (oldest)
		module_release(s, oldest, false);
}

void symbolizer_keep_open(struct symbolizer *s, size_t budget, uint32_t releases)
{
	s->keep_budget = budget;
	s->keep_releases = releases;
	while (s->nkept && s->kept_bytes > budget)
		release_oldest_kept(s);
}

uint32_t symbolizer_modules_open(const struct symbolizer *s)
{
	uint32_t i, n = 0;

	for (i = 0; s && i < s->nmodules; i++)
		n += s->modules[i].dwfl != NULL;
	return n;
}

bool symbolizer_release(struct symbolizer *s, int module)
{
	struct module *m;
	bool ended = false;
	size_t bytes;

	if (!get_module(s, module))
		return false;
	m = &s->modules[module];
	/* Only DWARF is worth keeping: a module without is its symbol index,
	 * which stays anyway, and reopening it costs little. */
	if (!m->dwfl || !s->keep_budget || !has_dwarf(m)) {
		ended = m->dwfl != NULL;
		module_release(s, m, false);
		return ended;
	}
	m->last_release = ++s->releases;
	/* Out of the count while room is made for it. */
	if (m->kept) {
		s->kept_bytes -= m->kept_bytes;
		s->nkept--;
		m->kept = false;
	}
	bytes = module_open_bytes(m);
	/* What a module kept open holds grows with every unit a lookup
	 * parses, and the bound above is an estimate: ended after so many
	 * releases, it holds what that many cuts parsed, not what months of
	 * them did (libc's DWARF, looked up at new addresses at each cut,
	 * grows for hours before every unit is parsed). */
	if (bytes > s->keep_budget || (s->keep_releases && m->kept_releases >= s->keep_releases)) {
		module_release(s, m, false);
		return true;
	}
	/* Room is made by ending modules released in an earlier round, not
	 * in this one: those are as needed as this one at the next round,
	 * and ending each other, all of them would be parsed again at every
	 * round.  Without such room, this one is ended. */
	while (s->nkept && (s->kept_bytes + bytes > s->keep_budget || s->nkept >= KEEP_MODULES_MAX)) {
		struct module *oldest = oldest_kept(s);

		if (oldest->release_round == s->round) {
			module_release(s, m, false);
			return true;
		}
		module_release(s, oldest, false);
		ended = true;
	}
	m->kept_releases++;
	m->release_round = s->round;
	m->kept = true;
	m->kept_bytes = bytes;
	s->kept_bytes += bytes;
	s->nkept++;
	drop_resident_module(m);
	return ended;
}

size_t symbolizer_kept_bytes(const struct symbolizer *s)
{
	return s->kept_bytes;
}

/* Removes from `t` the entries i of v[0..*n) (elements of `size` bytes)
 * that `drop` says go, each indexed under hash(v + i): the last element
 * fills each hole. */
static void drop_entries(struct sym_table *t, void *v, size_t *n, size_t size,
			 bool (*drop)(const void *e, int32_t module), int32_t module,
			 uint64_t (*hash)(const void *e))
{
	char *base = v;

	for (size_t i = *n; i > 0; i--) {
		char *e = base + (i - 1) * size, *last = base + (*n - 1) * size;

		if (!drop(e, module))
			continue;
		sym_table_remove(t, hash(e), (int32_t)(i - 1));
		if (e != last) {
			/* Cannot fail: the index just lost an entry. */
			sym_table_remove(t, hash(last), (int32_t)(*n - 1));
			memcpy(e, last, size);
			sym_table_insert(t, hash(e), (int32_t)(i - 1));
		}
		(*n)--;
	}
}

static bool file_of(const void *e, int32_t module)
{
	return ((const struct file_id *)e)->module == module;
}

static uint64_t file_entry_hash(const void *e)
{
	const struct file_id *f = e;

	return file_id_hash(f->dev, f->ino, f->size, &f->mtime);
}

static bool cached_of(const void *e, int32_t module)
{
	return ((const struct cached *)e)->module == module;
}

static uint64_t cached_entry_hash(const void *e)
{
	const struct cached *c = e;

	return cache_hash(c->module, c->vaddr);
}

int symbolizer_remove(struct symbolizer *s, int module)
{
	struct module *m = (struct module *)get_module(s, module);

	if (!m)
		return -EINVAL;
	/* Registered twice (two names of one object): the other stays. */
	if (m->users > 1) {
		m->users--;
		return 0;
	}
	/* Room first: once removed, the id must be reusable. */
	if (s->nfree_ids == s->capfree_ids) {
		size_t cap = s->capfree_ids ? s->capfree_ids * 2 : 16;
		int32_t *v = realloc(s->free_ids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->free_ids = v;
		s->capfree_ids = cap;
	}
	module_release(s, m, true);
	if (m->build_id[0])
		sym_table_remove(&s->by_build_id, sym_hash_bytes(m->build_id, strlen(m->build_id)),
				 module);
	drop_entries(&s->by_file, s->files, &s->nfiles, sizeof(*s->files), file_of, module,
		     file_entry_hash);
	/* (The strings their frames name stay until the next compaction:
	 * profiles being built may point at them.) */
	for (size_t i = 0; i < s->ncache; i++) {
		if (s->cache[i].module != module)
			continue;
		s->cache_frame_bytes -= s->cache[i].nframes * sizeof(*s->cache[i].frames);
		free(s->cache[i].frames);
	}
	drop_entries(&s->cache_index, s->cache, &s->ncache, sizeof(*s->cache), cached_of, module,
		     cached_entry_hash);
	m->removed = true;
	s->free_ids[s->nfree_ids++] = module;
	return 0;
}
