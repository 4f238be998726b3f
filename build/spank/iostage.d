build/spank/iostage.o: spank/iostage.c spank/options.h common/conf.h \
 spank/submit.h spank/task.h
spank/options.h:
common/conf.h:
spank/submit.h:
spank/task.h:
