import Glibc

// systemdkit-probe ROLE: the child side of SystemdKitTests' tests that need a process of their
// own (private namespaces with or without a journald of their own, socket activation). A test
// starts it in the right surroundings, and it runs the checks of ROLE, reporting each on stdout
// as `ok NAME` or `fail NAME: REASON` (see CheckRunner); it exits 1 when any check failed, 64
// on a wrong argument. The test asserts that every check it expects was reported ok.
//
// Not for running by hand: the journal roles assume a fresh /run (they bind journald's socket
// path when free, and remove only sockets they bound themselves).

let roles: [String: (CheckRunner) -> Void] = [
    "no-journald": { runner in
        let checks = JournaldChecks()
        runner.run("missingSocketDropsSilently", checks.missingSocketDropsSilently)
        runner.run("staleSocketIsRefused", checks.staleSocketIsRefused)
        runner.run("wireFormat", checks.wireFormat)
    },
    "journald": { runner in
        let checks = JournaldChecks()
        runner.run("fieldsRoundTrip", checks.fieldsRoundTrip)
        runner.run("matchesAndCursors", checks.matchesAndCursors)
        runner.run("directoryAndFiles", checks.directoryAndFiles)
        runner.run("followInEventLoop", checks.followInEventLoop)
    },
    "listen-fds": { runner in
        runner.run("reportListenFDs", ListenFDCheck().reportListenFDs)
    },
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 1, let role = roles[arguments[0]] else {
    writeAll(2, "usage: systemdkit-probe \(roles.keys.sorted().joined(separator: "|"))\n")
    exit(64)
}
let runner = CheckRunner()
role(runner)
exit(runner.failed == 0 ? 0 : 1)
