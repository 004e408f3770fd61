/*
 * ompi-resilience: coll/ftrabit warm spares, placement and assignment, and where respawned
 * replacements go (pure logic).
 * The rules are in ftrabit_spare_plan.h. Sizes are small (processes of one job), so the
 * searches are plain loops: clarity over asymptotics.
 */
#include <stdlib.h>
#include <string.h>

#include "ftrabit_spare_plan.h"

/* Hosts as indices 0..nhosts-1 in order of first appearance: index[i] for entry i. */
static int ftrabit_host_indices(const int *host, int n, int *index)
{
    int nhosts = 0;

    for (int i = 0; i < n; i++) {
        index[i] = -1;
        for (int j = 0; j < i; j++) {
            if (host[j] == host[i]) {
                index[i] = index[j];
                break;
            }
        }
        if (index[i] < 0) {
            index[i] = nhosts++;
        }
    }
    return nhosts;
}

/* The host the next spare goes to (see the header), or -1 if no host has a process left. */
static int ftrabit_next_spare_host(const int *spares, const int *left, int nhosts)
{
    int min_left = 1, best = -1;

    for (int h = 0; h < nhosts; h++) {
        if (left[h] >= 2) {
            min_left = 2; /* hosts down to their last process are spared while others are not */
        }
    }
    for (int h = 0; h < nhosts; h++) {
        if (left[h] < min_left) {
            continue;
        }
        if (best < 0 || spares[h] < spares[best]
            || (spares[h] == spares[best] && left[h] >= left[best])) {
            best = h; /* ">=": the last host wins a full tie */
        }
    }
    return best;
}

int ftrabit_spare_place(const int *host, int world_size, int nspares, int *app_rank)
{
    if (NULL == host || NULL == app_rank || world_size < 1 || nspares < 0
        || nspares >= world_size) {
        return FTRABIT_SPARE_PLAN_INVALID;
    }
    int *index = malloc(sizeof(int) * (size_t) world_size);
    int *spares = calloc((size_t) world_size, sizeof(int));
    int *left = calloc((size_t) world_size, sizeof(int));
    if (!index || !spares || !left) {
        free(index);
        free(spares);
        free(left);
        return FTRABIT_SPARE_PLAN_NOMEM;
    }
    int nhosts = ftrabit_host_indices(host, world_size, index);
    for (int w = 0; w < world_size; w++) {
        left[index[w]]++;
        app_rank[w] = 0; /* 0: application, -1: spare; numbered below */
    }
    for (int s = 0; s < nspares; s++) {
        int h = ftrabit_next_spare_host(spares, left, nhosts);
        for (int w = world_size - 1; w >= 0; w--) {
            if (index[w] == h && 0 == app_rank[w]) {
                app_rank[w] = -1;
                break;
            }
        }
        spares[h]++;
        left[h]--;
    }
    for (int w = 0, next = 0; w < world_size; w++) {
        if (0 == app_rank[w]) {
            app_rank[w] = next++;
        }
    }
    free(index);
    free(spares);
    free(left);
    return FTRABIT_SPARE_PLAN_OK;
}

/* Checks the members' records: ranks in range and held at most once; -1 and
 * FTRABIT_SPARE_LEAVING hold none. */
static int ftrabit_assign_input_ok(const int *held, int n, int app_size, char *is_held)
{
    for (int i = 0; i < n; i++) {
        if (held[i] < FTRABIT_SPARE_LEAVING || held[i] >= app_size
            || (held[i] >= 0 && is_held[held[i]])) {
            return 0;
        }
        if (held[i] >= 0) {
            is_held[held[i]] = 1;
        }
    }
    return 1;
}

/* The waiting spare that takes a rank last held on `dead_host` (see the header), or -1. */
static int ftrabit_pick_spare(const int *host, const int *new_rank, int n, int dead_host)
{
    int best = -1, best_count = -1;

    for (int i = 0; i < n; i++) {
        if (-1 == new_rank[i] && host[i] == dead_host) {
            return i;
        }
    }
    for (int i = 0; i < n; i++) {
        if (-1 != new_rank[i]) {
            continue;
        }
        int count = 0; /* spares still waiting on this one's host */
        for (int j = 0; j < n; j++) {
            count += -1 == new_rank[j] && host[j] == host[i];
        }
        if (count > best_count) {
            best = i;
            best_count = count;
        }
    }
    return best;
}

int ftrabit_spare_assign(const int *held, const int *host, int n, int app_size,
                         const int *last_host, int *new_rank, int *unfilled, int *spares_left)
{
    if (NULL == held || NULL == host || NULL == last_host || NULL == new_rank || NULL == unfilled
        || NULL == spares_left || n < 0 || app_size < 1) {
        return FTRABIT_SPARE_PLAN_INVALID;
    }
    char *is_held = calloc((size_t) app_size, 1);
    if (NULL == is_held) {
        return FTRABIT_SPARE_PLAN_NOMEM;
    }
    if (!ftrabit_assign_input_ok(held, n, app_size, is_held)) {
        free(is_held);
        return FTRABIT_SPARE_PLAN_INVALID;
    }
    *unfilled = 0;
    *spares_left = 0;
    for (int i = 0; i < n; i++) {
        new_rank[i] = held[i];
        *spares_left += -1 == held[i];
    }
    for (int r = 0; r < app_size; r++) {
        if (is_held[r]) {
            continue;
        }
        int i = ftrabit_pick_spare(host, new_rank, n, last_host[r]);
        if (i < 0) {
            (*unfilled)++;
        } else {
            new_rank[i] = r;
            (*spares_left)--;
        }
    }
    free(is_held);
    return FTRABIT_SPARE_PLAN_OK;
}

int ftrabit_respawn_place(const int *load, int nhosts, int nrepl, int *host_of)
{
    if (NULL == load || nhosts < 1 || nrepl < 0 || (nrepl > 0 && NULL == host_of)) {
        return FTRABIT_SPARE_PLAN_INVALID;
    }
    for (int h = 0; h < nhosts; h++) {
        if (load[h] < 0) {
            return FTRABIT_SPARE_PLAN_INVALID;
        }
    }
    int *now = malloc(sizeof(int) * (size_t) nhosts);
    if (NULL == now) {
        return FTRABIT_SPARE_PLAN_NOMEM;
    }
    memcpy(now, load, sizeof(int) * (size_t) nhosts);
    for (int i = 0; i < nrepl; i++) {
        int best = 0;
        for (int h = 1; h < nhosts; h++) {
            if (now[h] < now[best]) {
                best = h;
            }
        }
        host_of[i] = best;
        now[best]++;
    }
    free(now);
    return FTRABIT_SPARE_PLAN_OK;
}
