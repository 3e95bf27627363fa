/*
 * libcurl and libmicrohttpd, bound when the agent first needs them
 * (dlopen) rather than linked: together with what they link (TLS,
 * HTTP/2, Kerberos, LDAP: some thirty objects) they cost every run of
 * cfiprof 6.7 MiB of resident memory and the dynamic loader's time, and
 * only `cfiprof agent` uses them.  Each table holds the library's own
 * functions, typed from its header; bound once per process, never
 * unbound, so that what a table points at stays valid.
 */
#ifndef AGENT_DAEMON_NETLIBS_H
#define AGENT_DAEMON_NETLIBS_H

#include <stddef.h>
#include <curl/curl.h>
#include <microhttpd.h>

#define CURL_SONAME "libcurl.so.4"
#define MHD_SONAME "libmicrohttpd.so.12"

struct curl_lib {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_version_info) *version_info;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_free) *free;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_mime_init) *mime_init;
	__typeof__(curl_mime_addpart) *mime_addpart;
	__typeof__(curl_mime_name) *mime_name;
	__typeof__(curl_mime_filename) *mime_filename;
	__typeof__(curl_mime_type) *mime_type;
	__typeof__(curl_mime_data_cb) *mime_data_cb;
	__typeof__(curl_mime_free) *mime_free;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_strerror) *url_strerror;
	__typeof__(curl_url_cleanup) *url_cleanup;
};

struct mhd_lib {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_quiesce_daemon) *quiesce_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_get_connection_info) *get_connection_info;
	__typeof__(MHD_get_connection_values_n) *get_connection_values_n;
	__typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
	__typeof__(MHD_create_response_from_buffer_with_free_callback)
		*create_response_from_buffer_with_free_callback;
	__typeof__(MHD_add_response_header) *add_response_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
};

/* The library's table, or NULL with a one-line reason in err ("libcurl.so.4:
 * cannot open shared object file...", or the function it lacks). */
const struct curl_lib *curl_lib_get(char *err, size_t errlen);
const struct mhd_lib *mhd_lib_get(char *err, size_t errlen);

#endif
