/*
 * libFuzzer target: a pprof file, as `cfiprof convert` reads it.
 *
 * The bytes are anyone's (a profile from another machine or tool), so
 * beyond memory safety the harness checks what pprof_read promises: a
 * refusal has a one-line reason and leaves nothing behind; an accepted
 * profile has every index in range, so the writers take it as it is --
 * both run on it here, into /dev/null.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/convert/pprof_read.h"
#include "agent/output/flamegraph_svg.h"
#include "agent/output/folded.h"
#include "fuzz_common.h"

static void check_profile(const struct profile *p)
{
	CHECK(p->ntypes >= 1 && p->ntypes <= PROF_MAX_VALUES);
	CHECK(p->default_type < p->ntypes);
	for (uint32_t i = 0; i < p->ntypes; i++)
		CHECK(p->types[i].type && p->types[i].unit);
	for (uint32_t i = 0; i < p->nmappings; i++)
		CHECK(p->mappings[i].path && p->mappings[i].build_id);
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];

		CHECK(l->mapping <= p->nmappings);
		CHECK(l->nframes >= 1 && l->frames);
		for (uint32_t j = 0; j < l->nframes; j++)
			CHECK(l->frames[j].function);
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		for (uint32_t j = 0; j < s->nlocs; j++)
			CHECK(s->locs[j] < p->nlocations);
		for (uint32_t j = 0; j < s->nlabels; j++)
			CHECK(s->labels[j].key);
	}
}

static void write_outputs(const struct profile *p)
{
	struct svg_graph g[PROF_MAX_VALUES];
	uint32_t n = flamegraph_svg_graphs(p, g, PROF_MAX_VALUES);
	struct output_file of;
	char err[512];
	int ret;

	CHECK(n >= 1);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(!output_file_open(&of, "/dev/null", err, sizeof(err)));
		ret = flamegraph_svg_write_to(p, &g[i], NULL, &of, err, sizeof(err));
		/* a sum past 64 bits is the one refusal left */
		CHECK(!ret || ret == -EOVERFLOW);
		output_file_finish(&of, ret, err, sizeof(err));
	}
	CHECK(!output_file_open(&of, "/dev/null", err, sizeof(err)));
	ret = folded_write_sum_to(p, &g[0].value_type, 1, 1, &of, err, sizeof(err));
	CHECK(!ret || ret == -EOVERFLOW);
	output_file_finish(&of, ret, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pprof_read empty;
	struct pprof_read r;
	char err[512] = "";
	int ret;

	ret = pprof_read_buf(data, size, &r, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL || ret == -E2BIG || ret == -EFBIG || ret == -ENOMEM);
		CHECK(err[0] && !strchr(err, '\n'));
		CHECK(!memcmp(&r, &empty, sizeof(r)));
		return 0;
	}
	check_profile(&r.p);
	write_outputs(&r.p);
	pprof_read_free(&r);
	return 0;
}
