#include "core.h"

const char *mpk_version(void) { return MPK_VERSION_STRING; }
int mpk_version_number(void) { return MPK_VERSION_NUMBER; }
