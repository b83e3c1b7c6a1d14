/*
 * The library's side of numacoll_config_t's growth (coll/config.c): a
 * caller's config, which may be an older, smaller struct, read into the
 * library's own.
 */
#ifndef NUMACOLL_CONFIG_H
#define NUMACOLL_CONFIG_H

#include <stddef.h>

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

#endif
