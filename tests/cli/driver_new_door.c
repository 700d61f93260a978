/* driver_new_door.c - a driver that exports an entry point no header of this
 * toolkit declares, as a newer driver would: check_driver_api.py given it as
 * DRIVER must fail (ctest shim.driver_api_new_door). */
int cuStreamNewDoorAsync(void *stream);
int cuStreamNewDoorAsync(void *stream) {
  return stream != 0;
}
