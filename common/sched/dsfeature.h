/* dsfeature.h - Slurm node features that say "this node caches dataset X"
 * (docs/SCHEDULING.md, Placement).
 *
 * iostagectld publishes, on each node, one feature per cached dataset it
 * wants jobs to be drawn to: "ios_" and 8 hex digits of a hash of the
 * cache entry's key K and its tier. The name says nothing about the path
 * or the user (a node's features are visible to every user), is short
 * (slurmctld keeps one list of every feature name), and is the same
 * wherever it is computed: iostagectld, from what a node reported, and
 * when it answers a submission, from the job's datasets.
 *
 * A node's feature string belongs to the site too (slurm.conf Features=):
 * the functions below touch only names of the "ios_" form and keep every
 * other feature, in its order.
 *
 * Pure functions, no I/O.
 */
#ifndef IOSTAGE_DSFEATURE_H
#define IOSTAGE_DSFEATURE_H

#include <stdbool.h>
#include <stddef.h>

#define DSFEATURE_PREFIX "ios_"
#define DSFEATURE_LEN 12 /* "ios_" + 8 hex digits */

/* The feature of entry KEY on tier TIER into ret. */
void dsfeature_name(const char *key, const char *tier,
		    char ret[DSFEATURE_LEN + 1]);

/* Is NAME (LEN bytes) a feature of ours ("ios_" + 8 lower-case hex)? */
bool dsfeature_is_ours(const char *name, size_t len);

/* Do the "ios_" features in CURRENT (a comma-separated list as Slurm
 * shows it, NULL or "" for none) equal the set OURS[0..N)? Order and
 * duplicates do not matter. */
bool dsfeature_same(const char *current, const char *const *ours, size_t n);

/* CURRENT with its "ios_" features replaced by OURS[0..N): the site's
 * features first, in their order, then ours. Returns a new string
 * (caller frees; "" when nothing is left), or NULL on ENOMEM. */
char *dsfeature_merge(const char *current, const char *const *ours, size_t n);

#endif /* IOSTAGE_DSFEATURE_H */
