#include "elffile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static void section_view(struct cfi_elf *e, struct cfi_section *sec, const GElf_Shdr *sh,
			 const char *name, bool is_eh)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_size == 0)
		return;
	if (sh->sh_offset > e->size || sh->sh_size > e->size - sh->sh_offset)
		return; /* checked by the caller through size == 0 + truncated flag */
	sec->data = (const uint8_t *)e->map + sh->sh_offset;
	sec->size = sh->sh_size;
	sec->vaddr = is_eh || sh->sh_addr ? sh->sh_addr : 0;
	sec->is_eh = is_eh;
	sec->name = name;
}

/* SHF_COMPRESSED sections (gcc -gz, objcopy --compress-debug-sections, as
 * distributions ship debug files) start with an Elf64_Chdr.  Only zlib is
 * decompressed; a section in another format is left out with a note. */
static int inflate_section(struct cfi_elf *e, struct cfi_section *sec)
{
	Elf64_Chdr ch;
	z_stream zs;
	uint8_t *out;
	int zret;

	if (sec->size < sizeof(ch))
		return -EBADMSG;
	memcpy(&ch, sec->data, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB) {
		snprintf(e->note, sizeof(e->note), "%s: compression type %u not supported",
			 sec->name, ch.ch_type);
		return -ENOTSUP;
	}
	/* A compressed CFI section larger than 1 GiB is not a real one. */
	if (ch.ch_size == 0 || ch.ch_size > (1u << 30))
		return -EBADMSG;
	out = malloc(ch.ch_size);
	if (!out)
		return -ENOMEM;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK) {
		free(out);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)sec->data + sizeof(ch);
	zs.avail_in = (uInt)(sec->size - sizeof(ch) > UINT32_MAX ? UINT32_MAX : sec->size - sizeof(ch));
	zs.next_out = out;
	zs.avail_out = (uInt)ch.ch_size;
	zret = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (zret != Z_STREAM_END || zs.total_out != ch.ch_size) {
		free(out);
		return -EBADMSG;
	}
	e->inflated = out;
	sec->data = out;
	sec->size = ch.ch_size;
	return 0;
}

static void parse_notes(struct cfi_elf *e, const uint8_t *p, size_t size)
{
	/* Elf{32,64}_Nhdr are the same three 4-byte words. */
	while (size >= 12) {
		uint32_t namesz, descsz, type;
		size_t nlen, dlen;

		memcpy(&namesz, p, 4);
		memcpy(&descsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		nlen = ((size_t)namesz + 3) & ~(size_t)3;
		dlen = ((size_t)descsz + 3) & ~(size_t)3;
		if (nlen > size - 12 || dlen > size - 12 - nlen)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + 12, "GNU", 4) &&
		    descsz > 0 && descsz <= CFI_BUILD_ID_MAX) {
			memcpy(e->build_id, p + 12 + nlen, descsz);
			e->build_id_len = descsz;
			return;
		}
		p += 12 + nlen + dlen;
		size -= 12 + nlen + dlen;
	}
}

static int fail_elf(struct cfi_elf *e, struct cfi_error *err, int code, const char *why)
{
	int ret = cfi_fail(err, code, "%s: %s", e->name, why);

	cfi_elf_close(e);
	return ret;
}

int cfi_elf_open_fd(struct cfi_elf *e, int fd, const char *name, struct cfi_error *err)
{
	GElf_Ehdr eh;
	struct stat st;
	size_t shstrndx, phnum, i;
	Elf_Scn *scn = NULL;
	bool truncated = false;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	snprintf(e->name, sizeof(e->name), "%s", name);
	if (fstat(fd, &st))
		return fail_elf(e, err, -errno, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail_elf(e, err, -EISDIR, "is a directory");
	if (!S_ISREG(st.st_mode))
		return fail_elf(e, err, -EINVAL, "not a regular file");
	if (st.st_size < (off_t)sizeof(Elf32_Ehdr))
		return fail_elf(e, err, -ENOEXEC, st.st_size ? "too short to be an ELF file" : "empty file");
	e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (e->fd < 0)
		return fail_elf(e, err, -errno, strerror(errno));
	e->size = (size_t)st.st_size;
	/* Private and writable so libelf may never fault on the mapping; we
	 * never write, so no page is ever copied. */
	e->map = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, e->fd, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		return fail_elf(e, err, -errno, strerror(errno));
	}
	if (memcmp(e->map, ELFMAG, SELFMAG))
		return fail_elf(e, err, -ENOEXEC, "not an ELF file");

	elf_version(EV_CURRENT);
	e->elf = elf_memory(e->map, e->size);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh))
		return fail_elf(e, err, -ENOEXEC, "unreadable ELF header");
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return fail_elf(e, err, -ENOTSUP, "big-endian ELF is not supported");
	if (eh.e_machine != EM_X86_64)
		return fail_elf(e, err, -ENOTSUP, "not an x86-64 object");
	e->is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	if (!e->is64)
		return fail_elf(e, err, -ENOTSUP, "32-bit ELF is not supported");
	e->type = eh.e_type;
	if (e->type != ET_EXEC && e->type != ET_DYN)
		return fail_elf(e, err, -ENOTSUP,
				e->type == ET_REL ? "relocatable object: no load addresses"
						  : "neither an executable nor a shared object");

	if (elf_getphdrnum(e->elf, &phnum))
		return fail_elf(e, err, -ENOEXEC, "unreadable program headers");
	if (eh.e_phoff > e->size || (uint64_t)phnum * eh.e_phentsize > e->size - eh.e_phoff)
		return fail_elf(e, err, -ENOEXEC, "truncated: program headers past the end of the file");
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, (int)i, &ph))
			return fail_elf(e, err, -ENOEXEC, "unreadable program header");
		if (ph.p_type == PT_LOAD) {
			if (e->nload < sizeof(e->load) / sizeof(e->load[0])) {
				e->load[e->nload].start = ph.p_vaddr;
				e->load[e->nload].end = ph.p_vaddr + ph.p_memsz;
				e->load[e->nload].offset = ph.p_offset;
				e->load[e->nload].filesz = ph.p_filesz;
				e->nload++;
			}
			if ((ph.p_flags & PF_X) && e->nexec < CFI_MAX_EXEC_SEGMENTS) {
				e->exec[e->nexec].start = ph.p_vaddr;
				e->exec[e->nexec].end = ph.p_vaddr + ph.p_memsz;
				e->nexec++;
			}
		} else if (ph.p_type == PT_NOTE && !e->build_id_len &&
			   ph.p_offset <= e->size && ph.p_filesz <= e->size - ph.p_offset) {
			parse_notes(e, (const uint8_t *)e->map + ph.p_offset, ph.p_filesz);
		} else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_offset <= e->size &&
			   ph.p_filesz <= e->size - ph.p_offset) {
			e->eh_frame_hdr.data = (const uint8_t *)e->map + ph.p_offset;
			e->eh_frame_hdr.size = ph.p_filesz;
			e->eh_frame_hdr.vaddr = ph.p_vaddr;
			e->eh_frame_hdr.is_eh = true;
			e->eh_frame_hdr.name = ".eh_frame_hdr";
		}
	}

	if (eh.e_shoff && elf_getshdrstrndx(e->elf, &shstrndx) == 0) {
		size_t shnum = 0;

		/* libelf clamps the count to the headers that fit in the file:
		 * check the count the header claims (0 means it is in the first
		 * section header, which libelf then read). */
		if (eh.e_shnum)
			shnum = eh.e_shnum;
		else if (elf_getshdrnum(e->elf, &shnum))
			shnum = SIZE_MAX;
		if (eh.e_shoff > e->size || shnum > (e->size - eh.e_shoff) / (eh.e_shentsize ? eh.e_shentsize : 1))
			return fail_elf(e, err, -ENOEXEC, "truncated: section headers past the end of the file");
		while ((scn = elf_nextscn(e->elf, scn))) {
			GElf_Shdr sh;
			const char *sname;

			if (!gelf_getshdr(scn, &sh))
				return fail_elf(e, err, -ENOEXEC, "unreadable section header");
			sname = elf_strptr(e->elf, shstrndx, sh.sh_name);
			if (!sname)
				continue;
			if (sh.sh_type != SHT_NOBITS && sh.sh_size &&
			    (sh.sh_offset > e->size || sh.sh_size > e->size - sh.sh_offset)) {
				if (!strcmp(sname, ".eh_frame") || !strcmp(sname, ".debug_frame") ||
				    !strcmp(sname, ".eh_frame_hdr"))
					truncated = true;
				continue;
			}
			if (!strcmp(sname, ".eh_frame"))
				section_view(e, &e->eh_frame, &sh, ".eh_frame", true);
			else if (!strcmp(sname, ".eh_frame_hdr"))
				section_view(e, &e->eh_frame_hdr, &sh, ".eh_frame_hdr", true);
			else if (!strcmp(sname, ".debug_frame")) {
				section_view(e, &e->debug_frame, &sh, ".debug_frame", false);
				if (e->debug_frame.size && (sh.sh_flags & SHF_COMPRESSED)) {
					int zr = inflate_section(e, &e->debug_frame);

					if (zr == -ENOTSUP) {
						e->debug_frame.size = 0;
					} else if (zr) {
						return fail_elf(e, err, zr == -ENOMEM ? -ENOMEM : -EBADMSG,
								"corrupt compressed .debug_frame");
					}
				}
			}
			else if (!strcmp(sname, ".text") && sh.sh_type != SHT_NOBITS) {
				e->text_addr = sh.sh_addr;
				e->has_text = true;
			} else if (!strcmp(sname, ".got")) {
				e->got_addr = sh.sh_addr;
				e->has_got = true;
			} else if (!strcmp(sname, ".gnu_debuglink") && sh.sh_type != SHT_NOBITS &&
				   sh.sh_size > 4) {
				const char *d = (const char *)e->map + sh.sh_offset;
				size_t n = strnlen(d, sh.sh_size);

				if (n > 0 && n < sizeof(e->debuglink) && n + 4 <= sh.sh_size) {
					size_t crc_off = (n + 4) & ~(size_t)3;

					memcpy(e->debuglink, d, n);
					e->debuglink[n] = 0;
					if (crc_off + 4 <= sh.sh_size)
						memcpy(&e->debuglink_crc, d + crc_off, 4);
				}
			} else if (sh.sh_type == SHT_NOTE && !e->build_id_len) {
				parse_notes(e, (const uint8_t *)e->map + sh.sh_offset, sh.sh_size);
			}
		}
	}
	if (truncated)
		return fail_elf(e, err, -ENOEXEC, "truncated: a CFI section runs past the end of the file");

	/* Without section headers, .eh_frame is found through .eh_frame_hdr. */
	if (!e->eh_frame.size && e->eh_frame_hdr.size >= 4) {
		struct cfi_reader r;
		struct cfi_ptr_ctx ctx;
		uint8_t version, enc;
		uint64_t ptr;

		cfi_elf_ptr_ctx(e, &ctx);
		ctx.data_base = e->eh_frame_hdr.vaddr;
		ctx.has_data_base = true;
		cfi_reader_init(&r, e->eh_frame_hdr.data, e->eh_frame_hdr.size, e->eh_frame_hdr.vaddr);
		version = cfi_read_u8(&r);
		enc = cfi_read_u8(&r);
		cfi_skip(&r, 2);
		if (version == 1 && !cfi_read_encoded(&r, enc, &ctx, &ptr)) {
			for (i = 0; i < e->nload; i++) {
				if (ptr >= e->load[i].start && ptr < e->load[i].start + e->load[i].filesz) {
					uint64_t off = e->load[i].offset + (ptr - e->load[i].start);
					uint64_t lim = e->load[i].offset + e->load[i].filesz;

					if (lim > e->size)
						lim = e->size;
					if (off < lim) {
						/* The section ends at its zero terminator. */
						e->eh_frame.data = (const uint8_t *)e->map + off;
						e->eh_frame.size = lim - off;
						e->eh_frame.vaddr = ptr;
						e->eh_frame.is_eh = true;
						e->eh_frame.name = ".eh_frame";
					}
					break;
				}
			}
		}
	}
	return 0;
}

int cfi_elf_open_path(struct cfi_elf *e, const char *path, struct cfi_error *err)
{
	/* O_NONBLOCK: a FIFO opens at once, to be refused as no regular file
	 * (cfi_elf_open_fd), instead of waiting forever for a writer.  On a
	 * regular file it changes nothing: no need to clear it. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		memset(e, 0, sizeof(*e));
		e->fd = -1;
		return cfi_fail(err, -errno, "%s: %s", path, strerror(errno));
	}
	ret = cfi_elf_open_fd(e, fd, path, err);
	close(fd);
	return ret;
}

void cfi_elf_close(struct cfi_elf *e)
{
	free(e->inflated);
	e->inflated = NULL;
	if (e->elf)
		elf_end(e->elf);
	if (e->map)
		munmap(e->map, e->size);
	if (e->fd >= 0)
		close(e->fd);
	e->elf = NULL;
	e->map = NULL;
	e->fd = -1;
}

static int read_mem(void *ctx, uint64_t vaddr, uint64_t *out)
{
	const struct cfi_elf *e = ctx;
	size_t i;

	for (i = 0; i < e->nload; i++) {
		if (vaddr >= e->load[i].start && vaddr - e->load[i].start + 8 <= e->load[i].filesz) {
			uint64_t off = e->load[i].offset + (vaddr - e->load[i].start);

			if (off > e->size || e->size - off < 8)
				return -EFAULT;
			memcpy(out, (const uint8_t *)e->map + off, 8);
			return 0;
		}
	}
	return -EFAULT;
}

void cfi_elf_ptr_ctx(const struct cfi_elf *e, struct cfi_ptr_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->addr_size = e->is64 ? 8 : 4;
	ctx->text_base = e->text_addr;
	ctx->has_text_base = e->has_text;
	ctx->data_base = e->got_addr;
	ctx->has_data_base = e->has_got;
	ctx->read_mem = read_mem;
	ctx->mem_ctx = (void *)e;
}

bool cfi_elf_in_exec(const struct cfi_elf *e, uint64_t addr)
{
	size_t i;

	for (i = 0; i < e->nexec; i++)
		if (addr >= e->exec[i].start && addr < e->exec[i].end)
			return true;
	return false;
}

size_t cfi_elf_load_segments(const struct cfi_elf *e, struct cfi_load_segment *out, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < e->nload && n < max; i++, n++)
		out[n] = (struct cfi_load_segment){
			.vaddr = e->load[i].start, .offset = e->load[i].offset,
			.filesz = e->load[i].filesz, .exec = cfi_elf_in_exec(e, e->load[i].start),
		};
	return n;
}

bool cfi_load_bias(const struct cfi_load_segment *seg, size_t n, uint64_t start, uint64_t offset,
		   uint64_t *bias)
{
	size_t i, best = n;

	for (i = 0; i < n; i++) {
		uint64_t lo = seg[i].offset & ~(uint64_t)4095;

		if (offset >= lo && offset < seg[i].offset + seg[i].filesz &&
		    (best == n || (seg[i].exec && !seg[best].exec)))
			best = i;
	}
	if (best == n)
		return false;
	*bias = start - (seg[best].vaddr + offset - seg[best].offset);
	return true;
}

void cfi_elf_build_id_hex(const struct cfi_elf *e, char *buf, size_t size)
{
	size_t i;

	if (!size)
		return;
	buf[0] = 0;
	for (i = 0; i < e->build_id_len && 2 * i + 2 < size; i++)
		snprintf(buf + 2 * i, 3, "%02x", e->build_id[i]);
}

static int try_debug(const struct cfi_elf *e, const char *path, bool need_crc, struct cfi_elf *dbg)
{
	struct cfi_error err = { { 0 } };

	if (access(path, R_OK))
		return -ENOENT;
	if (cfi_elf_open_path(dbg, path, &err))
		return -ENOENT;
	/* A debug file must belong to this very build. */
	if (e->build_id_len) {
		if (dbg->build_id_len != e->build_id_len ||
		    memcmp(dbg->build_id, e->build_id, e->build_id_len))
			goto mismatch;
	} else if (need_crc) {
		uLong crc = crc32(0L, Z_NULL, 0);
		size_t off = 0;

		while (off < dbg->size) {
			size_t n = dbg->size - off > (1u << 30) ? (1u << 30) : dbg->size - off;

			crc = crc32(crc, (const Bytef *)dbg->map + off, (uInt)n);
			off += n;
		}
		if ((uint32_t)crc != e->debuglink_crc)
			goto mismatch;
	}
	return 0;
mismatch:
	cfi_elf_close(dbg);
	return -ENOENT;
}

int cfi_elf_find_debug(const struct cfi_elf *e, const char *path, const char *debug_dir,
		       struct cfi_elf *dbg)
{
	char buf[4096], dir[2048];
	const char *slash;
	size_t i;

	if (!debug_dir)
		debug_dir = "/usr/lib/debug";
	if (e->build_id_len >= 2 && *debug_dir) {
		char hex[2 * CFI_BUILD_ID_MAX + 1];

		cfi_elf_build_id_hex(e, hex, sizeof(hex));
		snprintf(buf, sizeof(buf), "%s/.build-id/%.2s/%s.debug", debug_dir, hex, hex + 2);
		if (!try_debug(e, buf, false, dbg))
			return 0;
	}
	if (!e->debuglink[0] || !path)
		return -ENOENT;
	slash = strrchr(path, '/');
	i = slash ? (size_t)(slash - path) : 0;
	if (i >= sizeof(dir))
		return -ENOENT;
	memcpy(dir, path, i);
	dir[i] = 0;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	{
		const char *fmts[] = { "%s/%s", "%s/.debug/%s" };

		for (i = 0; i < 2; i++) {
			snprintf(buf, sizeof(buf), fmts[i], dir, e->debuglink);
			if (strcmp(buf, path) && !try_debug(e, buf, true, dbg))
				return 0;
		}
	}
	if (*debug_dir) {
		snprintf(buf, sizeof(buf), "%s%s%s/%s", debug_dir, dir[0] == '/' ? "" : "/", dir,
			 e->debuglink);
		if (!try_debug(e, buf, true, dbg))
			return 0;
	}
	return -ENOENT;
}
