"""Where `make install` put iostage's library and command.

The source tree holds the placeholders; `make install` writes the
installed copy with the real directories (Makefile, install-python).
"""

LIBDIR = "@LIBDIR@"
BINDIR = "@BINDIR@"
