// params.cu - the kernels of the fixtures params_sm90.cubin and params.ptx,
// read by test_kernel_image.c. Rebuilt with (CUDA 13.0):
//   nvcc -cubin -arch=sm_90 -o params_sm90.cubin params.cu
//   nvcc -ptx -arch=sm_90 -o params.ptx params.cu
struct S {
  int a;
  double b;
  char c;
};
extern "C" __global__ void tiny(int *p, size_t n, S s, char c, short h) {
  if (n) p[0] = s.a + c + h;
}
extern "C" __global__ void other(float *q) { q[0] = 1; }
extern "C" __global__ void none() {}
