// cpp_frames.cpp - a C++ program whose mistake is made inside a template in a
// namespace, called from a static function: its report must name the frames
// demangled, give the source file and line of each, and (with --strip-paths)
// the file relative to the checkout.
#include <cuda.h>

namespace model {
template <typename T> struct buffer {
  CUdeviceptr where;
  void attach_to_legacy_stream() {
    cuStreamAttachMemAsync(CU_STREAM_LEGACY, where, 0, CU_MEM_ATTACH_SINGLE); // AC101 here
  }
};
} // namespace model

static int run() {
  CUdevice dev;
  CUcontext ctx;
  model::buffer<float> b;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuMemAllocManaged(&b.where, 4096, CU_MEM_ATTACH_GLOBAL))
    return 1;
  b.attach_to_legacy_stream();
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1;
}

int main() {
  return run();
}
