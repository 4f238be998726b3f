build/prolog/jobctl.o: prolog/jobctl.c prolog/jobctl.h
prolog/jobctl.h:
