// params.cu - the kernels of the fixtures next to it, read by
// test_kernel_image.c. Rebuilt with (CUDA 13.0):
//   nvcc -cubin -arch=sm_90 -o params_sm90.cubin params.cu
//   nvcc -ptx -arch=sm_90 -o params.ptx params.cu
//   nvcc -fatbin -arch=sm_90 -o params_sm90.fatbin params.cu      (cubin plain, PTX compressed)
//   nvcc -fatbin -gencode arch=compute_90,code=compute_90 -o params_ptx_only.fatbin params.cu
//                                                                  (only a compressed PTX)
struct S {
  int a;
  double b;
  char c;
};
extern "C" __global__ void tiny(int *p, size_t n, S s, char c, short h) {
  if (n) p[0] = s.a + c + h;
}
extern "C" __global__ void other(float *q) {
  q[0] = 1;
}
extern "C" __global__ void none() {}
