/* Feasibility probe for issue 41 (not used by vitjax): Swin's batched window products as one OpenBLAS
 * sgemm per window and head, the batch split over OpenMP threads, against numpy's own OpenBLAS.
 * Build and run: see probe.py's docstring. c[i] = a[i] (m x k) @ op(b[i]) for i < batch;
 * tb = 111: b[i] is k x n; tb = 112: b[i] is n x k, transposed (the score product q k^T). */
#include <stdint.h>

void scipy_cblas_sgemm64_(int order, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                          int64_t ldc);

void batched(const float *a, const float *b, float *c, int64_t batch, int64_t m, int64_t n, int64_t k, int tb) {
  int64_t ldb = tb == 112 ? k : n;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < batch; i++)
    scipy_cblas_sgemm64_(101, 111, tb, m, n, k, 1.0f, a + i * m * k, k, b + i * n * k, ldb, 0.0f, c + i * m * n, n);
}
