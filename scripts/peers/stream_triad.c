/* McCalpin-STREAM-style reference: static arrays of STREAM_ARRAY_SIZE doubles each, OpenMP
 * parallel-for loops with the default (static) schedule, parallel initialisation, NTIMES passes
 * per kernel and the best time excluding the first pass; bandwidth counts bytes read + written
 * (triad 3 arrays, copy 2), 1 GB = 1e9 bytes. A condensed rewrite of the method of stream.c.
 * Build: gcc -O3 -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE=N stream_triad.c */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>

#ifndef STREAM_ARRAY_SIZE
#define STREAM_ARRAY_SIZE 10000000
#endif
#define NTIMES 10

static double a[STREAM_ARRAY_SIZE], b[STREAM_ARRAY_SIZE], c[STREAM_ARRAY_SIZE];

int main(void) {
  const long n = STREAM_ARRAY_SIZE;
  const double scalar = 3.0;
  double best[4] = {FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX};
  const double words[4] = {2, 2, 3, 3};
  const char* names[4] = {"copy", "scale", "add", "triad"};
  long j;
#pragma omp parallel for
  for (j = 0; j < n; j++) {
    a[j] = 1.0;
    b[j] = 2.0;
    c[j] = 0.0;
  }
  for (int k = 0; k < NTIMES; k++) {
    double t[4];
    t[0] = omp_get_wtime();
#pragma omp parallel for
    for (j = 0; j < n; j++) c[j] = a[j];
    t[0] = omp_get_wtime() - t[0];
    t[1] = omp_get_wtime();
#pragma omp parallel for
    for (j = 0; j < n; j++) b[j] = scalar * c[j];
    t[1] = omp_get_wtime() - t[1];
    t[2] = omp_get_wtime();
#pragma omp parallel for
    for (j = 0; j < n; j++) c[j] = a[j] + b[j];
    t[2] = omp_get_wtime() - t[2];
    t[3] = omp_get_wtime();
#pragma omp parallel for
    for (j = 0; j < n; j++) a[j] = b[j] + scalar * c[j];
    t[3] = omp_get_wtime() - t[3];
    if (k > 0) {
      for (int i = 0; i < 4; i++) best[i] = t[i] < best[i] ? t[i] : best[i];
    }
  }
  /* Validation as in stream.c: replay the scalar recurrences. */
  double aj = 1.0, bj = 2.0, cj = 0.0;
  for (int k = 0; k < NTIMES; k++) {
    cj = aj;
    bj = scalar * cj;
    cj = aj + bj;
    aj = bj + scalar * cj;
  }
  double err = 0;
  for (j = 0; j < n; j += 997)
    err += fabs(a[j] - aj) / aj + fabs(b[j] - bj) / bj + fabs(c[j] - cj) / cj;
  if (err > 1e-10) {
    fprintf(stderr, "validation failed: %g\n", err);
    return 1;
  }
  printf("threads %d\narray_bytes %ld\n", omp_get_max_threads(), n * (long)sizeof(double));
  for (int i = 0; i < 4; i++) {
    printf("%s_Bps %.6e\n", names[i], words[i] * sizeof(double) * n / best[i]);
  }
  return 0;
}
