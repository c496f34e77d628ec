/* Reading a caller's options struct (docs/API.md, "Options structs"): the one place that knows the
   struct_size rule. */
#include <string.h>

#include "core/core.h"

int mpk_options_read(void *local, size_t size, size_t align, size_t base_size, const void *given, const char *type,
                     mpk_error *err) {
  memset(local, 0, size);
  size_t have = 0;
  if (given) {
    memcpy(&have, given, sizeof have); /* struct_size, the first field of every options struct */
    if (have == 0) have = base_size;
    else if (have < sizeof(size_t) || have % align)
      return mpk_fail(err, MPK_EINVAL, NULL, NULL,
                      "%s.struct_size %zu is not the size of any layout of the struct: set it with the _INIT "
                      "initializer (or sizeof)",
                      type, have);
    /* A caller built against a later header: the fields this library does not know must be left at
       their defaults (zero), or the caller asked for something this version cannot do. */
    for (size_t i = size; i < have; i++)
      if (((const unsigned char *)given)[i])
        return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL,
                        "%s: a field past the %zu bytes this library (%s) knows is set (struct_size %zu)", type,
                        size, MPK_VERSION_STRING, have);
    memcpy(local, given, have < size ? have : size);
  }
  memcpy(local, &size, sizeof size);
  return 0;
}
