/* file_batch.h - the `file_batch` op: many filings under one credential.
 *
 *   {"op":"file_batch","files":[{"job":N,"node":"n1","nodes":[...],
 *                                "record":{...}}, ...]}
 *   -> {"ok":true,"results":[{"filed":bool,"duplicate":bool}
 *                            | {"error":"one line"}, ...]}
 *
 * Each entry is exactly what one `file` request carries and gets the same
 * answer, in the same order. Why it exists: a MUNGE credential costs the
 * service one decode by its munged (about 100 us of munged's CPU here,
 * bench/README.md), which caps one-record-per-credential filing near
 * 10,000 jobs/s on one service; a node agent with a backlog (its outbox
 * after the service was away, a node that ran many short jobs) sends up
 * to FILE_BATCH_MAX of them in one credential, so the decode, the
 * connection and the WAL fsync are paid once per batch. Security is the
 * same: the credential covers the whole request, root only.
 *
 * Everything the batch files goes to the history in one WriteBatch with
 * one fsync: the one-node records (history_put_many) and the parts of
 * multi-node jobs, with the merged records they complete (partstore_prepare
 * for each, under their jobs' locks, held until the write is done). A job
 * that comes twice in one batch files its second entry on its own after
 * the batch, as the `file` op would. The duplicate check is the `file`
 * op's (same node, same end time); two retries of one one-node job racing
 * in two batches may both file it, which replaces the job's record with
 * the same one: never two jobs. When the WriteBatch fails (a record the
 * history refuses), each entry is filed on its own and gets its own
 * answer.
 */
#ifndef IOSTAGE_CTLD_FILE_BATCH_H
#define IOSTAGE_CTLD_FILE_BATCH_H

#include "ctld/ops.h"

#define FILE_BATCH_MAX 256 /* entries; ~2.5 KB each fits a credential */

cJSON *ctld_op_file_batch(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_FILE_BATCH_H */
