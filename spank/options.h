/* options.h - plugstack.conf arguments and the --io-profile option. */
#ifndef IOSTAGE_SPANK_OPTIONS_H
#define IOSTAGE_SPANK_OPTIONS_H

#include <slurm/spank.h>

#include "common/config/conf.h"

struct options {
	char
	    conf_path[CONF_PATH_MAX]; /* conf=PATH, default IOSTAGE_CONF_PATH */
	char *spec; /* --io-profile value, NULL if not given */
};

/* The plugin's state: SPANK calls us in one process per context. */
extern struct options options;

/* Parse plugstack.conf arguments strictly (unknown = error, logged with
 * slurm_error). Returns 0 or -1. */
int options_parse_args(int ac, char **av);

/* Register --io-profile with Slurm. Returns 0 or -1 (logged). */
int options_register(spank_t sp);

/* Free what the options hold. */
void options_fini(void);

#endif /* IOSTAGE_SPANK_OPTIONS_H */
