/* Throwaway SPANK probe: logs every callback to /tmp/probe/log. */
#include <stdint.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

SPANK_PLUGIN(probe, 1);

static char *opt_val = NULL;
static int optcb_count = 0;
static int optcb(int val, const char *optarg, int remote);

static struct spank_option io_opt = {
	"io-profile", "SPEC", "probe: I/O profile spec", 1, 0, optcb
};

static const char *ctxname(void)
{
	switch (spank_context()) {
	case S_CTX_LOCAL: return "local";
	case S_CTX_REMOTE: return "remote";
	case S_CTX_ALLOCATOR: return "allocator";
	case S_CTX_SLURMD: return "slurmd";
	case S_CTX_JOB_SCRIPT: return "job_script";
	default: return "error";
	}
}

static char ctl[256];
static const char *behaviour(void)
{
	FILE *f = fopen("/tmp/probe/ctl", "r");
	ctl[0] = 0;
	if (f) {
		if (!fgets(ctl, sizeof ctl, f))
			ctl[0] = 0;
		fclose(f);
	}
	return ctl;
}

static int want(const char *key)
{
	behaviour();
	return (opt_val && strstr(opt_val, key)) || strstr(ctl, key);
}

static void plog(spank_t sp, const char *fn)
{
	char sgv[256] = "(unset)", sgv2[256] = "(unset)";
	char *gopt = NULL;
	const char *ge = getenv("SPANK_IOSTAGE_PROFILE");
	const char *ge2 = getenv("IOSTAGE_PROFILE");
	uint32_t jobid = 0;
	int jr = -1, gr = -1, sr = -1, sr2 = -1;
	FILE *f;

	if (sp) {
		jr = spank_get_item(sp, S_JOB_ID, &jobid);
		sr = spank_getenv(sp, "SPANK_IOSTAGE_PROFILE", sgv, sizeof sgv);
		sr2 = spank_getenv(sp, "IOSTAGE_PROFILE", sgv2, sizeof sgv2);
		gr = spank_option_getopt(sp, &io_opt, &gopt);
	}
	mkdir("/tmp/probe", 01777);
	f = fopen("/tmp/probe/log", "a");
	if (!f)
		return;
	fprintf(f, "%s %s pid=%d ppid=%d uid=%d euid=%d gid=%d job=%u(rc%d) "
		"opt_val=%s optcb_n=%d getopt=%d:%s spank_getenv(SPANK_IOSTAGE_PROFILE)=%d:%s "
		"spank_getenv(IOSTAGE_PROFILE)=%d:%s getenv(SPANK_IOSTAGE_PROFILE)=%s getenv(IOSTAGE_PROFILE)=%s\n",
		ctxname(), fn, getpid(), getppid(), getuid(), geteuid(), getgid(),
		jobid, jr, opt_val ? opt_val : "(null)", optcb_count, gr,
		gopt ? gopt : "(null)", sr, sr == 0 ? sgv : "-", sr2,
		sr2 == 0 ? sgv2 : "-", ge ? ge : "(null)", ge2 ? ge2 : "(null)");
	if (sp && spank_context() == S_CTX_REMOTE) {
		char b[256];
		int r = spank_getenv(sp, "SLURM_SPANK_IOSTAGE_PROFILE", b, sizeof b);
		const char *g = getenv("SLURM_SPANK_IOSTAGE_PROFILE");
		fprintf(f, "    +remote spank_getenv(SLURM_SPANK_IOSTAGE_PROFILE)=%d:%s getenv(SLURM_SPANK_IOSTAGE_PROFILE)=%s\n",
			r, r == 0 ? b : "-", g ? g : "(null)");
	}
	fclose(f);
	chmod("/tmp/probe/log", 0666);
}

static int optcb(int val, const char *optarg, int remote)
{
	optcb_count++;
	free(opt_val);
	opt_val = strdup(optarg ? optarg : "");
	{
		FILE *f = fopen("/tmp/probe/log", "a");
		if (f) {
			fprintf(f, "%s optcb pid=%d uid=%d val=%d optarg=%s remote=%d n=%d\n",
				ctxname(), getpid(), getuid(), val,
				optarg ? optarg : "(null)", remote, optcb_count);
			fclose(f);
		}
	}
	if (strstr(opt_val, "fail_optcb")) {
		if (strstr(opt_val, "msg"))
			slurm_error("probe: bad --io-profile '%s' (optcb)", opt_val);
		return -1;
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	int rc = spank_option_register(sp, &io_opt);
	plog(sp, rc == 0 ? "init(register ok)" : "init(register FAILED)");
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t c = spank_context();
	plog(sp, "init_post_opt");
	if (c == S_CTX_ALLOCATOR || c == S_CTX_LOCAL) {
		if (opt_val) {
			int rc = spank_job_control_setenv(sp, "IOSTAGE_PROFILE", opt_val, 1);
			FILE *f = fopen("/tmp/probe/log", "a");
			if (f) {
				fprintf(f, "%s job_control_setenv rc=%d\n", ctxname(), rc);
				fclose(f);
			}
		}
		if (want("fail_postopt_local")) {
			if (want("msg"))
				slurm_error("probe: rejecting --io-profile '%s' (post_opt)", opt_val);
			return -1;
		}
	}
	if (c == S_CTX_REMOTE && want("fail_postopt_remote")) {
		fprintf(stderr, "probe: failing init_post_opt in remote\n");
		return -1;
	}
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	plog(sp, "local_user_init");
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	plog(sp, "user_init");
	if (want("fail_user_init")) {
		if (want("msg")) {
			fprintf(stderr, "probe: user_init stderr message\n");
			slurm_error("probe: user_init slurm_error message");
		}
		return -1;
	}
	return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	plog(sp, "task_init_privileged");
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	plog(sp, "task_init");
	if (want("fail_task_init")) {
		if (want("msg")) {
			fprintf(stderr, "probe: task_init stderr message\n");
			slurm_error("probe: task_init slurm_error message");
		}
		return -1;
	}
	return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	plog(sp, "task_exit");
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	plog(sp, "job_prolog");
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	plog(sp, "job_epilog");
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	plog(sp, "exit");
	return 0;
}
