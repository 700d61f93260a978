/* sparse_tile.h - one 128 x 128 tile of a new sparse 2D array of floats,
 * backed by physical memory and mapped on a stream: what the conformance
 * program checks and a scenario uses as stream work that names no managed
 * memory. Returns the first call's failure, or CUDA_SUCCESS. */
#ifndef SPARSE_TILE_H
#define SPARSE_TILE_H
#include <cuda.h>

static inline CUarrayMapInfo sparse_tile_info(CUarray array, CUmemGenericAllocationHandle tiles) {
  CUarrayMapInfo map = {
      .resourceType = CU_RESOURCE_TYPE_ARRAY,
      .resource.array = array,
      .subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL,
      .subresource.sparseLevel = {.extentWidth = 128, .extentHeight = 128, .extentDepth = 1},
      .memOperationType = CU_MEM_OPERATION_TYPE_MAP,
      .memHandleType = CU_MEM_HANDLE_TYPE_GENERIC,
      .memHandle.memHandle = tiles,
      .deviceBitMask = 1};
  return map;
}

static inline CUresult sparse_tile_map(CUstream s, CUarray *array,
                                       CUmemGenericAllocationHandle *tiles) {
  CUDA_ARRAY3D_DESCRIPTOR desc = {.Width = 1024,
                                  .Height = 1024,
                                  .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1,
                                  .Flags = CUDA_ARRAY3D_SPARSE};
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0},
                              .allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL};
  size_t granularity = 0;
  CUresult r = cuArray3DCreate(array, &desc);
  if (r == CUDA_SUCCESS)
    r = cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r == CUDA_SUCCESS) r = cuMemCreate(tiles, granularity, &prop, 0);
  if (r != CUDA_SUCCESS) return r;
  CUarrayMapInfo map = sparse_tile_info(*array, *tiles);
  return cuMemMapArrayAsync(&map, 1, s);
}
#endif
