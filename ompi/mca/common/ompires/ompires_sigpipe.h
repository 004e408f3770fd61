/*
 * ompi-resilience: surviving the death of a TCP peer.
 *
 * Open MPI's TCP transport writes to its sockets with writev(). On Linux, a write to the
 * socket of a process that has just died raises SIGPIPE, and the default action of SIGPIPE
 * ends the writer: one failure then kills the survivors that happened to be sending to the
 * dead process (seen between a job and its respawned replacements, which talk over TCP).
 * btl/tcp asks for SO_NOSIGPIPE, but that socket option exists on BSD and macOS only.
 * Ignoring SIGPIPE turns such a write into an EPIPE error, which ULFM reports as the peer's
 * failure. An application's own SIGPIPE handler, or an explicit SIG_IGN, is left alone.
 * Open MPI patch 0015 (docs/ompi-patches.md) makes btl/tcp write with MSG_NOSIGNAL; this
 * stays for an Open MPI without it.
 *
 * Header only: used by coll/ftrabit (component) and by libftrabit (plain MPI).
 */
#ifndef OMPIRES_SIGPIPE_H
#define OMPIRES_SIGPIPE_H

#include <signal.h>
#include <stddef.h>

/* Returns 1 if SIGPIPE was at its default action and is ignored now, 0 otherwise. */
static inline int ompires_ignore_sigpipe_if_default(void)
{
    struct sigaction current;

    if (0 != sigaction(SIGPIPE, NULL, &current) || (current.sa_flags & SA_SIGINFO)
        || SIG_DFL != current.sa_handler) {
        return 0;
    }
    return SIG_ERR != signal(SIGPIPE, SIG_IGN);
}

#endif
