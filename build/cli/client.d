build/cli/client.o: cli/client.c cli/client.h /usr/include/cjson/cJSON.h \
 common/conf.h common/proto.h
cli/client.h:
/usr/include/cjson/cJSON.h:
common/conf.h:
common/proto.h:
