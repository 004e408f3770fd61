/*
 * ompi-resilience: refuse to run inside an Open MPI whose ABI differs from the one a
 * component was compiled against.
 *
 * Our components are built out of tree against one Open MPI's internal headers and then
 * dlopen()ed by whatever libmpi the job runs with. If that libmpi was configured
 * differently (a debug build changes opal_object_t, a build without ULFM changes
 * ompi_communicator_t, another release may change anything), every structure we touch
 * would be misread. The check compares the version string and the sizes that libmpi's
 * own class descriptors record with the sizes this component was compiled with.
 */
#ifndef OMPIRES_ABI_H
#define OMPIRES_ABI_H

#include <stdbool.h>

/* Returns true if the running Open MPI matches the build. Otherwise prints a show_help
 * message naming `component` (e.g. "coll ftrabit") and what differs, and returns false. */
bool ompires_abi_check(const char *component);

/* Make our help files findable by opal_show_help (idempotent). */
void ompires_add_help_dir(void);

#endif
