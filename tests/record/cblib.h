#ifndef CBLIB_H
#define CBLIB_H

typedef int (*cblib_fn)(void *arg);

/* Calls cb(arg) through lib_step; returns its result plus a constant. */
int lib_call(cblib_fn cb, void *arg);
int lib_step(cblib_fn cb, void *arg, int depth);

#endif
