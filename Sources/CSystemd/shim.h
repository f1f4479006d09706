#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>

/* glibc (>= 2.32) exports strerrorname_np, but only declares it under _GNU_SOURCE, which Swift's
 * Glibc module is not built with. Declaring the prototype here is cheaper and safer than
 * redefining _GNU_SOURCE for this module (that would change other glibc declarations, e.g.
 * strerror_r, and make them clash with Glibc's). Returns NULL for unknown numbers. */
extern const char *strerrorname_np(int errnum);

static inline const char *csd_errno_name(int errnum) {
        return strerrorname_np(errnum);
}
#include <sys/vfs.h>
/* mallopt(3), for a daemon whose large, short-lived buffers should go back to the system. */
#include <malloc.h>
