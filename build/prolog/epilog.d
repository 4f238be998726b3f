build/prolog/epilog.o: prolog/epilog.c /usr/include/cjson/cJSON.h \
 common/conf.h common/log.h common/proto.h prolog/jobinfo.h
/usr/include/cjson/cJSON.h:
common/conf.h:
common/log.h:
common/proto.h:
prolog/jobinfo.h:
