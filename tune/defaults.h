/*
 * The built-in tuning table's text: tune/defaults.txt, turned into a C
 * string by tune/tune.mk ($(BUILD)/tune/defaults_txt.c). Only
 * tune/table.c reads it, through nc__tune_builtin().
 */
#ifndef NUMACOLL_TUNE_DEFAULTS_H
#define NUMACOLL_TUNE_DEFAULTS_H

#include <stddef.h>

extern const char nc__tune_defaults_txt[];  /* NUL-terminated as well   */
extern const size_t nc__tune_defaults_len;  /* bytes, without the NUL   */

#endif
