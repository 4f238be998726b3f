build/spank/submit.o: spank/submit.c common/conf.h common/profile.h \
 spank/options.h spank/submit.h
common/conf.h:
common/profile.h:
spank/options.h:
spank/submit.h:
