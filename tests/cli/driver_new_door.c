/* driver_new_door.c - a driver that exports an entry point no header of this
 * toolkit declares, as a newer driver would, beside names the real driver
 * exports that only a header's macro or the table's undeclared rows account
 * for: check_driver_api.py given it as DRIVER must fail for the first alone
 * (ctest shim.driver_api_new_door). */
int cuStreamNewDoorAsync(void *stream);
int cuGLCtxCreate_v2(void *ctx);
int cuGLMapBufferObject_v2_ptds(void *ptr);
int cuGLMapBufferObjectAsync_v2_ptsz(void *ptr);
int cuMemGetAttribute_v2(void *value);

int cuStreamNewDoorAsync(void *stream) {
  return stream != 0;
}
/* cudaGL.h: #define cuGLCtxCreate cuGLCtxCreate_v2 */
int cuGLCtxCreate_v2(void *ctx) {
  return ctx != 0;
}
/* cudaGL.h: __CUDA_API_PTDS(cuGLMapBufferObject_v2) */
int cuGLMapBufferObject_v2_ptds(void *ptr) {
  return ptr != 0;
}
/* cudaGL.h: __CUDA_API_PTSZ(cuGLMapBufferObjectAsync_v2) */
int cuGLMapBufferObjectAsync_v2_ptsz(void *ptr) {
  return ptr != 0;
}
/* An undeclared row of shim/driver_api.inc. */
int cuMemGetAttribute_v2(void *value) {
  return value != 0;
}
