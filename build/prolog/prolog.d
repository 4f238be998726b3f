build/prolog/prolog.o: prolog/prolog.c /usr/include/cjson/cJSON.h \
 common/conf.h common/log.h common/profile.h common/proto.h \
 prolog/jobctl.h prolog/jobinfo.h
/usr/include/cjson/cJSON.h:
common/conf.h:
common/log.h:
common/profile.h:
common/proto.h:
prolog/jobctl.h:
prolog/jobinfo.h:
