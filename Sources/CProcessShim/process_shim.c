// fork → prepare → execve, with failures in the child sent back as (stage, errno).
#define _GNU_SOURCE
#include "process_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct report {
    int stage;
    int error;
};

/// Child only: tells the parent where it failed and exits. write(2) and _exit(2) are
/// async-signal-safe.
static void fail(int report_fd, int stage) {
    struct report r = { stage, errno };
    ssize_t ignored = write(report_fd, &r, sizeof r);
    (void)ignored;
    _exit(127);
}

/// Child only: the decimal digits of `value` and a newline, without stdio (not
/// async-signal-safe).
static size_t format_pid(char *buffer, size_t size, pid_t value) {
    char digits[16];
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

/// Child only: closes every descriptor from `low` up except `keep`.
static int close_from(int low, int keep) {
    if (keep >= low) {
        if (keep > low && syscall(SYS_close_range, (unsigned)low, (unsigned)(keep - 1), 0u) != 0) return -1;
        if (keep < INT_MAX) return (int)syscall(SYS_close_range, (unsigned)(keep + 1), ~0u, 0u);
        return 0;
    }
    return (int)syscall(SYS_close_range, (unsigned)low, ~0u, 0u);
}

/// Child only: everything between fork and exec. Never returns.
static void child(const struct ps_spawn_request *rq, int report_fd) {
    // Keep the report end above the standard descriptors, which are about to be replaced.
    if (report_fd <= 2) {
        int moved = fcntl(report_fd, F_DUPFD_CLOEXEC, 3);
        if (moved < 0) fail(report_fd, PS_STAGE_DESCRIPTORS);
        report_fd = moved;
    }

    // Signals arrive blocked (the parent blocked them all around fork): reset every
    // disposition while nothing can be delivered to a handler inherited from the parent.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP) continue;
        // glibc's internal signals (32, 33) refuse with EINVAL; exec resets them anyway.
        if (sigaction(s, &dfl, NULL) != 0 && errno != EINVAL) fail(report_fd, PS_STAGE_SIGNALS);
    }

    if (setsid() < 0) fail(report_fd, PS_STAGE_SESSION);

    // Join the cgroup before exec, so that nothing the program forks starts outside it.
    if (rq->cgroup_procs != NULL) {
        int fd = open(rq->cgroup_procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0) fail(report_fd, PS_STAGE_CGROUP);
        char text[24];
        size_t length = format_pid(text, sizeof text, getpid());
        if (write(fd, text, length) != (ssize_t)length) fail(report_fd, PS_STAGE_CGROUP);
        close(fd);
    }

    // Raw system calls: they change this (the only) thread, without glibc's setxid broadcast
    // to threads that do not exist in the child.
    if (rq->change_gid || rq->change_uid) {
        gid_t gid = rq->change_gid ? rq->gid : getgid();
        if (syscall(SYS_setgroups, 1, &gid) != 0) fail(report_fd, PS_STAGE_GROUPS);
        if (rq->change_gid && syscall(SYS_setresgid, gid, gid, gid) != 0) fail(report_fd, PS_STAGE_GID);
    }
    if (rq->change_uid && syscall(SYS_setresuid, rq->uid, rq->uid, rq->uid) != 0) fail(report_fd, PS_STAGE_UID);

    if (chdir(rq->directory != NULL ? rq->directory : "/") != 0) fail(report_fd, PS_STAGE_CHDIR);

    // Duplicate the given descriptors above 2 first: one of them may itself be 0, 1 or 2.
    int out = rq->stdout_fd >= 0 ? fcntl(rq->stdout_fd, F_DUPFD_CLOEXEC, 3) : -1;
    int err = rq->stderr_fd >= 0 ? fcntl(rq->stderr_fd, F_DUPFD_CLOEXEC, 3) : -1;
    if ((rq->stdout_fd >= 0 && out < 0) || (rq->stderr_fd >= 0 && err < 0)) fail(report_fd, PS_STAGE_STDIO);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) fail(report_fd, PS_STAGE_STDIO);
    if (dup2(null, 0) < 0 || dup2(out >= 0 ? out : null, 1) < 0 || dup2(err >= 0 ? err : null, 2) < 0)
        fail(report_fd, PS_STAGE_STDIO);

    if (close_from(3, report_fd) != 0) fail(report_fd, PS_STAGE_DESCRIPTORS);

    sigset_t empty;
    sigemptyset(&empty);
    if (sigprocmask(SIG_SETMASK, &empty, NULL) != 0) fail(report_fd, PS_STAGE_SIGNALS);

    execve(rq->path, rq->argv, rq->envp);
    fail(report_fd, PS_STAGE_EXEC);
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

    // Block everything around fork so that no handler of ours runs in the child before it
    // has reset the dispositions.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(ends[0]);
        child(request, ends[1]);
    }
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
