build/spank/task.o: spank/task.c /usr/include/cjson/cJSON.h common/conf.h \
 common/joblayout.h common/profile.h common/proto.h spank/options.h \
 spank/task.h
/usr/include/cjson/cJSON.h:
common/conf.h:
common/joblayout.h:
common/profile.h:
common/proto.h:
spank/options.h:
spank/task.h:
