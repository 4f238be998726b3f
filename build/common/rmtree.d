build/common/rmtree.o: common/rmtree.c common/rmtree.h
common/rmtree.h:
