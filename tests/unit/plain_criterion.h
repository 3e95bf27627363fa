/*
 * The few criterion macros a threaded unit test uses (Test, cr_assert,
 * cr_assert_eq, cr_assert_str_eq), so that the same file also builds as a
 * plain program for ThreadSanitizer, which criterion cannot run under
 * (its arena probes addresses TSan's shadow memory holds).
 *
 * Without PLAIN_CRITERION this is criterion itself.  With it, Test()
 * registers each test and main() runs them in order in one process: a
 * failed assertion prints "FILE:LINE: EXPR: MESSAGE" and exits 1.
 */
#ifndef TESTS_UNIT_PLAIN_CRITERION_H
#define TESTS_UNIT_PLAIN_CRITERION_H

#ifndef PLAIN_CRITERION
#include <criterion/criterion.h>
#else
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct plain_test {
	const char *suite, *name;
	void (*run)(void);
	struct plain_test *next;
};

static struct plain_test *plain_tests, **plain_tail = &plain_tests;

#define Test(suite, name, ...)                                                                \
	static void suite##_##name(void);                                                    \
	__attribute__((constructor)) static void suite##_##name##_register(void)             \
	{                                                                                    \
		static struct plain_test t = { #suite, #name, suite##_##name, NULL };        \
		*plain_tail = &t;                                                            \
		plain_tail = &t.next;                                                        \
	}                                                                                    \
	static void suite##_##name(void)

__attribute__((format(printf, 4, 5), noreturn))
static void plain_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: %s", file, line, expr);
	if (fmt[1]) {
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt + 1, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	exit(1);
}

/* The message, if any, is a format and its arguments, as criterion's;
 * plain_fail skips the '-' put before it (no message: a format of "-"). */
#define cr_assert(cond, ...)                                                                  \
	do {                                                                                  \
		if (!(cond))                                                                  \
			plain_fail(__FILE__, __LINE__, #cond, "-" __VA_ARGS__);               \
	} while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(!strcmp((a), (b)), __VA_ARGS__)

int main(void)
{
	struct plain_test *t;
	int n = 0;

	for (t = plain_tests; t; t = t->next, n++) {
		fprintf(stderr, "%s::%s\n", t->suite, t->name);
		t->run();
	}
	fprintf(stderr, "%d tests passed\n", n);
	return n ? 0 : 1;
}
#endif

#endif
