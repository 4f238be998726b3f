/* jobname.h - the job name sbatch will give a job, found before it does.
 *
 * The history files runs by user + job name, so a recommendation asked for
 * at submit time (--io-profile=auto, the hint) or by `iostage recommend
 * --script` must name the job as sbatch will: -J/--job-name on the command
 * line, else SBATCH_JOB_NAME, else the script's "#SBATCH -J/--job-name"
 * lines (read until the first command, as sbatch does), else the script's
 * file name, else "wrap" for --wrap. These run as the submitting user.
 */
#ifndef IOSTAGE_JOBNAME_H
#define IOSTAGE_JOBNAME_H

#include <stdbool.h>
#include <stddef.h>

#define JOBNAME_MAX 256
#define JOBNAME_SCRIPT_MAX (4 * 1024 * 1024) /* bytes of script read */

/* The name TEXT's #SBATCH lines give (the last one wins), into buf.
 * Returns true when there was one. */
bool jobname_from_script_text(const char *text, char *buf, size_t buflen);

/* The job name for SCRIPT (a path): its #SBATCH name, else its file name.
 * Returns 0, or -1 with errno when it cannot be read (buf then holds the
 * file name). */
int jobname_from_script(const char *script, char *buf, size_t buflen);

/* From sbatch's argument vector (argv[0] is the program): the job name
 * (-J NAME, -JNAME, --job-name NAME, --job-name=NAME) into name ("" if
 * none) and the batch script into script ("" if none: the first argument
 * that is a readable file starting with "#!"). *ret_wrap is set for
 * --wrap. */
void jobname_from_argv(int argc, char *const *argv, char *name, size_t namelen,
		       char *script, size_t scriptlen, bool *ret_wrap);

#endif /* IOSTAGE_JOBNAME_H */
