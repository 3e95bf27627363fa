#include "agent/container/container_meta.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

/* Deep enough for every format here (runc's state is the deepest, about
 * 8), shallow enough that a hostile file cannot make json-c recurse far. */
#define JSON_MAX_DEPTH 32

/* The document in buf[0..len), or NULL when it is not one JSON value
 * (trailing garbage included: a truncated or corrupt file is no file). */
static struct json_object *parse(const char *buf, size_t len)
{
	struct json_tokener *tok;
	struct json_object *obj;
	size_t end;

	if (len > (size_t)INT32_MAX || !(tok = json_tokener_new_ex(JSON_MAX_DEPTH)))
		return NULL;
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(obj);
		obj = NULL;
	}
	for (; obj && end < len; end++)
		if (!memchr(" \t\r\n", buf[end], 4)) {
			json_object_put(obj);
			obj = NULL;
		}
	json_tokener_free(tok);
	return obj;
}

/* Whether s[0..n) is a name of the runtimes' alphabet: a value that
 * becomes a label and Pyroscope's series name `SERVICE.cpu{...}` must not
 * carry braces, quotes or control characters from a file. */
static bool valid_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > CONTAINER_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

static int set_plain(struct container_meta *m, const char *name, size_t n)
{
	if (!valid_name(name, n))
		return -ENOENT;
	memcpy(m->name, name, n);
	m->name[n] = 0;
	memcpy(m->service, name, n);
	m->service[n] = 0;
	return 0;
}

static const char *string_member(struct json_object *obj, const char *key, size_t *len)
{
	struct json_object *v;

	if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* The Kubernetes annotations CRI runtimes put on a container's OCI
 * config: containerd's io.kubernetes.cri.*, CRI-O's io.kubernetes.*. */
enum k8s_field { K8S_NAMESPACE, K8S_POD, K8S_CONTAINER, K8S_FIELDS };

static const char *const k8s_keys[][K8S_FIELDS] = {
	{ "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
	  "io.kubernetes.cri.container-name" },
	{ "io.kubernetes.pod.namespace", "io.kubernetes.pod.name", "io.kubernetes.container.name" },
};

struct k8s_names {
	const char *v[K8S_FIELDS];
	size_t len[K8S_FIELDS];
};

static void k8s_note(struct k8s_names *k, const char *key, size_t klen, const char *val, size_t vlen)
{
	size_t i, f;

	for (i = 0; i < sizeof(k8s_keys) / sizeof(k8s_keys[0]); i++)
		for (f = 0; f < K8S_FIELDS; f++)
			if (strlen(k8s_keys[i][f]) == klen && !memcmp(k8s_keys[i][f], key, klen) &&
			    !k->v[f]) {
				k->v[f] = val;
				k->len[f] = vlen;
			}
}

/* NAMESPACE/CONTAINER, or for a pod's sandbox (which has no container
 * name) NAMESPACE/POD; the name is the container's (the pod's). */
static int set_k8s(struct container_meta *m, const struct k8s_names *k)
{
	int f = k->v[K8S_CONTAINER] ? K8S_CONTAINER : K8S_POD;

	if (!k->v[f] || !valid_name(k->v[f], k->len[f]))
		return -ENOENT;
	memcpy(m->name, k->v[f], k->len[f]);
	m->name[k->len[f]] = 0;
	if (k->v[K8S_NAMESPACE] && valid_name(k->v[K8S_NAMESPACE], k->len[K8S_NAMESPACE]))
		snprintf(m->service, sizeof(m->service), "%.*s/%s", (int)k->len[K8S_NAMESPACE],
			 k->v[K8S_NAMESPACE], m->name);
	else
		memcpy(m->service, m->name, k->len[f] + 1);
	return 0;
}

/* `m` cleared, and the document if it is JSON of `type` (else NULL). */
static struct json_object *begin(const char *buf, size_t len, struct container_meta *m,
				 enum json_type type)
{
	struct json_object *doc;

	memset(m, 0, sizeof(*m));
	doc = parse(buf, len);
	if (doc && !json_object_is_type(doc, type)) {
		json_object_put(doc);
		doc = NULL;
	}
	return doc;
}

int container_meta_from_docker(const char *buf, size_t len, struct container_meta *m)
{
	struct json_object *doc = begin(buf, len, m, json_type_object);
	const char *name;
	size_t n = 0;
	int ret = -EINVAL;

	if (!doc)
		goto out;
	ret = -ENOENT;
	name = string_member(doc, "Name", &n);
	if (name && n > 0 && name[0] == '/') {
		name++;
		n--;
	}
	if (name)
		ret = set_plain(m, name, n);
out:
	json_object_put(doc);
	return ret;
}

int container_meta_from_oci(const char *buf, size_t len, struct container_meta *m)
{
	struct json_object *doc = begin(buf, len, m, json_type_object), *ann;
	struct k8s_names k = { 0 };
	int ret = -EINVAL;

	if (!doc)
		goto out;
	ret = -ENOENT;
	if (!json_object_object_get_ex(doc, "annotations", &ann) ||
	    !json_object_is_type(ann, json_type_object))
		goto out;
	json_object_object_foreach(ann, key, val)
		if (json_object_is_type(val, json_type_string))
			k8s_note(&k, key, strlen(key), json_object_get_string(val),
				 (size_t)json_object_get_string_len(val));
	ret = set_k8s(m, &k);
out:
	json_object_put(doc);
	return ret;
}

int container_meta_from_runc_state(const char *buf, size_t len, struct container_meta *m,
				   char *bundle, size_t size)
{
	struct json_object *doc = begin(buf, len, m, json_type_object), *config, *labels;
	struct k8s_names k = { 0 };
	int ret = -EINVAL;
	size_t i, n;

	if (size)
		bundle[0] = 0;
	if (!doc || !json_object_object_get_ex(doc, "config", &config) ||
	    !json_object_object_get_ex(config, "labels", &labels) ||
	    !json_object_is_type(labels, json_type_array))
		goto out;
	n = json_object_array_length(labels);
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(labels, i);
		const char *s, *eq;
		size_t slen;

		if (!json_object_is_type(l, json_type_string))
			continue;
		s = json_object_get_string(l);
		slen = (size_t)json_object_get_string_len(l);
		eq = memchr(s, '=', slen);
		if (!eq)
			continue;
		if (eq - s == 6 && !memcmp(s, "bundle", 6)) {
			size_t blen = slen - 7;

			/* a NUL inside would cut the path short: refused */
			if (blen < size && blen && !memchr(eq + 1, 0, blen)) {
				memcpy(bundle, eq + 1, blen);
				bundle[blen] = 0;
			}
			continue;
		}
		k8s_note(&k, s, (size_t)(eq - s), eq + 1, slen - (size_t)(eq - s) - 1);
	}
	ret = set_k8s(m, &k);
out:
	json_object_put(doc);
	return ret;
}

int container_meta_bundle_of_crun(const char *buf, size_t len, char *bundle, size_t size)
{
	struct container_meta m;
	struct json_object *doc = begin(buf, len, &m, json_type_object);
	const char *b;
	size_t n = 0;
	int ret = -EINVAL;

	if (size)
		bundle[0] = 0;
	if (!doc)
		goto out;
	ret = -ENOENT;
	b = string_member(doc, "bundle", &n);
	if (b && n && n < size && !memchr(b, 0, n)) {
		memcpy(bundle, b, n);
		bundle[n] = 0;
		ret = 0;
	}
out:
	json_object_put(doc);
	return ret;
}

int container_meta_from_storage(const char *buf, size_t len, const char *id,
				struct container_meta *m)
{
	struct json_object *doc = begin(buf, len, m, json_type_array);
	int ret = -EINVAL;
	size_t i, n;

	if (!doc)
		goto out;
	ret = -ENOENT;
	n = json_object_array_length(doc);
	for (i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(doc, i), *names, *first;
		const char *cid;
		size_t clen = 0;

		cid = string_member(c, "id", &clen);
		if (!cid || clen != strlen(id) || memcmp(cid, id, clen))
			continue;
		if (json_object_object_get_ex(c, "names", &names) &&
		    json_object_is_type(names, json_type_array) &&
		    json_object_array_length(names) > 0 &&
		    (first = json_object_array_get_idx(names, 0)) &&
		    json_object_is_type(first, json_type_string))
			ret = set_plain(m, json_object_get_string(first),
					(size_t)json_object_get_string_len(first));
		break;
	}
out:
	json_object_put(doc);
	return ret;
}
