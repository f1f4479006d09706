import Glibc
import SceneCore
import SceneStore
import SystemdKit
import Varlink

/// Start-up: options, configuration, store, socket, loop. Every failure is reported on stderr
/// and to systemd (STATUS= and ERRNO=) before a non-zero exit.
public enum DaemonMain {
    public static func run(_ arguments: [String]) -> Int32 {
        prepareProcess()
        do {
            let options = try parseOptions(arguments)
            let (loader, config) = try loadConfiguration(options)
            var settings = config.settings
            if let socket = options.socketPath { settings.socketPath = socket }
            let stateDirectory = options.stateDirectory ?? DaemonPaths.defaultStateDirectory()
            do {
                try SafeDirectory.prepare(stateDirectory, mode: 0o700)
            } catch {
                throw fail("state directory: \(error)", errno: EPERM)
            }
            let journal = JournalLogger(level: settings.logLevel)
            let recover = options.recover || StartupStorage.recoverRequested(stateDirectory)
            // Only what was left out is kept: the loaded tables themselves become the engine's.
            let (store, engine, quarantined, recordingFailure) = try restore(settings, stateDirectory, recover: recover, journal)
            let socket = try openSocket(settings)
            do {
                let loop = try EventLoop()
                let writer = try StoreWriter(store: store)
                try writer.start()
                defer {
                    writer.stop()
                    writer.withStore { $0.close() }
                }
                StartupStorage.report(store, quarantined: quarantined, recordingFailure: recordingFailure, recover: recover,
                                      stateDirectory: stateDirectory, journal)
                // Consumed: kept here too, it would share the engine's tables for the daemon's
                // life, and the first change would copy them all.
                let host = EngineHost(engine: consume engine, clock: DaemonClock(), writer: writer,
                                      savedData: try SavedDataReader(path: store.path))
                _ = host.quarantine.add(quarantined)
                var effective = config
                effective.settings = settings
                let daemon = try Daemon(options: options, config: effective, loader: loader, loop: loop, host: host,
                                        listenFD: socket.fd, socketPath: socket.path, ownsSocket: socket.owned)
                try daemon.start()
                return try daemon.run()
            } catch {
                if socket.owned { unlink(socket.path) }
                throw fail("\(error)", errno: EIO)
            }
        } catch let exit as Exit {
            return exit.code
        } catch {
            return fail("\(error)", errno: EIO).code
        }
    }

    /// How `run` ends early: the exit status, the reason already reported.
    struct Exit: Error {
        let code: Int32
    }

    /// Before any thread exists, so that every thread inherits the signal mask and the signals
    /// are only ever seen by sd-event's signalfd.
    private static func prepareProcess() {
        EventLoop.blockSignals([SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2])
        signal(SIGPIPE, SIG_IGN)
        raiseDescriptorLimit()
        ProcessMemory.returnLargeBuffers()
    }

    /// The command line; --help and --version end here.
    private static func parseOptions(_ arguments: [String]) throws(Exit) -> DaemonOptions {
        let options: DaemonOptions
        do {
            options = try DaemonOptions.parse(arguments)
        } catch {
            printError("scened: \(error)\nTry 'scened --help'.")
            throw Exit(code: 2)
        }
        if options.help { printOut(DaemonOptions.usage); throw Exit(code: 0) }
        if options.version { printOut("scened \(Daemon.version)"); throw Exit(code: 0) }
        return options
    }

    /// The configuration; --check-config and --dump-config end here.
    private static func loadConfiguration(_ options: DaemonOptions) throws(Exit) -> (ConfigLoader, ConfigLoader.Result) {
        var loader = ConfigLoader()
        loader.root = options.configRoot
        loader.explicitFile = options.configFile
        if options.configRoot.isEmpty {
            loader.userDirectory = ConfigLoader.userDirectory(euid: geteuid(), environment: DaemonPaths.environment)
        }
        let config: ConfigLoader.Result
        do {
            config = try loader.load()
        } catch {
            if options.checkConfig { printError(error.report); throw Exit(code: 1) }
            if !error.others.isEmpty { printError(error.report) }
            throw fail("configuration: \(error)", errno: EINVAL)
        }
        if options.checkConfig {
            // Unknown keys are ignored, as systemd ignores them (a newer drop-in must not stop an
            // older daemon), but a check must make a typo impossible to miss.
            for warning in config.warnings { printError(warning) }
            let files = config.files.isEmpty ? "no configuration files; defaults apply" : config.files.joined(separator: ", ")
            let count = config.warnings.count
            let warned = count == 0 ? "" : ", with \(count) warning\(count == 1 ? "" : "s") (ignored settings)"
            printOut("configuration valid\(warned) (\(files))")
            throw Exit(code: 0)
        }
        for warning in config.warnings { Diagnostics.warning(warning) }
        if options.dumpConfig {
            printOut("# Files: " + (config.files.isEmpty ? "(none; defaults)" : config.files.joined(separator: " ")))
            printOut(ConfigLoader.dump(config.settings))
            throw Exit(code: 0)
        }
        return (loader, config)
    }

    /// Opens the store and restores the engine from it.
    private static func restore(_ settings: DaemonSettings, _ stateDirectory: String, recover: Bool, _ journal: JournalLogger)
        throws(Exit) -> (SceneStore, LifecycleEngine, [QuarantinedRow], StoreError?) {
        let heartbeat = LoadHeartbeat.start()
        defer { heartbeat.stop() }
        do {
            let store = try SceneStore(path: stateDirectory + "/" + DaemonPaths.databaseName,
                                       durability: settings.durability, eventLogCapacity: settings.eventLogSize,
                                       recover: recover)
            // Large payloads stay on disk; the loop reads them back when asked (SavedDataReader).
            let (tables, rows, failure) = try store.loadTables(deferringPayloads: true)
            // Consumed: the engine adopts the session table as it is, without a second copy.
            let engine = try LifecycleEngine(configuration: settings.engineConfiguration, restoring: consume tables)
            // The load's page cache and scratch are freed but still resident.
            ProcessMemory.handBackFreed()
            return (store, engine, rows, failure)
        } catch let error as StoreError {
            if case .damagedLog(let evidence) = error.kind {
                StartupStorage.logRefusal(error, evidence: evidence, journal)
                throw fail(StartupStorage.refusal(error, stateDirectory: stateDirectory), errno: EUCLEAN)
            }
            throw fail("\(error)", errno: EIO)
        } catch {
            throw fail("restoring state from \(stateDirectory)/\(DaemonPaths.databaseName): \(error)", errno: EIO)
        }
    }

    /// The listening socket: inherited from systemd, or our own.
    private static func openSocket(_ settings: DaemonSettings) throws(Exit) -> (fd: Int32, path: String, owned: Bool) {
        let activation: SocketActivation.Choice?
        do {
            activation = try SocketActivation.choose(ServiceManager.listenFDs(unsetEnvironment: true))
        } catch {
            throw fail("socket activation: \(error)", errno: EBADF)
        }
        if let activation { return try inherited(activation) }
        let socketPath = settings.socketPath ?? DaemonPaths.defaultSocket()
        do {
            // The directory must be one nobody else can change: else another user could move
            // the socket aside and plant an impostor.
            let directory = socketPath.lastIndex(of: "/").map { String(socketPath[..<$0]) } ?? "."
            try SafeDirectory.prepare(directory.isEmpty ? "/" : directory, mode: 0o755)
        } catch {
            throw fail("socket directory: \(error)", errno: EPERM)
        }
        do {
            // Open to every local user: each call is authorized by the caller's credentials.
            return (try UnixSocket.listen(path: socketPath, mode: 0o666), socketPath, true)
        } catch {
            throw fail("cannot listen on \(socketPath): \(error)", errno: error.errno)
        }
    }

    private static func inherited(_ activation: SocketActivation.Choice) throws(Exit) -> (fd: Int32, path: String, owned: Bool) {
        let first = activation.listener
        guard ServiceManager.isUnixStreamListener(first.fd) else {
            throw fail("socket activation: the '\(first.name ?? "unnamed")' socket is not a listening AF_UNIX stream socket", errno: EBADF)
        }
        for other in activation.others {
            close(other.fd)
            Diagnostics.warning("socket activation: closed fd \(other.fd) ('\(other.name ?? "unnamed")'); scened serves the one named '\(SocketActivation.name)'")
        }
        // systemd passes the listening socket in blocking mode, and the listener accepts until
        // EAGAIN: left blocking, the loop would wedge in accept() after the first client.
        let flags = fcntl(first.fd, F_GETFL)
        if flags < 0 || fcntl(first.fd, F_SETFL, flags | O_NONBLOCK) < 0 {
            let code = errno
            throw fail("cannot make the socket-activated listening socket non-blocking: \(String(cString: strerror(code)))", errno: code)
        }
        return (first.fd, UnixSocket.boundPath(first.fd) ?? "(socket-activated)", false)
    }

    /// Each client is a descriptor, and MaxConnections= defaults to 4096 while the usual soft
    /// limit is 1024: raise the soft limit to the hard one, as systemd advises for programs
    /// that never use select(2). Beyond the hard limit, accepting pauses at EMFILE.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// Start-up failure: tell systemd why (STATUS=, ERRNO=) and the operator (stderr).
    static func fail(_ message: String, errno code: Int32) -> Exit {
        Diagnostics.error(message)
        _ = ServiceManager.notify("STATUS=Failed: \(message)\nERRNO=\(code)")
        return Exit(code: 1)
    }

    static func printOut(_ text: String) {
        var line = text.hasSuffix("\n") ? text : text + "\n"
        line.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
    }

    static func printError(_ text: String) {
        var line = text.hasSuffix("\n") ? text : text + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
