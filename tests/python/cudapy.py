"""cudapy.py - what the Python clients share: a context, a module with one
kernel that increments the int its pointer argument points at, launches,
and CPU reads and writes of managed memory through ctypes (a plain load or
store, as NumPy's would be). Everything goes through cuda.bindings.driver,
which reaches the driver through cuGetProcAddress - the door attachcheck
must answer for Python programs."""
import ctypes

from cuda.bindings import driver as cu

PTX = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry increment(.param .u64 p)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [%rd2];
  add.s32 %r2, %r1, 1;
  st.global.u32 [%rd2], %r2;
  ret;
}
"""

GLOBAL = cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL.value
HOST = cu.CUmemAttach_flags.CU_MEM_ATTACH_HOST.value
SINGLE = cu.CUmemAttach_flags.CU_MEM_ATTACH_SINGLE.value
NON_BLOCKING = cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value


def ok(result):
    """The values of a cuda.bindings call, raising on an error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA call failed: {err}")
    return values[0] if len(values) == 1 else values


def start():
    ok(cu.cuInit(0))
    device = ok(cu.cuDeviceGet(0))
    context = ok(cu.cuDevicePrimaryCtxRetain(device))
    ok(cu.cuCtxSetCurrent(context))
    module = ok(cu.cuModuleLoadData(PTX))
    return ok(cu.cuModuleGetFunction(module, b"increment"))


def stream():
    return ok(cu.cuStreamCreate(NON_BLOCKING))


def managed(size=1 << 16, flags=GLOBAL):
    return ok(cu.cuMemAllocManaged(size, flags))


def launch(kernel, on, pointer):
    args = ((int(pointer),), (ctypes.c_void_p,))
    ok(cu.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, on, args, 0))


def cpu_read(pointer):
    return ctypes.c_int.from_address(int(pointer)).value


def cpu_write(pointer, value):
    ctypes.c_int.from_address(int(pointer)).value = value
