/* preload_observe.c - which tree an observed job reads from the PFS.
 *
 * A job run with --io-profile=auto before the history has advice for it
 * is observed (common/config/profile.h, profile_observe): the plugin gives the
 * shim the PFS as class "pfs". For every file opened for reading under it
 * the shim keeps
 *   - the root: the deepest directory that holds every such file (the
 *     dataset the history may advise staging), shrunk to a whole-component
 *     common prefix as files arrive;
 *   - the distinct files (device, inode) and their bytes (one fstat at
 *     open), so that an epoch read three times counts once: the history's
 *     size of what the job needs, judged against a tier's capacity.
 * No locks (a signal handler may open a file): the root's text is written
 * once by the first file's opener and only its length shrinks after, by
 * compare-and-swap; the inode table is open addressing with
 * compare-and-swap on empty slots, mapped once at start-up. What cannot be
 * noted (the table three-quarters full, the root being written by another
 * thread at that instant) is counted as missed, never guessed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/preload.h"

#define OBSERVE_SLOTS (1u << 20) /* 8 MiB of address space, touched as used */
#define OBSERVE_FULL (OBSERVE_SLOTS / 4 * 3)

enum { ROOT_NONE = 0, ROOT_WRITING, ROOT_READY };

static _Atomic uint64_t *slots;
static atomic_uint_fast64_t nfiles, nbytes, missed;
static atomic_int root_state;
static atomic_size_t root_len;
static char root[4096];

int shim_observe_init(void)
{
	void *m;

	if (!shim_classes_observing())
		return 0;
	m = mmap(NULL, OBSERVE_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	slots = m;
	return 0;
}

/* A non-zero key for (dev, ino). */
static uint64_t file_key(const struct stat *st)
{
	uint64_t k = (uint64_t)st->st_ino * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)st->st_dev + 0x632be59bd9b4e019ULL) *
			 0xbf58476d1ce4e5b9ULL;

	return k ? k : 1;
}

/* True when KEY was not in the table (and now is). */
static bool insert(uint64_t key)
{
	size_t mask = OBSERVE_SLOTS - 1, i = (size_t)(key ^ key >> 29) & mask;

	for (size_t n = 0; n < OBSERVE_SLOTS; n++, i = (i + 1) & mask) {
		uint64_t cur = atomic_load_explicit(&slots[i],
						    memory_order_relaxed);

		if (cur == key)
			return false;
		if (cur == 0) {
			uint64_t empty = 0;

			if (atomic_compare_exchange_strong(&slots[i], &empty,
							   key))
				return true;
			if (empty == key)
				return false;
		}
	}
	return false;
}

/* The length of the deepest directory (whole components) holding both the
 * current root (LEN bytes) and the directory DIR (DLEN bytes). */
static size_t common_len(const char *dir, size_t dlen, size_t len)
{
	size_t i = 0;

	while (i < len && i < dlen && root[i] == dir[i])
		i++;
	if (i == len && (dlen == len || dir[len] == '/'))
		return len; /* DIR is the root or under it */
	if (i == dlen && root[dlen] == '/')
		return dlen; /* the root is under DIR */
	while (i > 0 && root[i] != '/')
		i--;
	return i ? i : 1; /* "/" */
}

static void note_root(const char *abs)
{
	const char *slash = strrchr(abs, '/');
	size_t dlen = slash && slash != abs ? (size_t)(slash - abs) : 1;
	int expect = ROOT_NONE;
	size_t len, want;

	if (dlen >= sizeof(root)) {
		atomic_fetch_add(&missed, 1);
		return;
	}
	if (atomic_compare_exchange_strong(&root_state, &expect,
					   ROOT_WRITING)) {
		memcpy(root, abs, dlen);
		root[dlen] = '\0';
		atomic_store(&root_len, dlen);
		atomic_store(&root_state, ROOT_READY);
		return;
	}
	if (expect != ROOT_READY) {
		atomic_fetch_add(&missed, 1); /* being written this instant */
		return;
	}
	len = atomic_load(&root_len);
	for (;;) {
		want = common_len(abs, dlen, len);
		if (want >= len ||
		    atomic_compare_exchange_weak(&root_len, &len, want))
			return;
	}
}

void shim_observe_open(int fd, const char *abs, int flags)
{
	struct stat st;
	int saved;

	if (!slots || !abs || (flags & O_ACCMODE) == O_WRONLY ||
	    !shim_classes_observed(abs))
		return;
	saved = errno;
	if (syscall(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		errno = saved;
		return;
	}
	errno = saved;
	note_root(abs);
	if (atomic_load_explicit(&nfiles, memory_order_relaxed) >=
	    OBSERVE_FULL) {
		atomic_fetch_add(&missed, 1);
		return;
	}
	if (insert(file_key(&st))) {
		atomic_fetch_add(&nfiles, 1);
		atomic_fetch_add(&nbytes, (uint64_t)st.st_size);
	}
}

bool shim_observe_get(const char **ret_root, size_t *ret_root_len,
		      uint64_t *ret_files, uint64_t *ret_bytes,
		      uint64_t *ret_missed)
{
	if (atomic_load(&root_state) != ROOT_READY)
		return false;
	*ret_root = root;
	*ret_root_len = atomic_load(&root_len);
	*ret_files = atomic_load(&nfiles);
	*ret_bytes = atomic_load(&nbytes);
	*ret_missed = atomic_load(&missed);
	return true;
}
