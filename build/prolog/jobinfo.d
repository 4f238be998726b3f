build/prolog/jobinfo.o: prolog/jobinfo.c prolog/jobinfo.h
prolog/jobinfo.h:
