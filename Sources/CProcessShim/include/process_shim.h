// The part of starting a process that cannot be written in Swift: between fork and exec the
// child of a multithreaded parent may only make async-signal-safe calls, and Swift code there
// could allocate or take locks another thread held at the fork.
#ifndef PROCESS_SHIM_H
#define PROCESS_SHIM_H

#include <sys/types.h>

/// Where the child failed (reported back through the close-on-exec pipe).
enum ps_stage {
    PS_STAGE_NONE = 0,
    PS_STAGE_PIPE,       // the parent's report pipe
    PS_STAGE_FORK,
    PS_STAGE_PIDFD,
    PS_STAGE_SIGNALS,
    PS_STAGE_SESSION,    // setsid
    PS_STAGE_CGROUP,     // opening or writing <cgroup>/cgroup.procs
    PS_STAGE_GROUPS,     // setgroups
    PS_STAGE_GID,
    PS_STAGE_UID,
    PS_STAGE_CHDIR,
    PS_STAGE_STDIO,      // /dev/null, dup2 onto 0, 1, 2
    PS_STAGE_DESCRIPTORS,// closing every other descriptor
    PS_STAGE_EXEC,
};

struct ps_spawn_request {
    const char *path;
    char *const *argv;          // NULL-terminated
    char *const *envp;          // NULL-terminated: exactly the child's environment
    const char *directory;      // NULL: "/"
    const char *cgroup_procs;   // NULL: stay in the parent's cgroup; else <cgroup>/cgroup.procs
    int change_gid;             // nonzero: setgroups({gid}), setresgid(gid)
    gid_t gid;
    int change_uid;             // nonzero: setresuid(uid) (after the groups)
    uid_t uid;
    int stdout_fd;              // -1: /dev/null
    int stderr_fd;              // -1: /dev/null
};

struct ps_spawn_result {
    pid_t pid;      // the child's pid, also after a failure in the child (then reaped); 0 if none
    int pidfd;      // close-on-exec pidfd on success, else -1
    int stage;      // enum ps_stage; PS_STAGE_NONE on success
    int error;      // errno at that stage
};

/// Forks, prepares the child and execs it. Returns 0 on success, -1 with `result` telling
/// where and why it failed; a child that failed has been reaped.
int ps_spawn(const struct ps_spawn_request *request, struct ps_spawn_result *result);

/// waitid(P_PIDFD, pidfd, WEXITED | WNOHANG): 1 with the outcome (`code` is CLD_EXITED,
/// CLD_KILLED or CLD_DUMPED, `status` the exit status or the signal), 0 while it runs, -1
/// with errno on error.
int ps_reap(int pidfd, int *code, int *status);

/// pidfd_send_signal(pidfd, signal): 0, or -1 with errno.
int ps_pidfd_signal(int pidfd, int signal);

/// "KILL" for 9 (sigabbrev_np), NULL when unknown.
const char *ps_signal_abbreviation(int signal);

/// 1 when `path` is on a cgroup v2 filesystem (statfs: CGROUP2_SUPER_MAGIC), 0 when not, -1
/// with errno when it cannot be examined.
int ps_is_cgroup2(const char *path);

/// The CLD_* codes, which Swift does not import (they are an enum behind macros).
int ps_cld_exited(void);
int ps_cld_killed(void);
int ps_cld_dumped(void);

#endif
