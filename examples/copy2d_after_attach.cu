// copy2d_after_attach.cu - a synchronous 2D copy from managed memory right
// after attaching it globally on the NULL stream, as NVIDIA's
// NV12toBGRandResize sample does with its managed-memory option. The driver
// reads the source through the CPU mapping during the copy; the program is
// correct, so attachcheck must find nothing.
#include <cstdio>
#include <cstring>

int main() {
  const size_t width = 1920, height = 1080, pitch = 2048;
  unsigned char *host, *dev;
  size_t dev_pitch;
  if (cudaMallocManaged(&host, pitch * height) != cudaSuccess ||
      cudaMallocPitch(&dev, &dev_pitch, width, height) != cudaSuccess)
    return 1;
  if (cudaStreamAttachMemAsync(nullptr, host, 0, cudaMemAttachGlobal) != cudaSuccess) return 1;
  if (cudaStreamSynchronize(nullptr) != cudaSuccess) return 1;
  std::memset(host, 7, pitch * height);
  for (int i = 0; i < 10; i++) {
    if (cudaStreamAttachMemAsync(nullptr, host, 0, cudaMemAttachGlobal) != cudaSuccess) return 1;
    if (cudaMemcpy2D(dev, dev_pitch, host, pitch, width, height, cudaMemcpyHostToDevice) !=
        cudaSuccess)
      return 1;
  }
  unsigned char back[16];
  if (cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  std::printf("copy2d_after_attach: %d\n", back[0]);
  return back[0] == 7 ? 0 : 1;
}
