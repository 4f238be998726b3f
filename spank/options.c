/* options.c - plugstack.conf arguments and the --io-profile option.
 *
 * The option must be registered with spank_option_register() from
 * slurm_spank_init: sbatch on Slurm 22.05 ignores a static spank_options
 * table. Slurm may call the callback more than once (#SBATCH line, then the
 * command line): the last value wins, as for Slurm's own options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "common/config/profile.h"
#include "spank/options.h"

struct options options;

static int io_profile_cb(int val, const char *optarg, int remote)
{
	char *copy;

	(void)val;
	(void)remote;
	if (!optarg || !optarg[0]) {
		slurm_error("iostage: --io-profile: key 'profile': empty");
		return -1;
	}
	if (strlen(optarg) > PROFILE_SPEC_MAX) {
		slurm_error("iostage: --io-profile: key 'spec': longer than "
			    "%d bytes",
			    PROFILE_SPEC_MAX);
		return -1;
	}
	copy = strdup(optarg);
	if (!copy)
		return -1;
	free(options.spec);
	options.spec = copy;
	return 0;
}

static struct spank_option io_profile_option = {
	.name = "io-profile",
	.arginfo = "SPEC",
	.usage = "Stage datasets to node-local storage and record I/O "
		 "telemetry: SPEC is a site profile (dl-train, "
		 "checkpoint-heavy, inference, none), a JSON file or auto, "
		 "with ,data=PATH[:TIER] ,out=PATH ,tier= ,on-failure= "
		 ",timeout= overrides",
	.has_arg = 1,
	.val = 0,
	.cb = io_profile_cb,
};

int options_parse_args(int ac, char **av)
{
	int i;

	snprintf(options.conf_path, sizeof(options.conf_path), "%s",
		 IOSTAGE_CONF_PATH);
	for (i = 0; i < ac; i++) {
		if (strncmp(av[i], "conf=", 5) == 0 && av[i][5] == '/') {
			if (strlen(av[i] + 5) >= sizeof(options.conf_path)) {
				slurm_error("iostage: plugstack.conf: "
					    "argument 'conf': path too long");
				return -1;
			}
			snprintf(options.conf_path, sizeof(options.conf_path),
				 "%s", av[i] + 5);
		} else {
			slurm_error("iostage: plugstack.conf: unknown argument "
				    "'%s' (known: conf=/ABSOLUTE/PATH)",
				    av[i]);
			return -1;
		}
	}
	return 0;
}

int options_register(spank_t sp)
{
	if (spank_option_register(sp, &io_profile_option) != ESPANK_SUCCESS) {
		slurm_error("iostage: cannot register --io-profile");
		return -1;
	}
	return 0;
}

void options_fini(void)
{
	free(options.spec);
	options.spec = NULL;
}
