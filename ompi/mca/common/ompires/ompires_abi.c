/*
 * ompi-resilience: ABI check against the running Open MPI (see ompires_abi.h).
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "opal/class/opal_object.h"
#include "opal/util/show_help.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"

#include "ompi/mca/common/ompires/ompires_abi.h"

#ifndef OMPIRES_HELP_DIR
#error "OMPIRES_HELP_DIR must name the directory our help files are installed in"
#endif

#define OMPIRES_STR2(x) #x
#define OMPIRES_STR(x) OMPIRES_STR2(x)
#define OMPIRES_BUILT_VERSION                                                             \
    OMPIRES_STR(OMPI_MAJOR_VERSION) "." OMPIRES_STR(OMPI_MINOR_VERSION) "." OMPIRES_STR( \
        OMPI_RELEASE_VERSION)

void ompires_add_help_dir(void)
{
    static bool added = false;

    if (!added) {
        (void) opal_show_help_add_dir(OMPIRES_HELP_DIR);
        added = true;
    }
}

struct ompires_class_size {
    const char *name;
    const opal_class_t *cls;
    size_t built;
};

bool ompires_abi_check(const char *component)
{
    const struct ompires_class_size classes[] = {
        {"opal_object_t", &opal_object_t_class, sizeof(opal_object_t)},
        {"ompi_communicator_t", &ompi_communicator_t_class, sizeof(ompi_communicator_t)},
        {"ompi_request_t", &ompi_request_t_class, sizeof(ompi_request_t)},
        {"ompi_datatype_t", &ompi_datatype_t_class, sizeof(ompi_datatype_t)},
        {"ompi_op_t", &ompi_op_t_class, sizeof(ompi_op_t)},
    };
    char what[512] = "";

    if (0 != strcmp(ompi_version_string, OMPIRES_BUILT_VERSION)) {
        snprintf(what, sizeof(what), "Open MPI version: built against %s, running %s",
                 OMPIRES_BUILT_VERSION, ompi_version_string);
    } else {
        for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
            if (classes[i].cls->cls_sizeof != classes[i].built) {
                snprintf(what, sizeof(what),
                         "size of %s: built with %zu bytes, the running library has %zu "
                         "(a debug, non-ULFM or otherwise differently configured build)",
                         classes[i].name, classes[i].built, classes[i].cls->cls_sizeof);
                break;
            }
        }
    }
    if ('\0' == what[0]) {
        return true;
    }
    ompires_add_help_dir();
    opal_show_help("help-ompi-resilience.txt", "abi-mismatch", true, component, what,
                   OMPIRES_BUILT_VERSION);
    return false;
}
