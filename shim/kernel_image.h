/* kernel_image.h - kernel parameter layouts read from a module image, for
 * drivers without cuFuncGetParamInfo (before 12.4). Pure: no driver, no
 * shim state; tests/unit/test_kernel_image.c runs it on PTX and cubins.
 */
#ifndef AC_KERNEL_IMAGE_H
#define AC_KERNEL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define AC_IMAGE_MAX_PARAMS 128
#define AC_IMAGE_MAX_NAME 96

struct ac_image_kernel {
  char name[AC_IMAGE_MAX_NAME];
  int count; /* parameters; -1 when the image names the kernel but its layout cannot be read */
  uint32_t offset[AC_IMAGE_MAX_PARAMS], size[AC_IMAGE_MAX_PARAMS];
};

/* Called once per kernel of the image; k is valid during the call only. */
typedef void (*ac_image_kernel_fn)(void *ctx, const struct ac_image_kernel *k);

/* Reads the kernels of image: PTX text (each .entry's parameter list, laid
 * out as the driver does: each at its alignment) or an ELF cubin (each
 * .nv.info.NAME section's EIATTR_KPARAM_INFO records), or a fatbin (or the
 * runtime's wrapper of one) holding either uncompressed. Returns how many
 * kernels were found, or -1 when none of these could be read (a fatbin
 * whose entries are all compressed, say). */
int ac_image_kernels(const void *image, ac_image_kernel_fn fn, void *ctx);

#endif
