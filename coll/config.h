/*
 * The library's side of numacoll_config_t's growth (coll/config.c): a
 * caller's config, which may be an older, smaller struct, read into the
 * library's own.
 */
#ifndef NUMACOLL_CONFIG_H
#define NUMACOLL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "numacoll.h"

/*
 * *out = the defaults, then the fields *in has (in->struct_size bytes;
 * in NULL: none); out->struct_size = sizeof *out. NUMACOLL_ERR_ARG with a
 * sentence in msg when in->struct_size is no size the struct has had
 * (never initialised, or from a newer numacoll.h); *out then holds the
 * defaults.
 */
int nc__config_import(numacoll_config_t *out, const numacoll_config_t *in,
                      char *msg, size_t msglen);

/* A hash of the fields ranks must set alike (numacoll_config_param_is_local
 * says which they need not), compared at team creation. */
uint64_t nc__config_shape_hash(const numacoll_config_t *c);

#endif
