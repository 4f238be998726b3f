/* pfslicense.c - `iostage pfs-license --io-profile SPEC [--licenses CUR]
 * [--job-name N | --submitter PID]`: print the --licenses value a job
 * with that profile should be submitted with (common/sched/pfslicense.h).
 *
 * The shipped cli_filter.lua runs it in slurm_cli_pre_submit, as the
 * submitting user, and sets options["licenses"] to what it prints. It is
 * a command rather than code in the SPANK plugin because in Slurm 22.05
 * a SPANK plugin cannot change a job's licenses, and the cli_filter runs
 * before the plugin's init_post_opt (srun calls cli_filter_g_pre_submit
 * first), so it cannot read anything the plugin works out either. The
 * profile is resolved here with the same code the plugin uses
 * (profile_from_spec, the history's advice for auto); a SPEC that is bad
 * prints nothing and exits 1: the plugin then refuses the job with its
 * one-line reason, so the message is not given twice.
 *
 * --submitter PID: for auto without --job-name, the job name is found
 * the way the plugin finds it, from that process's command line (the
 * sbatch that runs the filter; it is the caller's own process).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/json.h"
#include "cli/pfslicense.h"
#include "common/config/jobname.h"
#include "common/config/profile.h"
#include "common/sched/pfslicense.h"

#define PFS_CMDLINE_MAX (256 * 1024)
#define PFS_ARGS_MAX 1024
#define PFS_ADVICE_TIMEOUT_MS 5000

static void usage(FILE *out)
{
	fprintf(out, "usage: iostage pfs-license --io-profile SPEC "
		     "[--licenses CURRENT] [--job-name NAME | --submitter "
		     "PID]\n");
}

/* The job name sbatch PID will give (its argv, SBATCH_JOB_NAME, its
 * script), into buf; "" when unknown. */
static void submitter_job_name(long pid, char *buf, size_t buflen)
{
	static char cmdline[PFS_CMDLINE_MAX];
	char path[64], script[4096], *argv[PFS_ARGS_MAX], *p = cmdline;
	const char *env = getenv("SBATCH_JOB_NAME");
	bool wrap = false;
	size_t len = 0;
	ssize_t n;
	int fd, argc = 0;

	buf[0] = script[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (len + 1 < sizeof(cmdline) &&
		       (n = read(fd, cmdline + len,
				 sizeof(cmdline) - 1 - len)) > 0)
			len += (size_t)n;
		close(fd);
	}
	cmdline[len] = '\0';
	while (p < cmdline + len && argc < PFS_ARGS_MAX) {
		argv[argc++] = p;
		p += strlen(p) + 1;
	}
	if (argc)
		jobname_from_argv(argc, argv, buf, buflen, script,
				  sizeof(script), &wrap);
	if (!buf[0] && env && env[0])
		snprintf(buf, buflen, "%s", env);
	if (!buf[0] && script[0])
		jobname_from_script(script, buf, buflen);
	if (!buf[0] && wrap)
		snprintf(buf, buflen, "wrap");
}

/* With auto: the history's stream advice for JOB_NAME into PROFILE.
 * Without advice (no history, no service) the job streams what it says. */
static void apply_advice(const struct client *client, struct profile *profile,
			 const char *job_name)
{
	char why[CONF_ERR_MAX];
	cJSON *req = json_request("recommend"), *reply;

	if (!req)
		return;
	cJSON_AddStringToObject(req, "job_name", job_name);
	reply = client_history_call_quiet(client, req, PFS_ADVICE_TIMEOUT_MS,
					  why, sizeof(why));
	cJSON_Delete(req);
	if (reply)
		pfslicense_add_advice(profile, reply);
	cJSON_Delete(reply);
}

int pfslicense_main(const struct client *client, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "io-profile", required_argument, NULL, 'p' },
		{ "licenses", required_argument, NULL, 'L' },
		{ "job-name", required_argument, NULL, 'J' },
		{ "submitter", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *spec = NULL, *current = NULL, *job_name = NULL;
	char name[JOBNAME_MAX], err[CONF_ERR_MAX], lic[PFSLICENSE_MAX];
	char out[PFSLICENSE_MAX];
	struct profile *profile;
	long submitter = 0;
	char *end;
	int opt;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "p:L:J:s:h", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'p':
			spec = optarg;
			break;
		case 'L':
			current = optarg;
			break;
		case 'J':
			job_name = optarg;
			break;
		case 's':
			submitter = strtol(optarg, &end, 10);
			if (*end || submitter <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !spec) {
		usage(stderr);
		return 2;
	}
	profile = profile_from_spec(spec, client->conf, err, sizeof(err));
	if (!profile) {
		fprintf(stderr, "iostage: pfs-license: --io-profile: %s\n",
			err);
		return 1;
	}
	if (profile->is_auto && client->conf->pfs_license[0]) {
		if (!job_name && submitter) {
			submitter_job_name(submitter, name, sizeof(name));
			job_name = name;
		}
		apply_advice(client, profile, job_name ? job_name : "");
	}
	if (pfslicense_for(profile, client->conf, lic, sizeof(lic)) < 0 ||
	    pfslicense_merge(current, lic, out, sizeof(out)) < 0) {
		profile_destroy(profile);
		fprintf(stderr,
			"iostage: pfs-license: --licenses: longer than "
			"%d bytes\n",
			PFSLICENSE_MAX - 1);
		return 1;
	}
	profile_destroy(profile);
	printf("%s\n", out);
	return 0;
}
