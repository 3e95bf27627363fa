/*
 * The service_name label (agent/profile/service_name.c): which of a
 * container's name, its id, the systemd unit of the cgroup path and the
 * comm names a process, on real and hostile cgroup paths; and the labels
 * profile_build gives samples with the agent's options and without them
 * (`record`'s: unchanged).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "agent/profile/profile_build.h"
#include "agent/profile/service_name.h"
#include "agent/profile/stacks.h"
#include "tests/output/testutil.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void teardown(void)
{
	tu_leak_check();
}

TestSuite(service_name, .fini = teardown);

/* service_name() as a NUL-terminated string in a static buffer */
static const char *name_of(const char *cname, const char *cid, const char *cgroup,
			   const char *comm)
{
	static char buf[8192];
	size_t len = 12345;
	const char *s = service_name(cname, cid, cgroup, comm, &len);

	cr_assert(s);
	cr_assert_lt(len, sizeof(buf));
	memcpy(buf, s, len);
	buf[len] = '\0';
	return buf;
}

static const char *unit_of(const char *cgroup)
{
	static char buf[8192];
	size_t len = 12345;
	const char *s = service_name_unit(cgroup, &len);

	if (!s)
		return NULL;
	cr_assert_lt(len, sizeof(buf));
	memcpy(buf, s, len);
	buf[len] = '\0';
	return buf;
}

Test(service_name, precedence)
{
	const char *cg = "/system.slice/docker-" ID64 ".scope";

	cr_expect_str_eq(name_of("web", ID64, cg, "nginx"), "web");
	cr_expect_str_eq(name_of(NULL, ID64, cg, "nginx"), ID64);
	cr_expect_str_eq(name_of("", ID64, cg, "nginx"), ID64);
	cr_expect_str_eq(name_of(NULL, NULL, "/system.slice/nginx.service", "nginx"),
			 "nginx.service");
	cr_expect_str_eq(name_of(NULL, "", "/system.slice/nginx.service", "nginx"),
			 "nginx.service");
	cr_expect_str_eq(name_of(NULL, NULL, "/", "bash"), "bash");
	cr_expect_str_eq(name_of(NULL, NULL, NULL, "bash"), "bash");
	cr_expect_str_eq(name_of(NULL, NULL, NULL, ""), "unknown");
	cr_expect_str_eq(name_of(NULL, NULL, NULL, NULL), "unknown");
}

Test(service_name, systemd_units)
{
	cr_expect_str_eq(unit_of("/system.slice/nginx.service"), "nginx.service");
	cr_expect_str_eq(unit_of("/user.slice/user-0.slice/session-3.scope"), "session-3.scope");
	cr_expect_str_eq(unit_of("/user.slice/user-1000.slice/user@1000.service"),
			 "user@1000.service");
	/* the innermost unit: a user's service in their manager's tree */
	cr_expect_str_eq(unit_of("/user.slice/user-1000.slice/user@1000.service/app.slice/"
				 "dbus.service"), "dbus.service");
	/* a unit's own sub-cgroups (delegation) are still the unit */
	cr_expect_str_eq(unit_of("/system.slice/containerd.service/worker"), "containerd.service");
	cr_expect_str_eq(unit_of("/system.slice/getty@tty1.service"), "getty@tty1.service");
	cr_expect_str_eq(unit_of("/system.slice/systemd-fsck@dev-disk-by\\x2duuid-1.service"),
			 "systemd-fsck@dev-disk-by\\x2duuid-1.service");
	/* slices, the root and plain directories are no units */
	cr_expect_null(unit_of("/system.slice"));
	cr_expect_null(unit_of("/"));
	cr_expect_null(unit_of(""));
	cr_expect_null(unit_of(NULL));
	cr_expect_null(unit_of("/kubepods/besteffort/pod1234"));
	/* a suffix alone, or one in the middle, names nothing */
	cr_expect_null(unit_of("/.service"));
	cr_expect_null(unit_of("/a.service.d"));
	cr_expect_null(unit_of("/x.scopes"));
}

Test(service_name, hostile_cgroup_paths)
{
	static char long_path[6000], long_unit[400];
	size_t n = 0;

	/* no slash at all, a trailing slash, slashes only */
	cr_expect_str_eq(unit_of("nginx.service"), "nginx.service");
	cr_expect_str_eq(unit_of("/system.slice/nginx.service/"), "nginx.service");
	cr_expect_str_eq(unit_of("/system.slice/nginx.service//"), "nginx.service");
	cr_expect_null(unit_of("////"));
	cr_expect_null(unit_of("/"));
	/* names systemd would not give a unit: not taken for one */
	cr_expect_null(unit_of("/system.slice/a b.service"));
	cr_expect_null(unit_of("/system.slice/evil\n.service"));
	cr_expect_null(unit_of("/system.slice/\"q\".scope"));
	cr_expect_str_eq(unit_of("/system.slice/real.service/a b.service"), "real.service");
	/* very long: thousands of components, the unit at the top */
	n += (size_t)snprintf(long_path, sizeof(long_path), "/system.slice/deep.service");
	while (n + 3 < sizeof(long_path)) {
		long_path[n++] = '/';
		long_path[n++] = 'd';
	}
	long_path[n] = '\0';
	cr_expect_str_eq(unit_of(long_path), "deep.service");
	cr_expect_str_eq(name_of(NULL, NULL, long_path, "sh"), "deep.service");
	/* longer than systemd's UNIT_NAME_MAX: no unit */
	memset(long_unit, 'a', sizeof(long_unit) - 1);
	long_unit[0] = '/';
	strcpy(long_unit + sizeof(long_unit) - 1 - strlen(".service"), ".service");
	cr_expect_null(unit_of(long_unit));
	cr_expect_str_eq(name_of(NULL, NULL, long_unit, "sh"), "sh");
	/* the longest name systemd allows is one */
	strcpy(long_unit + 1 + 255 - strlen(".service"), ".service");
	cr_expect_eq(strlen(unit_of(long_unit)), 255);
}

/* ---- the labels profile_build adds ------------------------------------ */

static const struct prof_label *label(const struct prof_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return &s->labels[i];
	return NULL;
}

/* a stack each for: a container, a systemd service, a process in "/" */
static void three_stacks(struct stack_agg *a)
{
	struct frame_ref f = { 0x1000, FRAME_KERNEL };

	memset(a, 0, sizeof(*a));
	cr_assert_eq(stack_agg_set_labels(a, ID64, "/system.slice/docker-" ID64 ".scope"), 0);
	cr_assert_eq(stack_agg_add(a, 10, 10, "inbox", 0, &f, 1, 1), 0);
	cr_assert_eq(stack_agg_set_labels(a, NULL, "/system.slice/nginx.service"), 0);
	cr_assert_eq(stack_agg_add(a, 20, 21, "nginx-worker", 0, &f, 1, 1), 0);
	cr_assert_eq(stack_agg_set_labels(a, NULL, "/"), 0);
	cr_assert_eq(stack_agg_add(a, 30, 30, "loose", 0, &f, 1, 1), 0);
}

Test(service_name, profile_build_labels)
{
	struct profile_opts o = { .period_ns = 1000, .service_name = true, .hostname = "node-7" };
	struct stack_agg a;
	struct built_profile b;
	int seen = 0;

	three_stacks(&a);
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_assert_eq(b.p.nsamples, 3);
	for (uint32_t i = 0; i < b.p.nsamples; i++) {
		const struct prof_sample *s = &b.p.samples[i];
		const struct prof_label *pid = label(s, "pid"), *svc = label(s, "service_name");
		const struct prof_label *host = label(s, "hostname");

		cr_assert(pid && svc && host);
		cr_expect_str_eq(host->str, "node-7");
		switch (pid->num) {
		case 10:
			cr_expect_str_eq(svc->str, ID64);
			break;
		case 20:
			cr_expect_str_eq(svc->str, "nginx.service");
			break;
		case 30:
			cr_expect_str_eq(svc->str, "loose");
			break;
		default:
			cr_assert_fail("pid %lld", (long long)pid->num);
		}
		seen |= 1 << (pid->num / 10);
	}
	cr_expect_eq(seen, 0xe);
	profile_built_free(&b);
	stack_agg_free(&a);
}

/* The process's service and its container's name, as the agent sets them
 * (stack_agg_set_service): a worker thread's sample has its process's
 * service_name, not its comm; container_name is a label; both are part of
 * a stack's identity and survive sealing (an exited process's stacks). */
Test(service_name, process_service_and_container_name)
{
	struct profile_opts o = { .period_ns = 1000, .service_name = true };
	struct frame_ref f = { 0x1000, FRAME_KERNEL };
	uint32_t pid = 40, nservice = 0, nworker = 0, nweb = 0;
	struct stack_agg a = { 0 };
	struct built_profile b;

	cr_assert_eq(stack_agg_set_service(&a, "rec-threads", NULL), 0);
	cr_assert_eq(stack_agg_add(&a, 40, 40, "rec-threads", 0, &f, 1, 1), 0);
	cr_assert_eq(stack_agg_add(&a, 40, 41, "rec-worker", 0, &f, 1, 1), 0);
	/* the same sample, another service (the process exec'd): a stack of its own */
	cr_assert_eq(stack_agg_set_service(&a, "other", NULL), 0);
	cr_assert_eq(stack_agg_add(&a, 40, 41, "rec-worker", 0, &f, 1, 1), 0);
	cr_assert_eq(stack_agg_count(&a), 3);
	cr_assert_eq(stack_agg_set_labels(&a, ID64, "/libpod_parent/libpod-" ID64), 0);
	cr_assert_eq(stack_agg_set_service(&a, "web", "web"), 0);
	cr_assert_eq(stack_agg_add(&a, 50, 50, "nginx", 0, &f, 1, 1), 0);
	/* sealed: decoded from the store */
	cr_assert_eq(stack_agg_seal(&a, &pid, 1), 0);
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_assert_eq(b.p.nsamples, 4);
	for (uint32_t i = 0; i < b.p.nsamples; i++) {
		const struct prof_sample *s = &b.p.samples[i];
		const struct prof_label *svc = label(s, "service_name"), *comm = label(s, "comm");
		const struct prof_label *cname = label(s, "container_name");

		cr_assert(svc && comm);
		if (!strcmp(svc->str, "rec-threads")) {
			nservice++;
			nworker += !strcmp(comm->str, "rec-worker");
			cr_expect_null(cname);
		} else if (!strcmp(svc->str, "web")) {
			nweb++;
			cr_assert(cname);
			cr_expect_str_eq(cname->str, "web");
			cr_expect_str_eq(label(s, "container_id")->str, ID64);
		} else {
			cr_expect_str_eq(svc->str, "other");
		}
	}
	cr_expect_eq(nservice, 2);
	cr_expect_eq(nworker, 1);
	cr_expect_eq(nweb, 1);
	profile_built_free(&b);
	stack_agg_free(&a);
}

/* `record`'s options: neither label */
Test(service_name, record_profile_unchanged)
{
	struct profile_opts o = { .period_ns = 1000 };
	struct stack_agg a;
	struct built_profile b;

	three_stacks(&a);
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	for (uint32_t i = 0; i < b.p.nsamples; i++) {
		cr_expect_null(label(&b.p.samples[i], "service_name"));
		cr_expect_null(label(&b.p.samples[i], "hostname"));
	}
	profile_built_free(&b);
	stack_agg_free(&a);
}

static int count_labels(const struct prof_sample *s, const char *key)
{
	int n = 0;

	for (uint32_t j = 0; j < s->nlabels; j++)
		n += !strcmp(s->labels[j].key, key);
	return n;
}

/* cfiprof agent --tag service_name=... (or hostname=...): the tag, once */
Test(service_name, tag_takes_the_place_of_a_label)
{
	const char *keys[] = { "service_name", "team" }, *vals[] = { "checkout", "payments" };
	struct profile_opts o = { .period_ns = 1000, .service_name = true, .hostname = "node-7",
				  .tag_keys = keys, .tag_vals = vals, .ntags = 2 };
	struct stack_agg a;
	struct built_profile b;

	three_stacks(&a);
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	for (uint32_t i = 0; i < b.p.nsamples; i++) {
		const struct prof_sample *s = &b.p.samples[i];

		cr_expect_eq(count_labels(s, "service_name"), 1);
		cr_expect_str_eq(label(s, "service_name")->str, "checkout");
		cr_expect_str_eq(label(s, "hostname")->str, "node-7");
	}
	profile_built_free(&b);
	keys[0] = "hostname";
	vals[0] = "alias";
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	for (uint32_t i = 0; i < b.p.nsamples; i++) {
		const struct prof_sample *s = &b.p.samples[i];

		cr_expect_eq(count_labels(s, "hostname"), 1);
		cr_expect_str_eq(label(s, "hostname")->str, "alias");
		cr_expect_neq(label(s, "service_name")->str, NULL);
	}
	profile_built_free(&b);
	stack_agg_free(&a);
}
