#include "agent/daemon/netlibs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/util/errbuf.h"

struct fn {
	const char *name;
	size_t offset;    /* of its pointer in the table */
};

#define FN(type, field, name) { #name, offsetof(type, field) }

static const struct fn curl_fns[] = {
	FN(struct curl_lib, global_init, curl_global_init),
	FN(struct curl_lib, global_cleanup, curl_global_cleanup),
	FN(struct curl_lib, version_info, curl_version_info),
	FN(struct curl_lib, easy_init, curl_easy_init),
	FN(struct curl_lib, easy_reset, curl_easy_reset),
	FN(struct curl_lib, easy_setopt, curl_easy_setopt),
	FN(struct curl_lib, easy_perform, curl_easy_perform),
	FN(struct curl_lib, easy_getinfo, curl_easy_getinfo),
	FN(struct curl_lib, easy_strerror, curl_easy_strerror),
	FN(struct curl_lib, easy_escape, curl_easy_escape),
	FN(struct curl_lib, easy_cleanup, curl_easy_cleanup),
	FN(struct curl_lib, free, curl_free),
	FN(struct curl_lib, slist_append, curl_slist_append),
	FN(struct curl_lib, slist_free_all, curl_slist_free_all),
	FN(struct curl_lib, mime_init, curl_mime_init),
	FN(struct curl_lib, mime_addpart, curl_mime_addpart),
	FN(struct curl_lib, mime_name, curl_mime_name),
	FN(struct curl_lib, mime_filename, curl_mime_filename),
	FN(struct curl_lib, mime_type, curl_mime_type),
	FN(struct curl_lib, mime_data_cb, curl_mime_data_cb),
	FN(struct curl_lib, mime_free, curl_mime_free),
	FN(struct curl_lib, url, curl_url),
	FN(struct curl_lib, url_set, curl_url_set),
	FN(struct curl_lib, url_get, curl_url_get),
	FN(struct curl_lib, url_strerror, curl_url_strerror),
	FN(struct curl_lib, url_cleanup, curl_url_cleanup),
};

static const struct fn mhd_fns[] = {
	FN(struct mhd_lib, start_daemon, MHD_start_daemon),
	FN(struct mhd_lib, quiesce_daemon, MHD_quiesce_daemon),
	FN(struct mhd_lib, stop_daemon, MHD_stop_daemon),
	FN(struct mhd_lib, get_connection_info, MHD_get_connection_info),
	FN(struct mhd_lib, get_connection_values_n, MHD_get_connection_values_n),
	FN(struct mhd_lib, create_response_from_buffer, MHD_create_response_from_buffer),
	FN(struct mhd_lib, create_response_from_buffer_with_free_callback,
	   MHD_create_response_from_buffer_with_free_callback),
	FN(struct mhd_lib, add_response_header, MHD_add_response_header),
	FN(struct mhd_lib, queue_response, MHD_queue_response),
	FN(struct mhd_lib, destroy_response, MHD_destroy_response),
};

/* One library: bound at most once, its outcome kept. */
struct lib {
	pthread_once_t once;
	const char *soname;
	const char *purpose;   /* what needs it, for the error */
	const struct fn *fns;
	size_t nfns;
	void *table;
	bool ok;
	char why[256];
};

static struct curl_lib curl_table;
static struct mhd_lib mhd_table;

static struct lib curl_binding = {
	.once = PTHREAD_ONCE_INIT, .soname = CURL_SONAME, .purpose = "--pyroscope's pushes",
	.fns = curl_fns, .nfns = sizeof(curl_fns) / sizeof(curl_fns[0]), .table = &curl_table,
};
static struct lib mhd_binding = {
	.once = PTHREAD_ONCE_INIT, .soname = MHD_SONAME, .purpose = "the HTTP server",
	.fns = mhd_fns, .nfns = sizeof(mhd_fns) / sizeof(mhd_fns[0]), .table = &mhd_table,
};

static void bind_lib(struct lib *l)
{
	/* (never closed: the table points into it for the process's life) */
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		errbuf_set(l->why, sizeof(l->why), "loading %s (%s): %s", l->soname, l->purpose,
			   dlerror());
		return;
	}
	for (size_t i = 0; i < l->nfns; i++) {
		void *f = dlsym(h, l->fns[i].name);

		if (!f) {
			errbuf_set(l->why, sizeof(l->why), "%s: no function %s", l->soname,
				   l->fns[i].name);
			return;
		}
		/* (POSIX: a dlsym result converts to a function pointer) */
		memcpy((char *)l->table + l->fns[i].offset, &f, sizeof(f));
	}
	l->ok = true;
}

static void bind_curl(void)
{
	bind_lib(&curl_binding);
}

static void bind_mhd(void)
{
	bind_lib(&mhd_binding);
}

static const void *get(struct lib *l, void (*bind)(void), char *err, size_t errlen)
{
	pthread_once(&l->once, bind);
	if (!l->ok) {
		errbuf_set(err, errlen, "%s", l->why);
		return NULL;
	}
	return l->table;
}

const struct curl_lib *curl_lib_get(char *err, size_t errlen)
{
	return get(&curl_binding, bind_curl, err, errlen);
}

const struct mhd_lib *mhd_lib_get(char *err, size_t errlen)
{
	return get(&mhd_binding, bind_mhd, err, errlen);
}
