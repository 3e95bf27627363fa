#include "agent/profile/profile_view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int profile_view_types(const struct profile *in, const int *types, uint32_t n,
		       struct profile_view *out)
{
	uint32_t i, j, k = 0;

	memset(out, 0, sizeof(*out));
	if (!n || n > PROF_MAX_VALUES)
		return -EINVAL;
	for (j = 0; j < n; j++)
		if (types[j] < 0 || (uint32_t)types[j] >= in->ntypes)
			return -EINVAL;
	out->p = *in;
	out->p.samples = NULL;
	out->p.nsamples = 0;
	out->p.ntypes = n;
	out->p.default_type = 0;
	for (j = 0; j < n; j++)
		out->p.types[j] = in->types[types[j]];
	if (!in->nsamples)
		return 0;
	out->samples = calloc(in->nsamples, sizeof(*out->samples));
	out->values = calloc((size_t)in->nsamples * n, sizeof(*out->values));
	if (!out->samples || !out->values) {
		profile_view_free(out);
		return -ENOMEM;
	}
	for (i = 0; i < in->nsamples; i++) {
		const struct prof_sample *s = &in->samples[i];
		int64_t *v = &out->values[(size_t)k * n];
		bool any = false;

		for (j = 0; j < n; j++) {
			v[j] = s->values[types[j]];
			any |= v[j] != 0;
		}
		if (!any)
			continue;
		out->samples[k] = *s;
		out->samples[k].values = v;
		k++;
	}
	out->p.samples = out->samples;
	out->p.nsamples = k;
	return 0;
}

void profile_view_free(struct profile_view *v)
{
	free(v->samples);
	free(v->values);
	memset(v, 0, sizeof(*v));
}
