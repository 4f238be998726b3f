build/common/copytree.o: common/copytree.c common/copytree.h
common/copytree.h:
