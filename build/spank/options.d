build/spank/options.o: spank/options.c common/profile.h common/conf.h \
 spank/options.h
common/profile.h:
common/conf.h:
spank/options.h:
