// vfork → prepare → execve, with failures in the child sent back as (stage, errno).
#define _GNU_SOURCE
#include "process_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/// The kernel's struct sigaction (not glibc's, whose mask is 128 bytes).
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

struct report {
    int stage;
    int error;
};

// Everything the child runs is marked no_sanitize and makes raw system calls only: it shares
// the parent's memory until exec, and a sanitizer's interceptors (close, open, dup2 and
// memset keep books in that shared memory) or instrumentation must not act for it there.
// (disable_sanitizer_instrumentation also drops ThreadSanitizer's function entry and exit
// hooks, which no_sanitize keeps and which would touch the parent thread's state.)
#if defined(__has_attribute) && __has_attribute(disable_sanitizer_instrumentation)
#define CHILD_CODE __attribute__((disable_sanitizer_instrumentation, noinline))
#else
#define CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#endif

/// Child only: tells the parent where it failed and exits.
CHILD_CODE static void fail(int report_fd, int stage, long result) {
    struct report r = { stage, (int)-result };
    syscall(SYS_write, report_fd, &r, sizeof r);
    syscall(SYS_exit_group, 127);
    for (;;) {}
}

/// Child only: the raw call's result, negative errno on failure. (syscall() sets errno, the
/// parent thread's, shared with this child; the parent reads none after a successful vfork.)
CHILD_CODE static long raw(long result) { return result == -1 ? -errno : result; }

/// Child only: the decimal digits of `value` and a newline.
CHILD_CODE static size_t format_pid(char *buffer, size_t size, long value) {
    char digits[24];
    size_t n = 0;
    unsigned long v = (unsigned long)value;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && n < sizeof digits);
    size_t length = 0;
    while (n > 0 && length + 1 < size) buffer[length++] = digits[--n];
    buffer[length++] = '\n';
    return length;
}

/// Child only: `from` onto `to` without close-on-exec (dup3 refuses from == to).
CHILD_CODE static long move_onto(int from, int to) {
    if (from == to) return raw(syscall(SYS_fcntl, to, F_SETFD, 0));
    return raw(syscall(SYS_dup3, from, to, 0));
}

/// Child only: closes every descriptor from `low` up except `keep`.
CHILD_CODE static long close_from(int low, int keep) {
    long r = 0;
    if (keep >= low) {
        if (keep > low) r = raw(syscall(SYS_close_range, (unsigned)low, (unsigned)(keep - 1), 0u));
        if (r == 0 && keep < INT_MAX) r = raw(syscall(SYS_close_range, (unsigned)(keep + 1), ~0u, 0u));
        return r;
    }
    return raw(syscall(SYS_close_range, (unsigned)low, ~0u, 0u));
}

/// Child only: everything between vfork and exec. Never returns. It shares the parent's memory
/// (the parent suspended until exec): it writes nothing but its own stack frames (below the
/// parent's) and the report pipe.
CHILD_CODE static void child(const struct ps_spawn_request *rq, int report_fd, int read_end) {
    long r;
    syscall(SYS_close, read_end);
    // Keep the report end above the standard descriptors, which are about to be replaced.
    if (report_fd <= 2) {
        r = raw(syscall(SYS_fcntl, report_fd, F_DUPFD_CLOEXEC, 3));
        if (r < 0) fail(report_fd, PS_STAGE_DESCRIPTORS, r);
        report_fd = (int)r;
    }

    // Signals arrive blocked (the parent blocked them all around vfork): reset every
    // disposition while nothing can be delivered to a handler inherited from the parent.
    // The kernel's call, because glibc's sigaction refuses its internal signals (32, 33),
    // whose SIG_IGN would otherwise survive exec.
    static const struct kernel_sigaction dfl = { SIG_DFL, 0, NULL, 0 };
    for (int s = 1; s <= 64; s++) {
        if (s == SIGKILL || s == SIGSTOP) continue;
        r = raw(syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask));
        if (r != 0) fail(report_fd, PS_STAGE_SIGNALS, r);
    }

    r = raw(syscall(SYS_setsid));
    if (r < 0) fail(report_fd, PS_STAGE_SESSION, r);

    // Join the cgroup before exec, so that nothing the program forks starts outside it.
    if (rq->cgroup_procs != NULL) {
        long fd = raw(syscall(SYS_openat, AT_FDCWD, rq->cgroup_procs, O_WRONLY | O_CLOEXEC, 0));
        if (fd < 0) fail(report_fd, PS_STAGE_CGROUP, fd);
        char text[24];
        size_t length = format_pid(text, sizeof text, syscall(SYS_getpid));
        r = raw(syscall(SYS_write, fd, text, length));
        if (r != (long)length) fail(report_fd, PS_STAGE_CGROUP, r < 0 ? r : -EIO);
        syscall(SYS_close, fd);
    }

    // The ids of this (the only) thread, without glibc's setxid broadcast to threads.
    if (rq->change_gid || rq->change_uid) {
        gid_t gid = rq->change_gid ? rq->gid : (gid_t)syscall(SYS_getgid);
        r = raw(syscall(SYS_setgroups, 1, &gid));
        if (r != 0) fail(report_fd, PS_STAGE_GROUPS, r);
        if (rq->change_gid) {
            r = raw(syscall(SYS_setresgid, gid, gid, gid));
            if (r != 0) fail(report_fd, PS_STAGE_GID, r);
        }
    }
    if (rq->change_uid) {
        r = raw(syscall(SYS_setresuid, rq->uid, rq->uid, rq->uid));
        if (r != 0) fail(report_fd, PS_STAGE_UID, r);
    }

    r = raw(syscall(SYS_chdir, rq->directory != NULL ? rq->directory : "/"));
    if (r != 0) fail(report_fd, PS_STAGE_CHDIR, r);

    // Duplicate the given descriptors above 2 first: one of them may itself be 0, 1 or 2.
    long out = -1, err = -1;
    if (rq->stdout_fd >= 0 && (out = raw(syscall(SYS_fcntl, rq->stdout_fd, F_DUPFD_CLOEXEC, 3))) < 0)
        fail(report_fd, PS_STAGE_STDIO, out);
    if (rq->stderr_fd >= 0 && (err = raw(syscall(SYS_fcntl, rq->stderr_fd, F_DUPFD_CLOEXEC, 3))) < 0)
        fail(report_fd, PS_STAGE_STDIO, err);
    long null = raw(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC, 0));
    if (null < 0) fail(report_fd, PS_STAGE_STDIO, null);
    if ((r = move_onto((int)null, 0)) < 0 || (r = move_onto((int)(out >= 0 ? out : null), 1)) < 0
        || (r = move_onto((int)(err >= 0 ? err : null), 2)) < 0)
        fail(report_fd, PS_STAGE_STDIO, r);

    r = close_from(3, report_fd);
    if (r != 0) fail(report_fd, PS_STAGE_DESCRIPTORS, r);

    // The soft limit of descriptors back to the usual 1024 (a daemon such as scened raises its
    // own to the hard limit): programs using select(2) break above FD_SETSIZE, which is why
    // the service manager starts services with 1024 too. The hard limit stays.
    struct { unsigned long long cur, max; } lim;
    if (raw(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &lim)) == 0 && lim.cur > 1024) {
        lim.cur = 1024;
        syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, NULL);
    }

    unsigned long empty = 0;
    r = raw(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty, NULL, sizeof empty));
    if (r != 0) fail(report_fd, PS_STAGE_SIGNALS, r);

    r = raw(syscall(SYS_execve, rq->path, rq->argv, rq->envp));
    fail(report_fd, PS_STAGE_EXEC, r);
}

static void set_failure(struct ps_spawn_result *result, int stage, int error) {
    result->stage = stage;
    result->error = error;
}

int ps_spawn(const struct ps_spawn_request *request, struct ps_spawn_result *result) {
    result->pid = 0;
    result->pidfd = -1;
    set_failure(result, PS_STAGE_NONE, 0);

    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) {
        set_failure(result, PS_STAGE_PIPE, errno);
        return -1;
    }

    // Block everything around vfork so that no handler of ours runs in the child before it
    // has reset the dispositions (in a child sharing our memory, one could corrupt it).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    // As posix_spawn does: the child borrows the address space until exec, so nothing is
    // copied however large the daemon is, and this thread resumes once the child has exec'd
    // or failed. (The libc call, not clone(): ThreadSanitizer intercepts clone as a fork and
    // then breaks in a child sharing its memory; it turns vfork into a real fork instead.)
    pid_t pid = vfork();
    if (pid == 0) child(request, ends[1], ends[0]);
    int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ends[1]);
    if (pid < 0) {
        close(ends[0]);
        set_failure(result, PS_STAGE_FORK, fork_error);
        return -1;
    }
    result->pid = pid;

    // Taken before the child can be reaped, so that it names this child and no other.
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int pidfd_error = errno;

    // EOF: exec succeeded (the write end closed on exec). A report: the child failed.
    struct report r = { PS_STAGE_NONE, 0 };
    ssize_t n;
    do {
        n = read(ends[0], &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    close(ends[0]);

    if (n == (ssize_t)sizeof r || pidfd < 0) {
        if (n != (ssize_t)sizeof r) {
            kill(pid, SIGKILL);
            r.stage = PS_STAGE_PIDFD;
            r.error = pidfd_error;
        }
        if (pidfd >= 0) close(pidfd);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        set_failure(result, r.stage, r.error);
        return -1;
    }
    result->pidfd = pidfd;
    return 0;
}

int ps_reap(int pidfd, int *code, int *status) {
    siginfo_t info;
    for (;;) {
        memset(&info, 0, sizeof info);
        if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) == 0) break;
        if (errno != EINTR) return -1;
    }
    if (info.si_pid == 0) return 0;
    *code = info.si_code;
    *status = info.si_status;
    return 1;
}

int ps_pidfd_signal(int pidfd, int signal) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0u);
}

const char *ps_signal_abbreviation(int signal) { return sigabbrev_np(signal); }

int ps_is_cgroup2(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return info.f_type == 0x63677270 ? 1 : 0;  // CGROUP2_SUPER_MAGIC
}

int ps_cld_exited(void) { return CLD_EXITED; }
int ps_cld_killed(void) { return CLD_KILLED; }
int ps_cld_dumped(void) { return CLD_DUMPED; }
