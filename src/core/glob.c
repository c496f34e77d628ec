/* Download-plan patterns: a package-relative path, or a directory followed by slash-star-star for
   every file under it. Nothing else: a manifest with any other glob form is refused, so two
   readers cannot disagree. */
#include <string.h>

#include "core/core.h"

int mpk_pattern_valid(const char *pattern) {
  if (!pattern) return 0;
  size_t n = strlen(pattern);
  const char *why;
  if (n > 3 && strcmp(pattern + n - 3, "/**") == 0) {
    char dir[4096];
    if (n - 3 >= sizeof dir) return 0;
    memcpy(dir, pattern, n - 3);
    dir[n - 3] = '\0';
    return mpk_path_is_confined(dir, &why) && !strpbrk(dir, "*?[]{}");
  }
  return mpk_path_is_confined(pattern, &why) && !strpbrk(pattern, "*?[]{}");
}

int mpk_pattern_matches(const char *pattern, const char *path) {
  if (!mpk_pattern_valid(pattern) || !path) return 0;
  size_t n = strlen(pattern);
  if (n > 3 && strcmp(pattern + n - 3, "/**") == 0)
    return strncmp(path, pattern, n - 2) == 0 && path[n - 2] != '\0'; /* prefix includes the '/' */
  return strcmp(pattern, path) == 0;
}
