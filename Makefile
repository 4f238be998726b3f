# iostage build. `make`, `make check`, `make demo`, `make install DESTDIR= prefix=`.
# SANITIZE=1 builds with ASan/UBSan. Sources are picked up per directory, so a
# new module is one new .c/.h pair and nothing to edit here.

prefix      ?= /usr/local
exec_prefix ?= $(prefix)
bindir      ?= $(exec_prefix)/bin
sbindir     ?= $(exec_prefix)/sbin
libdir      ?= $(exec_prefix)/lib
libexecdir  ?= $(exec_prefix)/libexec
slurmlibdir ?= $(libdir)/slurm
sysconfdir  ?= /etc
datadir     ?= $(prefix)/share
mandir      ?= $(datadir)/man
docdir      ?= $(datadir)/doc/iostage
includedir  ?= $(prefix)/include
systemdunitdir ?= $(prefix)/lib/systemd/system
# libiostage-preload.so, the shim the plugin injects (docs/SHIM.md)
shimlibdir  ?= $(libdir)/iostage
# The Python module (python/iostage, docs/PYTHON.md), where Debian's python3
# looks without a PYTHONPATH: /usr/lib/python3/dist-packages for a package,
# /usr/local/lib/python3.X/dist-packages for `make install`.
PYTHON      ?= /usr/bin/python3
PYTHON_XY   := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
pythondir   ?= $(if $(filter /usr,$(prefix)),$(prefix)/lib/python3/dist-packages,$(prefix)/lib/python$(PYTHON_XY)/dist-packages)
DESTDIR     ?=

# A bare `make` builds everything, whatever rule below comes first (the
# generated path dependencies do).
.DEFAULT_GOAL := all

CC      ?= gcc
VERSION := 0.2.0
PKGS    := libcjson libxxhash libcrypto
# iostaged and iostagectld serve /metrics over HTTP (common/net/httpmetrics.c);
# nothing else links libmicrohttpd.
DAEMON_PKGS := libmicrohttpd
HTTP_LIBS   := $(shell pkg-config --libs $(DAEMON_PKGS))

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_FORTIFY_SOURCE=2 -fstack-protector-strong \
           -fPIC -MMD -MP -pthread
CPPFLAGS += -I. $(shell pkg-config --cflags $(PKGS)) \
           -DIOSTAGE_VERSION='"$(VERSION)"' \
           -DIOSTAGE_CONF_PATH='"$(IOSTAGE_CONF_PATH)"' \
           -DIOSTAGE_PROFILE_DIR='"$(IOSTAGE_PROFILE_DIR)"' \
           -DIOSTAGE_SHIM_PATH='"$(IOSTAGE_SHIM_PATH)"' \
           -DIOSTAGE_VIEW_PATH='"$(IOSTAGE_VIEW_PATH)"' \
           -DIOSTAGE_LOCALREAD_PATH='"$(IOSTAGE_LOCALREAD_PATH)"'
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -pthread -lm
# The history (common/history/) is RocksDB; iostagectld links it, and
# iostaged for a site without the service (node-local history).
DAEMON_LDLIBS := -lrocksdb
# iostagectld parses a record tree per filing on up to CTLD_WORK_MAX threads
# at once: jemalloc (the allocator RocksDB recommends) costs it ~17% less
# CPU per job than glibc's malloc and holds less memory (bench/README.md,
# "The history service over the network"). Not under the sanitizers,
# which bring their own allocator.
ifneq ($(SANITIZE),1)
CTLD_MALLOC := -ljemalloc
endif

# WERROR=1: a warning fails the build (make check-slurm builds every
# release this way).
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif

ifeq ($(SANITIZE),1)
# float-cast-overflow: a double out of an integer's range converted to it
# (undefined); gcc's "undefined" leaves it out, clang's has it. UBSAN is
# also all the plugin gets (below).
UBSAN   := -fsanitize=undefined,float-cast-overflow
CFLAGS  += -O1 -fno-omit-frame-pointer -fsanitize=address $(UBSAN)
LDFLAGS += -fsanitize=address $(UBSAN)
# Where every sanitizer report goes (common/base/log.c; tests/sanitize.sh).
SANITIZE_LOG ?= $(abspath $(BUILD))/sanitizer-logs
CPPFLAGS += -DIOSTAGE_SANITIZE_LOG='"$(SANITIZE_LOG)"'
LDFLAGS += -Wl,-u,__asan_default_options -Wl,-u,__ubsan_default_options
endif

BUILD   ?= build

# ---- Paths compiled into the programs (common/config/conf.h): where
# iostage.conf, the site profiles and the shim are installed. A build is
# only right for the prefix and sysconfdir it was made with, so
# $(PATHS_STAMP) holds them, rewritten only when they change, and every
# object that names one depends on it: `make && make install prefix=/usr`
# rebuilds those objects (saying so in one line) instead of installing
# programs that look under /usr/local.
IOSTAGE_CONF_PATH   = $(sysconfdir)/slurm/iostage.conf
IOSTAGE_PROFILE_DIR = $(sysconfdir)/slurm/iostage.d
IOSTAGE_SHIM_PATH   = $(shimlibdir)/libiostage-preload.so
# libiostage-localread.so (localread/), preloaded into a spread job's tasks
IOSTAGE_LOCALREAD_PATH = $(shimlibdir)/libiostage-localread.so
# iostage-view (view/), which only iostaged starts: a helper, in libexec.
IOSTAGE_VIEW_PATH   = $(libexecdir)/iostage/iostage-view
PATHS_STAMP := $(BUILD)/paths.stamp
PATHS_TEXT  := conf=$(IOSTAGE_CONF_PATH) profiles=$(IOSTAGE_PROFILE_DIR) \
               shim=$(IOSTAGE_SHIM_PATH) view=$(IOSTAGE_VIEW_PATH) \
               localread=$(IOSTAGE_LOCALREAD_PATH)
PATHS_OLD   := $(shell cat $(PATHS_STAMP) 2>/dev/null)
# Goals that build nothing leave the stamp alone.
ifneq ($(if $(MAKECMDGOALS),$(filter-out clean uninstall format format-check deps,$(MAKECMDGOALS)),all),)
ifneq ($(PATHS_OLD),$(PATHS_TEXT))
ifneq ($(PATHS_OLD),)
$(info make: compiled-in paths changed to $(PATHS_TEXT) (were $(PATHS_OLD)): rebuilding what names them)
endif
$(shell mkdir -p $(BUILD) && echo '$(PATHS_TEXT)' >$(PATHS_STAMP))
endif
endif
# Who names them: objects (plain and UBSan), unit tests and fuzz targets
# compiled from their own source.
PATHS_USERS := $(shell grep -lE 'IOSTAGE_(CONF_PATH|PROFILE_DIR|SHIM_PATH|VIEW_PATH|LOCALREAD_PATH)' \
                 $(wildcard */*.c */*/*.c */*/*/*.c))
$(foreach f,$(PATHS_USERS),$(if $(filter tests/unit/%,$(f)),\
    $(eval $(BUILD)/tests/$(basename $(notdir $(f))): $(PATHS_STAMP)),\
  $(if $(filter tests/%,$(f)),,\
    $(eval $(BUILD)/$(f:.c=.o) $(BUILD)/ubsan/$(f:.c=.o): $(PATHS_STAMP)))))
$(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c)): $(PATHS_STAMP)

COMMON_SRC := $(wildcard common/*/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
LIBCOMMON  := $(BUILD)/libiostage-common.a

SPANK_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard spank/*.c))
DAEMON_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard daemon/*.c daemon/*/*.c))
# ctld/: iostagectld, the cluster's history service. The history library
# both daemons use (common/history/: the database, the job facts, the
# rules, the history ops; iostaged keeps a node-local history when
# ControllerHost= is empty, docs/ARCHITECTURE.md) is in $(LIBCOMMON):
# what links one of its modules links $(DAEMON_LDLIBS) too.
CTLD_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(wildcard ctld/*.c ctld/*/*.c))
CLI_OBJ    := $(patsubst %.c,$(BUILD)/%.o,$(wildcard cli/*.c))
# iostaged's and iostagectld's modules but main(), as libraries: the unit
# tests and fuzz targets link them and take the modules they use.
LIBDAEMON  := $(BUILD)/libiostage-daemon.a
LIBCTLD    := $(BUILD)/libiostage-ctld.a

# Programs are built under $(BUILD) too, so several builds (SANITIZE=1,
# parallel work trees) never step on each other.
PLUGIN  := $(BUILD)/spank/iostage.so
DAEMON  := $(BUILD)/daemon/iostaged
PROLOG  := $(BUILD)/prolog/iostage-prolog
EPILOG  := $(BUILD)/prolog/iostage-epilog
CLI     := $(BUILD)/cli/iostage
CTLD    := $(BUILD)/ctld/iostagectld
VIEW    := $(BUILD)/view/iostage-view
PROGS   := $(PLUGIN) $(DAEMON) $(PROLOG) $(EPILOG) $(CLI) $(CTLD) $(VIEW)

UNIT_SRC   := $(wildcard tests/unit/check_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all check unit unit-bins integration cluster demo install uninstall clean \
        deps format format-check bench bench-history
all: $(PROGS)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Archives are made afresh: `ar rcs` alone would keep the members of
# modules since removed or renamed, whose symbols then shadow the new ones.
$(LIBCOMMON): $(COMMON_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

# The plugin exports only the slurm_spank_* symbols and the Slurm metadata.
# With SANITIZE=1 it is built with UBSan only: it is loaded into slurmd,
# slurmstepd, sbatch and srun, which are not built with ASan, and ASan
# must be the first library of a process (docs/RELIABILITY.md).
PLUGIN_OBJ    := $(SPANK_OBJ)
PLUGIN_COMMON := $(LIBCOMMON)
PLUGIN_LDFLAGS = $(LDFLAGS)
ifeq ($(SANITIZE),1)
PLUGIN_OBJ    := $(SPANK_OBJ:$(BUILD)/%=$(BUILD)/ubsan/%)
PLUGIN_COMMON := $(BUILD)/ubsan/libiostage-common.a
PLUGIN_LDFLAGS = $(filter-out -fsanitize=%,$(LDFLAGS)) $(UBSAN)
$(BUILD)/ubsan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(filter-out -fsanitize=%,$(CFLAGS)) $(UBSAN) \
	    -c -o $@ $<
$(PLUGIN_COMMON): $(COMMON_OBJ:$(BUILD)/%=$(BUILD)/ubsan/%)
	rm -f $@ && $(AR) rcs $@ $^
endif
$(PLUGIN): $(PLUGIN_OBJ) $(PLUGIN_COMMON) spank/iostage.map
	@mkdir -p $(@D)
	$(CC) -shared $(PLUGIN_LDFLAGS) -Wl,--version-script=spank/iostage.map \
	    -o $@ $(PLUGIN_OBJ) $(PLUGIN_COMMON) $(LDLIBS) -lmunge

$(DAEMON): $(DAEMON_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS) $(DAEMON_LDLIBS) -lmunge \
	    $(shell pkg-config --libs $(DAEMON_PKGS))

# iostagectld publishes node features and reads jobs through libslurm
# (ctld/sched/slurmsched.c).
$(CTLD): $(CTLD_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS) $(DAEMON_LDLIBS) -lmunge -lslurm \
	    $(HTTP_LIBS) $(CTLD_MALLOC)

$(BUILD)/daemon/%.o $(BUILD)/common/net/httpmetrics.o $(BUILD)/ubsan/common/net/httpmetrics.o: \
    CPPFLAGS += $(shell pkg-config --cflags $(DAEMON_PKGS))

# view/: iostage-view, the spread view (docs/STAGING.md, "The spread
# view"): a FUSE file system served as the job's user on a /dev/fuse
# iostaged mounted. Only it (and its test) links libfuse3; iostaged mounts
# with common/fs/fusemount.c, a plain mount(2).
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3)
FUSE_LIBS   := $(shell pkg-config --libs fuse3)
VIEW_OBJ    := $(patsubst %.c,$(BUILD)/%.o,$(wildcard view/*.c))
VIEW_LIB_OBJ := $(filter-out $(BUILD)/view/main.o,$(VIEW_OBJ))
$(VIEW_OBJ): CPPFLAGS += $(FUSE_CFLAGS)
$(VIEW): $(VIEW_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS) -lmunge $(FUSE_LIBS)

$(PROLOG): $(BUILD)/prolog/prolog.o $(BUILD)/prolog/jobctl.o $(BUILD)/prolog/jobinfo.o \
    $(BUILD)/prolog/nodelist.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS) -lslurm

$(EPILOG): $(BUILD)/prolog/epilog.o $(BUILD)/prolog/jobinfo.o $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The plugin and the CLI ask iostagectld in the user's own MUNGE
# credential (common/net/ctlclient.h) when iostage.conf names a service.
$(CLI): $(CLI_OBJ) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS) -lmunge

$(BUILD)/tests/check_%: tests/unit/check_%.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ \
	    $(filter-out %.h $(PATHS_STAMP),$^) \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)

# MUNGE: only what links common/net/mauth.o needs libmunge (iostaged, its
# tests); the archive keeps it out of the plugin, the CLI and the Prolog.
$(BUILD)/tests/check_mauth $(BUILD)/tests/check_peernet \
    $(BUILD)/tests/check_ctlclient $(BUILD)/tests/check_peerserve: LDLIBS += -lmunge
# The /metrics server (libmicrohttpd), tested on a real socket.
$(BUILD)/tests/check_httpmetrics: LDLIBS += $(HTTP_LIBS)

# The Prolog's node list and the libslurm calls that differ between
# releases (common/slurm/slurmcompat.c), on the libslurm installed.
$(BUILD)/tests/check_nodelist: tests/unit/check_nodelist.c $(BUILD)/prolog/nodelist.o $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) -lslurm $(shell pkg-config --libs check)
$(BUILD)/tests/check_slurmcompat: LDLIBS += -lslurm

# The cache's unit tests link its parts, the journal and fsutil; not
# cache_tiers.o (iostaged's tiers): each test gives its caches tiers of
# its own in temporary directories (tests/unit/cache_fixture.h).
CACHE_TEST_OBJ := $(filter-out $(BUILD)/daemon/staging/cache_tiers.o,\
                    $(patsubst %.c,$(BUILD)/%.o,$(wildcard daemon/staging/cache*.c))) \
                  $(BUILD)/daemon/staging/journal.o $(BUILD)/daemon/fsutil.o
CACHE_TEST_BIN := $(filter $(BUILD)/tests/check_cache_%,$(UNIT_BIN))
$(CACHE_TEST_BIN): $(BUILD)/tests/check_%: tests/unit/check_%.c \
    tests/unit/cache_fixture.h $(CACHE_TEST_OBJ) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)

# iostaged's other unit tests (each includes a daemon/ header: that is how
# they are found) link $(LIBDAEMON) and take the modules they use, the
# real objects, as iostaged does.
DAEMON_TEST_SRC := $(filter-out tests/unit/check_cache_% tests/unit/check_sampler.c \
                     tests/unit/check_view.c,\
                     $(shell grep -l '^#include "daemon/' tests/unit/check_*.c))
DAEMON_TEST_BIN := $(DAEMON_TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
$(DAEMON_TEST_BIN): $(BUILD)/tests/check_%: tests/unit/check_%.c $(LIBDAEMON) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(shell pkg-config --cflags $(DAEMON_PKGS)) $(CFLAGS) \
	    $(shell pkg-config --cflags check) -o $@ $< \
	    -Wl,--start-group $(LIBDAEMON) $(LIBCOMMON) -Wl,--end-group \
	    $(LDFLAGS) $(LDLIBS) $(DAEMON_LDLIBS) -lmunge $(HTTP_LIBS) \
	    $(shell pkg-config --libs check)

# The spread view: its modules in the test's process (a peer served by a
# node of peerfetch_fixture.h, hence the daemon's libraries), and the
# built program on a real FUSE mount (root).
$(BUILD)/tests/check_view: tests/unit/check_view.c $(VIEW_LIB_OBJ) $(VIEW) \
    $(LIBDAEMON) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(FUSE_CFLAGS) $(shell pkg-config --cflags $(DAEMON_PKGS)) \
	    $(CFLAGS) $(shell pkg-config --cflags check) \
	    -DVIEW_TEST_PROGRAM='"$(abspath $(VIEW))"' -o $@ $< $(VIEW_LIB_OBJ) \
	    -Wl,--start-group $(LIBDAEMON) $(LIBCOMMON) -Wl,--end-group \
	    $(LDFLAGS) $(LDLIBS) $(DAEMON_LDLIBS) -lmunge $(HTTP_LIBS) $(FUSE_LIBS) \
	    $(shell pkg-config --libs check)

# The history's unit tests take its modules from $(LIBCOMMON), on a real
# RocksDB; the service's (check_ctld) links all of ctld/ but its main().
$(BUILD)/tests/check_recommend $(BUILD)/tests/check_history: LDLIBS += $(DAEMON_LDLIBS)
# The part store (a multi-node job's parts, deadlines) on a real RocksDB.
$(BUILD)/tests/check_partstore: tests/unit/check_partstore.c \
    $(BUILD)/ctld/filing/partstore.o $(BUILD)/ctld/filing/joblock.o $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) $(DAEMON_LDLIBS) $(shell pkg-config --libs check)
# Reading a node's own chunks ahead: the view's module alone.
$(BUILD)/tests/check_view_ahead: tests/unit/check_view_ahead.c \
    $(BUILD)/view/view_ahead.o $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)
# The job locks, under many threads.
$(BUILD)/tests/check_joblock: tests/unit/check_joblock.c $(BUILD)/ctld/filing/joblock.o $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)
CTLD_LIB_OBJ := $(filter-out $(BUILD)/ctld/main.o,$(CTLD_OBJ))
$(BUILD)/tests/check_ctld $(BUILD)/tests/check_file_batch $(BUILD)/tests/check_placement \
    $(BUILD)/tests/check_hold \
    $(BUILD)/tests/check_pending: \
    $(BUILD)/tests/check_%: tests/unit/check_%.c $(CTLD_LIB_OBJ) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) $(DAEMON_LDLIBS) -lmunge -lslurm $(HTTP_LIBS) \
	    $(shell pkg-config --libs check)
# The export formatters live in cli/ and are tested without the command's
# main(): check_export links them and the client they share.
EXPORT_LIB_OBJ := $(filter-out $(BUILD)/cli/main.o $(BUILD)/cli/phase.o,$(CLI_OBJ))
$(BUILD)/tests/check_export $(BUILD)/tests/check_cliclient: $(BUILD)/tests/check_%: \
    tests/unit/check_%.c $(EXPORT_LIB_OBJ) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DFIXTURES='"$(CURDIR)/tests/unit/fixtures"' \
	    $(shell pkg-config --cflags check) -o $@ $(filter-out %.h,$^) \
	    $(LDFLAGS) $(LDLIBS) -lmunge $(shell pkg-config --libs check)

# check_conf holds iostage.conf(5) against the key table.
$(BUILD)/tests/check_conf: CPPFLAGS += -DSRCDIR='"$(CURDIR)"'

# `make man`: the key summary of iostage.conf(5) rewritten from the key
# table (common/config/conf_man.c); the page is committed, and check_conf
# fails while it is stale.
CONFMAN := $(BUILD)/scripts/confman
$(CONFMAN): scripts/confman.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LIBCOMMON) $(LDLIBS)
.PHONY: man
man: $(CONFMAN)
	$(CONFMAN) docs/man/iostage.conf.5

deps:
	@scripts/install-deps.sh

unit-bins: $(UNIT_BIN)

# The Python module's tests (tests/python) load the built libiostage.so.
# The examples docs/PYTHON.md shows are the files the tests run. The
# folders keep their layering: common/ includes no program's folder, no
# program another's, and no include cycle (scripts/check-layers.sh).
unit: $(UNIT_BIN) $(LIBIOSTAGE)
	@scripts/check-layers.sh
	@scripts/check-statics.sh
	@scripts/check-doc-examples.sh
	@BUILD=$(BUILD) tests/unit/run.sh $(UNIT_BIN) tests/python/run.py

# `make install` into a DESTDIR with another prefix and sysconfdir than
# the build's, every path the installed files name checked, then `make
# uninstall` (tests/install/test_install.sh; no root, builds in
# $(BUILD)/install-test).
.PHONY: check-install
check-install:
	@BUILD=$(BUILD) tests/install/test_install.sh

# IT_FILES= runs only those test files, IT_SKIP= not the tests it matches
# (tests/releases/run.sh's slurm suite).
IT_FILES ?=
IT_SKIP ?=
integration: all
	@BUILD=$(BUILD) IT_SKIP='$(IT_SKIP)' tests/integration/run.sh $(IT_FILES)

# The multi-node tests: a controller, a login node and three compute nodes
# booted from Linux namespaces on this machine (tests/cluster/cluster.sh).
cluster: all
	@BUILD=$(BUILD) tests/cluster/run.sh

# `make check` installs what it needs, builds, checks the layout (make
# format-check: a file clang-format would change fails it), then unit
# tests and the install test, then each fuzz target for a few seconds (a
# parser that crashes fails here), then integration (one node), then the
# multi-node cluster tests.
# The builds and the fuzz targets use every core (CHECK_JOBS, default
# nproc) unless make was given its own -j.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CHECK_J    := $(if $(filter -j% j%,$(MAKEFLAGS)),,-j$(CHECK_JOBS))
# Every stage builds with the paths the suites install with (prefix=/usr
# sysconfdir=/etc): with the default prefix each suite's `make install`
# changed the compiled-in paths and rebuilt what names them, and the next
# stage changed them back (the fuzz targets, the suites' starts: about a
# minute of each run).
CHECK_PATHS := prefix=/usr sysconfdir=/etc
check:
	@scripts/install-deps.sh
	@$(MAKE) --no-print-directory $(CHECK_J) $(CHECK_PATHS) all $(UNIT_BIN)
	@$(MAKE) --no-print-directory format-check
	@$(MAKE) --no-print-directory $(CHECK_PATHS) unit
	@$(MAKE) --no-print-directory $(CHECK_J) check-install
	@$(MAKE) --no-print-directory $(CHECK_J) $(CHECK_PATHS) fuzz-check FUZZ_JOBS=$(CHECK_JOBS)
	@$(MAKE) --no-print-directory $(CHECK_PATHS) integration
	@$(MAKE) --no-print-directory $(CHECK_PATHS) cluster
	@$(MAKE) --no-print-directory check-slurm SLURM=$(SLURM_NEWEST) \
	    SUITES="unit slurm"

# Slurm releases other than the host's (docs/ADMIN.md, "Slurm releases"):
# `make check-slurm SLURM=24.11` builds the tree with WERROR=1 inside a
# Debian root of that release (made once by mmdebstrap, kept in
# /var/cache/iostage/roots) and runs the unit, one-node and 3-node
# suites there against its own slurmctld and slurmd; SUITES= picks some.
# `make check-releases` does that for every release. `make check` runs
# the newest release's unit suite and the Slurm-facing part of its
# one-node suite (SUITES=slurm: tests/releases/run.sh says which files and
# why) after the host's.
SLURM_NEWEST   := 26.05
SLURM_RELEASES := 22.05 24.11 26.05
SUITES         ?= unit integration cluster
.PHONY: check-slurm check-releases
check-slurm:
	@test -n "$(SLURM)" || { echo "make check-slurm: say which release: SLURM=24.11 (known: $(SLURM_RELEASES))" >&2; exit 2; }
	@CHECK_JOBS=$(CHECK_JOBS) tests/releases/run.sh $(SLURM) $(SUITES)

check-releases:
	@rc=0; for r in $(SLURM_RELEASES); do \
	    CHECK_JOBS=$(CHECK_JOBS) tests/releases/run.sh $$r $(SUITES) || rc=1; done; exit $$rc

# The Debian packages (debian/): built with dpkg-buildpackage (lintian: no
# errors), installed with apt into a fresh Debian root (mmdebstrap), the
# one-node suite run there against the installed files, then purged
# (tests/package/test_package.sh; root, a Debian mirror; PKG_SUITE= another
# release, built in a root of its own). Not part of `make check`.
PKG_SUITE ?=
.PHONY: check-package
check-package:
	@tests/package/test_package.sh $(PKG_SUITE)

# Load on one node (issue 15 item 4; docs/RELIABILITY.md): the full sizes
# of tests/integration/test_load.sh (64 Prologs at once, 1,000 jobs,
# 10,000 scrapes and queries, 100 hostile clients). `make check` runs the
# same tests at reduced counts with the rest of the one-node suite.
LOADGEN := $(BUILD)/tests/loadgen
all: $(LOADGEN)
$(LOADGEN): tests/load/loadgen.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread

.PHONY: load
load: all
	@BUILD=$(BUILD) LOAD_FULL=1 IT_TIMEOUT=$${IT_TIMEOUT:-1800} \
	    tests/integration/run.sh tests/integration/test_load.sh

# kill -9 of iostaged at random points of staging, drain, outbox
# forwarding and eviction, KILL_ITERATIONS (100) times, the invariants
# checked after every restart (tests/integration/test_killsoak.sh; `make
# check` runs it 3 times, docs/RELIABILITY.md).
.PHONY: soak-kill
soak-kill: all
	@KILL_ITERATIONS=$${KILL_ITERATIONS:-100} IT_TIMEOUT=$${IT_TIMEOUT:-7200} \
		BUILD=$(BUILD) tests/integration/run.sh tests/integration/test_killsoak.sh

# Unit tests and the one-node integration suite with every program built
# with ASan + UBSan (build/san); fails on any sanitizer report, leaks at
# exit included (tests/sanitize.sh, docs/RELIABILITY.md).
.PHONY: check-sanitize
check-sanitize:
	@scripts/install-deps.sh
	@BUILD=build/san tests/sanitize.sh

demo:
	@scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

# `make bench` installs the peer tools (bench/install-deps.sh), builds, then
# times staging against cp/rsync/tar/fpsync/rclone; knobs in bench/README.md.
bench:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/run.sh
	@$(MAKE) --no-print-directory bench-history
	@$(MAKE) --no-print-directory bench-telemetry
	@$(MAKE) --no-print-directory bench-sched

# A phase marker's cost from Python against the C API and `iostage phase`
# (bench/phase.sh, issue 27); as root, about a minute; results in
# bench/results/phase-LATEST.{json,txt}.
.PHONY: bench-python
bench-python: all
	@BUILD=$(BUILD) bench/phase.sh

# Time to start with and without placement and pre-staging (issue 13 item
# 5): the test cluster booted twice, the same DLIO-shaped job stream on
# each (bench/sched-replay.sh, knobs there); as root, about 13 minutes;
# results in bench/results/sched-LATEST.{json,txt}.
.PHONY: bench-sched
bench-sched: all
	@BUILD=$(BUILD) bench/sched-replay.sh

# What staging saves over a simulated remote PFS (bench/pfs-bench.sh, issue
# 14): as root; BENCH_SCALE=0.1 for a quick run; results in bench/results/
# pfs-LATEST.{json,txt}. `make check-pfs` only brings the PFS up, checks its
# RTT and cap (bench/pfs.sh selftest, ~15 s) and tears it down.
.PHONY: bench-pfs check-pfs
bench-pfs:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/pfs-bench.sh

check-pfs:
	@bench/install-deps.sh
	@BUILD=$(BUILD) bench/pfs-check.sh

# The cluster's node-local tiers as one cache (issue 29): the 3-node test
# cluster over bench/pfs.sh's GlusterFS, a 1-node job cold, a 1-node job on
# a second node over the same dataset, a 3-node fan-out: seconds until
# staged on every node and bytes read over the PFS's link
# (bench/cluster-cache.sh, knobs there); as root, about 3 minutes; results
# in bench/results/cluster-cache-LATEST.{json,txt};
# BENCH_CC_BASELINE=FILE prints after/before ratios against an earlier run.
.PHONY: bench-cluster-cache
bench-cluster-cache:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/cluster-cache.sh

# What a user gains when a dataset 2.5x one node's tier is spread over the
# job's nodes (issue 29 item 7): the same cluster and PFS, 3-node jobs
# training 3 epochs with a DLIO-shaped reader and a PyTorch DataLoader,
# reading the PFS in place (pfs), a full copy per node (local), and the
# dataset spread (spread) (bench/cluster-spread.sh,
# knobs there); as root, about 10 minutes; results in
# bench/results/cluster-spread-LATEST.{json,txt}.
.PHONY: bench-cluster-spread
bench-cluster-spread:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/cluster-spread.sh

# A spread dataset's local part read through the job's view against the
# part's plain directory, in the same run (issue 29 item 3: 90% or more;
# bench/spread-local.sh); bench-spread-chunks: the same for a node's
# chunks of files too large for one node. As root, about 5 minutes each.
.PHONY: bench-spread-local bench-spread-chunks
bench-spread-local:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) bench/spread-local.sh

bench-spread-chunks:
	@bench/install-deps.sh
	@$(MAKE) --no-print-directory all
	@BENCH_SL_SHAPE=chunks BUILD=$(BUILD) bench/spread-local.sh

# The job history at 1,000,000 jobs: ingest rate, query p99, size on disk
# (bench/history.c; BENCH_HISTORY_ARGS="-n 100000" for a quick run).
BENCH_HISTORY := $(BUILD)/bench/history
$(BENCH_HISTORY): bench/history.c bench/recgen.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter-out %.h,$^) $(LDFLAGS) $(LDLIBS) $(DAEMON_LDLIBS)

# The load generator that plays 1,000 node agents against iostagectld over
# TCP + MUNGE (bench/ctldload.c, driven by bench/history-ctld.sh).
BENCH_CTLDLOAD := $(BUILD)/bench/ctldload
$(BENCH_CTLDLOAD): bench/ctldload.c bench/recgen.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter-out %.h,$^) $(LDFLAGS) $(LDLIBS) -lmunge

# A node's outbox filled as its Epilogs would while the service was away
# (bench/outboxgen.c, for bench/agents-cluster.sh).
BENCH_OUTBOXGEN := $(BUILD)/bench/outboxgen
$(BENCH_OUTBOXGEN): bench/outboxgen.c bench/recgen.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter-out %.h,$^) $(LDFLAGS) $(LDLIBS)

# `make bench-history`: the service over the network (bench/history-ctld.sh,
# knobs there and in bench/README.md: 1,000 generated agents, then the 3
# real node agents of the test cluster), then the node-local history in
# the same run; not part of `make check`.
bench-history: all $(BENCH_HISTORY) $(BENCH_CTLDLOAD) $(BENCH_OUTBOXGEN)
	@BUILD=$(BUILD) bench/history-ctld.sh

# What `make install` puts down and `make uninstall` removes: the same
# lists (tests/install/test_install.sh installs into a DESTDIR with another
# prefix, checks every path the files name, uninstalls and finds nothing
# left). Configuration and text that name installed paths go through
# INSTALL_SUBST: the sources name a plain `make install`'s paths
# (/usr/local, /etc), which it maps to this install's.
INSTALL_SBIN     := iostaged iostage-prolog iostage-epilog iostagectld
INSTALL_PROFILES := $(notdir $(wildcard slurm-conf/profiles/*.json))
INSTALL_EXAMPLES_SUBST := plugstack.conf slurm.conf.snippet cli_filter.lua
INSTALL_EXAMPLES_RAW   := grafana-iostage.json job_submit.lua
INSTALL_MAN      := man1/iostage.1 man5/iostage.conf.5 man8/iostaged.8 \
                    man8/iostage-prolog.8 man8/iostagectld.8 man8/iostage-view.8
INSTALL_UNITS    := iostaged.service iostagectld.service
INSTALL_SUBST     = sed -e 's|/usr/local/share/doc/iostage|$(docdir)|g' \
    -e 's|/usr/local/libexec|$(libexecdir)|g' \
    -e 's|/usr/local/lib/systemd/system|$(systemdunitdir)|g' \
    -e 's|/usr/local/lib/iostage|$(shimlibdir)|g' \
    -e 's|/usr/local/lib/slurm|$(slurmlibdir)|g' -e 's|/usr/local/bin|$(bindir)|g' \
    -e 's|/usr/local/sbin|$(sbindir)|g' -e 's|/etc/slurm|$(sysconfdir)/slurm|g' \
    -e 's|@SBINDIR@|$(sbindir)|g' -e 's|@SYSCONFDIR@|$(sysconfdir)|g' \
    -e 's|@LIBDIR@|$(libdir)|g' -e 's|@BINDIR@|$(bindir)|g'
# $(call INSTALL_TO,SRC,DEST): SRC through INSTALL_SUBST into DEST, 0644
INSTALL_TO        = $(INSTALL_SUBST) $(1) >$(2) && chmod 0644 $(2)

install: all
	install -d $(DESTDIR)$(slurmlibdir) $(DESTDIR)$(sbindir) $(DESTDIR)$(bindir) \
	    $(DESTDIR)$(sysconfdir)/slurm/iostage.d $(DESTDIR)$(docdir)/slurm-conf \
	    $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man5 $(DESTDIR)$(mandir)/man8 \
	    $(DESTDIR)$(systemdunitdir)
	install -m 0755 $(PLUGIN) $(DESTDIR)$(slurmlibdir)/iostage.so
	install -m 0755 $(DAEMON) $(PROLOG) $(EPILOG) $(CTLD) $(DESTDIR)$(sbindir)/
	install -m 0755 $(CLI) $(DESTDIR)$(bindir)/iostage
	install -d $(DESTDIR)$(libexecdir)/iostage
	install -m 0755 $(VIEW) $(DESTDIR)$(IOSTAGE_VIEW_PATH)
	$(call INSTALL_TO,slurm-conf/iostage.conf,$(DESTDIR)$(sysconfdir)/slurm/iostage.conf.example)
	install -m 0644 $(addprefix slurm-conf/profiles/,$(INSTALL_PROFILES)) \
	    $(DESTDIR)$(sysconfdir)/slurm/iostage.d/
	for f in $(INSTALL_EXAMPLES_SUBST); do \
	    $(call INSTALL_TO,slurm-conf/$$f,$(DESTDIR)$(docdir)/slurm-conf/$$f) || exit 1; done
	install -m 0644 $(addprefix slurm-conf/,$(INSTALL_EXAMPLES_RAW)) \
	    $(DESTDIR)$(docdir)/slurm-conf/
	for m in $(INSTALL_MAN); do \
	    $(call INSTALL_TO,docs/man/$${m#*/},$(DESTDIR)$(mandir)/$$m) || exit 1; done
	ln -sf iostage-prolog.8 $(DESTDIR)$(mandir)/man8/iostage-epilog.8
	for u in $(INSTALL_UNITS); do \
	    $(call INSTALL_TO,slurm-conf/$$u,$(DESTDIR)$(systemdunitdir)/$$u) || exit 1; done
	install -m 0644 docs/ADMIN.md $(DESTDIR)$(docdir)/

# Removes the files above, those of install-libiostage and install-shim
# below, and the directories that are iostage's own once empty; never
# iostage.conf (install writes only iostage.conf.example) nor a profile
# the site added.
uninstall:
	rm -f $(DESTDIR)$(slurmlibdir)/iostage.so $(addprefix $(DESTDIR)$(sbindir)/,$(INSTALL_SBIN)) \
	    $(DESTDIR)$(bindir)/iostage $(DESTDIR)$(IOSTAGE_VIEW_PATH) \
	    $(DESTDIR)$(sysconfdir)/slurm/iostage.conf.example \
	    $(addprefix $(DESTDIR)$(sysconfdir)/slurm/iostage.d/,$(INSTALL_PROFILES)) \
	    $(addprefix $(DESTDIR)$(docdir)/slurm-conf/,$(INSTALL_EXAMPLES_SUBST) $(INSTALL_EXAMPLES_RAW)) \
	    $(DESTDIR)$(docdir)/ADMIN.md $(addprefix $(DESTDIR)$(mandir)/,$(INSTALL_MAN)) \
	    $(DESTDIR)$(mandir)/man8/iostage-epilog.8 \
	    $(addprefix $(DESTDIR)$(systemdunitdir)/,$(INSTALL_UNITS)) \
	    $(DESTDIR)$(libdir)/libiostage.so.0 $(DESTDIR)$(libdir)/libiostage.so \
	    $(DESTDIR)$(includedir)/iostage.h $(DESTDIR)$(shimlibdir)/libiostage-preload.so \
	    $(DESTDIR)$(IOSTAGE_LOCALREAD_PATH)
	rm -rf $(DESTDIR)$(pythondir)/iostage
	rmdir $(DESTDIR)$(sysconfdir)/slurm/iostage.d $(DESTDIR)$(docdir)/slurm-conf \
	    $(DESTDIR)$(docdir) $(DESTDIR)$(shimlibdir) $(DESTDIR)$(libexecdir)/iostage \
	    2>/dev/null || true

# --- libiostage.so: the phase-marker API (shim/libiostage.c, shim/iostage.h).
# PMIx gives a task its rank when it is a PMIx client. `iostage phase` uses
# the same code (LIBCOMMON again after it: the archive must follow it).
LIBIOSTAGE     := $(BUILD)/shim/libiostage.so
LIBIOSTAGE_OBJ := $(BUILD)/shim/libiostage.o
PMIX_LIBS      := $(shell pkg-config --libs pmix)

# It is loaded into the user's programs: with SANITIZE=1, UBSan only, like
# the plugin (the CLI links the ASan object).
LIBIOSTAGE_SO_OBJ := $(LIBIOSTAGE_OBJ:$(BUILD)/%=$(if $(filter 1,$(SANITIZE)),$(BUILD)/ubsan/%,$(BUILD)/%))
$(LIBIOSTAGE_OBJ) $(LIBIOSTAGE_SO_OBJ): CPPFLAGS += $(shell pkg-config --cflags pmix)
$(LIBIOSTAGE): $(LIBIOSTAGE_SO_OBJ) $(PLUGIN_COMMON) shim/libiostage.map
	$(CC) -shared $(PLUGIN_LDFLAGS) -Wl,-soname,libiostage.so.0 \
	    -Wl,--version-script=shim/libiostage.map -o $@ \
	    $(LIBIOSTAGE_SO_OBJ) $(PLUGIN_COMMON) $(LDLIBS) $(PMIX_LIBS)
	ln -sf libiostage.so $(@D)/libiostage.so.0
$(CLI): $(LIBIOSTAGE_OBJ)
# Its unit test loads the built library itself, as applications do.
$(BUILD)/tests/check_libiostage: tests/unit/check_libiostage.c $(LIBIOSTAGE)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) -o $@ $< \
	    $(LDFLAGS) -L$(abspath $(BUILD)/shim) -l:libiostage.so \
	    -Wl,-rpath,$(abspath $(BUILD)/shim) -pthread $(shell pkg-config --libs check)
$(CLI): LDLIBS := $(LIBCOMMON) $(LDLIBS) $(PMIX_LIBS)
all: $(LIBIOSTAGE)
# The sampler's unit test runs it on real processes.
$(BUILD)/tests/check_sampler: $(BUILD)/daemon/telemetry/sampler.o
$(BUILD)/tests/check_sampler: LDLIBS := $(LIBCOMMON) $(LDLIBS)
install: install-libiostage
# iostaged's /proc sampling cost: % of one core per 100 tasks (bench/sampler.sh).
.PHONY: bench-telemetry
bench-telemetry: all
	@BUILD=$(BUILD) bench/sampler.sh
.PHONY: install-libiostage
install-libiostage: $(LIBIOSTAGE)
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)
	install -m 0755 $(LIBIOSTAGE) $(DESTDIR)$(libdir)/libiostage.so.0
	ln -sf libiostage.so.0 $(DESTDIR)$(libdir)/libiostage.so
	install -m 0644 shim/iostage.h $(DESTDIR)$(includedir)/iostage.h

# ---- python/iostage: the Python module over libiostage (docs/PYTHON.md).
# _paths.py learns where libiostage.so.0 and the iostage command went.
PYTHON_MODULE := $(wildcard python/iostage/*.py)
install: install-python
.PHONY: install-python
install-python:
	install -d $(DESTDIR)$(pythondir)/iostage
	for f in $(notdir $(PYTHON_MODULE)); do \
	    $(call INSTALL_TO,python/iostage/$$f,$(DESTDIR)$(pythondir)/iostage/$$f) || exit 1; done

# ---- shim/: libiostage-preload.so, the LD_PRELOAD I/O shim (docs/SHIM.md).
# Self-contained: no libcommon, no cJSON in the traced application's address
# space. Its objects are built without _FORTIFY_SOURCE (their functions *are*
# read(), fread(), ...) and without sanitizers (it is loaded into programs
# that are not built with them); only the interposers are exported.
SHIM_PRELOAD_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard shim/preload*.c))
SHIM_PRELOAD     := $(BUILD)/shim/libiostage-preload.so
SHIM_CFLAGS      := $(filter-out -fsanitize=%,$(CFLAGS)) -U_FORTIFY_SOURCE \
                    -fvisibility=hidden
# The plugin injects the library from where `make install` puts it
# (IOSTAGE_SHIM_PATH above; iostage.conf TraceLibrary= overrides).
SHIM_PROBE       := $(BUILD)/tests/shimprobe
SHIM_BENCH       := $(BUILD)/bench/shimbench

.PHONY: shim install-shim bench-shim
all: $(SHIM_PRELOAD)
shim: $(SHIM_PRELOAD)

$(SHIM_PRELOAD_OBJ): $(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SHIM_CFLAGS) -c -o $@ $<

$(SHIM_PRELOAD): $(SHIM_PRELOAD_OBJ)
	$(CC) -shared $(filter-out -fsanitize=%,$(LDFLAGS)) -Wl,-z,defs \
	    -o $@ $(filter-out %.h,$^) -ldl -pthread

# The probe runs under LD_PRELOAD of the shim: like the shim, no
# sanitizers (ASan insists on being the first library loaded).
$(SHIM_PROBE): tests/shim/shimprobe.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(filter-out -fsanitize=%,$(CFLAGS)) -o $@ $< \
	    $(filter-out -fsanitize=%,$(LDFLAGS)) -pthread

# The shim's unit tests run the probe under LD_PRELOAD; they find both here.
$(BUILD)/tests/check_shim: tests/unit/check_shim.c $(SHIM_PRELOAD) $(SHIM_PROBE)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) \
	    -DSHIM_TEST_LIB='"$(abspath $(SHIM_PRELOAD))"' \
	    -DSHIM_TEST_PROBE='"$(abspath $(SHIM_PROBE))"' -o $@ $< \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)

$(SHIM_BENCH): bench/shimbench.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(filter-out -fsanitize=%,$(CFLAGS)) -o $@ $< \
	    $(filter-out -fsanitize=%,$(LDFLAGS))

install: install-shim
install-shim: $(SHIM_PRELOAD)
	install -d $(DESTDIR)$(shimlibdir)
	install -m 0755 $(SHIM_PRELOAD) $(DESTDIR)$(shimlibdir)/libiostage-preload.so

# ---- localread/: libiostage-localread.so, which reads this node's chunks
# of a spread dataset's cut files straight from their files in the job's
# tasks (localread/localread.h; docs/STAGING.md, "Reading a node's own
# chunks"). Built as the shim is: no sanitizers, no _FORTIFY_SOURCE, only
# the interposers exported, no libcommon but the two files it shares with
# the view (the attribute's format, openat2 beneath), compiled here on
# their own with these flags.
LOCALREAD_SRC := $(wildcard localread/*.c) common/fs/chunkxattr.c \
                 common/fs/beneath.c
LOCALREAD_OBJ := $(patsubst %.c,$(BUILD)/localread-obj/%.o,$(LOCALREAD_SRC))
LOCALREAD     := $(BUILD)/localread/libiostage-localread.so

.PHONY: localread install-localread
all: $(LOCALREAD)
localread: $(LOCALREAD)

$(LOCALREAD_OBJ): $(BUILD)/localread-obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SHIM_CFLAGS) -c -o $@ $<

$(LOCALREAD): $(LOCALREAD_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared $(filter-out -fsanitize=%,$(LDFLAGS)) -Wl,-z,defs \
	    -o $@ $(filter-out %.h,$^) -ldl -pthread

# Its test mounts a real view and runs the probe under LD_PRELOAD of the
# library (as the shim's test does: no sanitizers in the probe).
LOCALREAD_PROBE := $(BUILD)/tests/lrprobe
$(LOCALREAD_PROBE): tests/localread/lrprobe.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(filter-out -fsanitize=%,$(CFLAGS)) -o $@ $< \
	    $(filter-out -fsanitize=%,$(LDFLAGS)) -pthread
$(BUILD)/tests/check_localread: tests/unit/check_localread.c $(LOCALREAD) \
    $(LOCALREAD_PROBE) $(VIEW) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(shell pkg-config --cflags check) \
	    -DLOCALREAD_TEST_LIB='"$(abspath $(LOCALREAD))"' \
	    -DLOCALREAD_TEST_PROBE='"$(abspath $(LOCALREAD_PROBE))"' \
	    -DVIEW_TEST_PROGRAM='"$(abspath $(VIEW))"' -o $@ $< $(LIBCOMMON) \
	    $(LDFLAGS) $(LDLIBS) $(shell pkg-config --libs check)

install: install-localread
install-localread: $(LOCALREAD)
	install -d $(DESTDIR)$(shimlibdir)
	install -m 0755 $(LOCALREAD) $(DESTDIR)$(IOSTAGE_LOCALREAD_PATH)

# Shim on vs off: metadata-heavy and bulk reads (bench/shim.sh, knobs there).
# About a minute; `make bench` runs it before the staging benchmarks.
bench-shim: $(SHIM_PRELOAD) $(SHIM_BENCH)
	@BUILD=$(BUILD) bench/shim.sh
bench: bench-shim

clean:
	rm -rf $(BUILD)

# The layout .clang-format describes (docs/ARCHITECTURE.md, "Build"):
# `make format` rewrites every C file of the tree to it,
# `make format-check` (run by `make check`) names the files that differ.
# Both take the files from scripts/check-format.sh (--list shows them).
format:
	@scripts/check-format.sh --fix

format-check:
	@scripts/check-format.sh

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- tests/fuzz/: libFuzzer targets for every parser of outside input
# (docs/RELIABILITY.md). Built with clang, ASan and UBSan in a build tree of
# their own; tests/fuzz/run.sh runs each target FUZZ_SECONDS (or to
# FUZZ_RUNS executions) from its seed corpus (tests/fuzz/corpus/TARGET) and
# fails on any crash, leak or hang. `make check` runs each for
# FUZZ_CHECK_SECONDS.
FUZZ_BUILD    ?= build/fuzz
FUZZ_RUNS     ?=
FUZZ_SECONDS  ?= $(if $(FUZZ_RUNS),0,60)
FUZZ_CHECK_SECONDS ?= 3
# targets fuzzed at once (tests/fuzz/run.sh)
FUZZ_JOBS     ?= 1
FUZZ_SRC      := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN      := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
.PHONY: fuzz fuzz-bins fuzz-check

ifeq ($(FUZZ),1)
CFLAGS  += -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
           -fno-sanitize-recover=undefined
endif

# Every daemon and service module but main(), so a target drives the real
# handlers through their headers (no target #includes a .c file).
$(LIBDAEMON): $(filter-out $(BUILD)/daemon/main.o,$(DAEMON_OBJ))
	rm -f $@ && $(AR) rcs $@ $^
$(LIBCTLD): $(filter-out $(BUILD)/ctld/main.o,$(CTLD_OBJ))
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(LIBDAEMON) $(LIBCTLD) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(shell pkg-config --cflags $(DAEMON_PKGS)) $(CFLAGS) \
	    -DFUZZ_SRCDIR='"$(CURDIR)"' -fsanitize=fuzzer -o $@ $< \
	    -Wl,--start-group $(LIBDAEMON) $(LIBCTLD) $(LIBCOMMON) -Wl,--end-group \
	    $(LDFLAGS) -fsanitize=fuzzer,address,undefined $(LDLIBS) $(DAEMON_LDLIBS) \
	    -lmunge -lslurm $(shell pkg-config --libs $(DAEMON_PKGS))

fuzz-bins: $(FUZZ_BIN)

fuzz:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang FUZZ=1 fuzz-bins
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) \
	    FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh

fuzz-check:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_CHECK_SECONDS) FUZZ_RUNS=
