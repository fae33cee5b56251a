/* string.h: the subset platform.c defines (freestanding Hexagon builds
 * have no libc headers; HalideRuntime.h includes this in C). */
#ifndef MMTUNE_HEXAGON_STRING_H
#define MMTUNE_HEXAGON_STRING_H
#include <stddef.h>
void* memcpy(void* restrict dst, const void* restrict src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
void* memset(void* dst, int c, size_t n);
int memcmp(const void* a, const void* b, size_t n);
size_t strlen(const char* s);
int strcmp(const char* a, const char* b);
int strncmp(const char* a, const char* b, size_t n);
char* strncpy(char* dst, const char* src, size_t n);
#endif
