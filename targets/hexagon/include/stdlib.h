/* stdlib.h: the subset platform.c defines. */
#ifndef MMTUNE_HEXAGON_STDLIB_H
#define MMTUNE_HEXAGON_STDLIB_H
#include <stddef.h>
void* malloc(size_t n);
void free(void* p);
void* calloc(size_t count, size_t size);
void* realloc(void* p, size_t n);
void abort(void) __attribute__((noreturn));
int atoi(const char* s);
char* getenv(const char* name);
#endif
