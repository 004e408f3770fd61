/*
 * ompi-resilience: pml/dr2 paths by where their NIC is (see pml_dr2_locality.h).
 */
#include "pml_dr2_locality.h"

const char *pml_dr2_nic_distance_name(int distance)
{
    switch (distance) {
    case PML_DR2_NIC_NEAR:
        return "near";
    case PML_DR2_NIC_PARTLY:
        return "partly near";
    case PML_DR2_NIC_FAR:
        return "far";
    default:
        return "unknown";
    }
}

void pml_dr2_path_weights(const double *advertised, int n, double *weight)
{
    double heaviest = 0.0;

    for (int i = 0; i < n; i++) {
        if (advertised[i] > heaviest) {
            heaviest = advertised[i];
        }
    }
    for (int i = 0; i < n; i++) {
        if (advertised[i] > 0.0) {
            weight[i] = advertised[i];
        } else {
            weight[i] = heaviest > 0.0 ? heaviest : 1.0;
        }
    }
}

/* Another path of the same kind as paths[i], up, with a NIC known to be nearer. */
static bool nearer_alternative_up(const pml_dr2_path_state_t *paths, int n, int i)
{
    if (paths[i].nic_distance < 0) {
        return false;
    }
    for (int j = 0; j < n; j++) {
        if (j != i && paths[j].up && paths[j].kind == paths[i].kind
            && paths[j].nic_distance >= 0 && paths[j].nic_distance < paths[i].nic_distance) {
            return true;
        }
    }
    return false;
}

int pml_dr2_paths_apply_locality(pml_dr2_path_state_t *paths, int n)
{
    int standing_by = 0;

    for (int i = 0; i < n; i++) {
        paths[i].standby = nearer_alternative_up(paths, n, i);
        standing_by += paths[i].standby;
    }
    return standing_by;
}
