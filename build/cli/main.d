build/cli/main.o: cli/main.c cli/client.h /usr/include/cjson/cJSON.h \
 cli/status.h
cli/client.h:
/usr/include/cjson/cJSON.h:
cli/status.h:
