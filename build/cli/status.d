build/cli/status.o: cli/status.c cli/status.h cli/client.h \
 /usr/include/cjson/cJSON.h common/units.h
cli/status.h:
cli/client.h:
/usr/include/cjson/cJSON.h:
common/units.h:
