import Glibc
import SceneCore
import SceneStore
import SystemdKit
import Varlink

/// Start-up: options, configuration, store, socket, loop. Every failure is reported on stderr
/// and to systemd (STATUS= and ERRNO=) before a non-zero exit.
public enum DaemonMain {
    public static func run(_ arguments: [String]) -> Int32 {
        // Before any thread exists, so that every thread inherits the mask and the signals are
        // only ever seen by sd-event's signalfd.
        EventLoop.blockSignals([SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2])
        signal(SIGPIPE, SIG_IGN)
        raiseDescriptorLimit()
        ProcessMemory.returnLargeBuffers()

        let options: DaemonOptions
        do {
            options = try DaemonOptions.parse(arguments)
        } catch {
            printError("scened: \(error)\nTry 'scened --help'.")
            return 2
        }
        if options.help { printOut(DaemonOptions.usage); return 0 }
        if options.version { printOut("scened \(Daemon.version)"); return 0 }

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
            if options.checkConfig { printError(error.report); return 1 }
            if !error.others.isEmpty { printError(error.report) }
            return fail("configuration: \(error)", errno: EINVAL)
        }
        if options.checkConfig {
            // Unknown keys are ignored, as systemd ignores them (a newer drop-in must not stop an
            // older daemon), but a check must make a typo impossible to miss.
            for warning in config.warnings { printError(warning) }
            let files = config.files.isEmpty ? "no configuration files; defaults apply" : config.files.joined(separator: ", ")
            let count = config.warnings.count
            let warned = count == 0 ? "" : ", with \(count) warning\(count == 1 ? "" : "s") (ignored settings)"
            printOut("configuration valid\(warned) (\(files))")
            return 0
        }
        for warning in config.warnings { Diagnostics.warning(warning) }
        if options.dumpConfig {
            printOut("# Files: " + (config.files.isEmpty ? "(none; defaults)" : config.files.joined(separator: " ")))
            printOut(ConfigLoader.dump(config.settings))
            return 0
        }
        var settings = config.settings
        if let socket = options.socketPath { settings.socketPath = socket }

        // Store.
        let stateDirectory = options.stateDirectory ?? DaemonPaths.defaultStateDirectory()
        do {
            try SafeDirectory.prepare(stateDirectory, mode: 0o700)
        } catch {
            return fail("state directory: \(error)", errno: EPERM)
        }
        let journal = JournalLogger(level: settings.logLevel)
        let recover = options.recover || StartupStorage.recoverRequested(stateDirectory)
        let store: SceneStore
        let engine: LifecycleEngine
        // Only what was left out is kept: the loaded tables themselves become the engine's.
        let quarantined: [QuarantinedRow]
        let recordingFailure: StoreError?
        let heartbeat = LoadHeartbeat.start()
        do {
            defer { heartbeat.stop() }
            store = try SceneStore(path: stateDirectory + "/" + DaemonPaths.databaseName,
                                   durability: settings.durability, eventLogCapacity: settings.eventLogSize,
                                   recover: recover)
            // Large payloads stay on disk; the loop reads them back when asked (SavedDataReader).
            let (tables, rows, failure) = try store.loadTables(deferringPayloads: true)
            (quarantined, recordingFailure) = (rows, failure)
            // Consumed: the engine adopts the session table as it is, without a second copy.
            engine = try LifecycleEngine(configuration: settings.engineConfiguration, restoring: consume tables)
            // The load's page cache and scratch are freed but still resident.
            ProcessMemory.handBackFreed()
        } catch let error as StoreError {
            if case .damagedLog(let evidence) = error.kind {
                StartupStorage.logRefusal(error, evidence: evidence, journal)
                return fail(StartupStorage.refusal(error, stateDirectory: stateDirectory), errno: EUCLEAN)
            }
            return fail("\(error)", errno: EIO)
        } catch {
            return fail("restoring state from \(stateDirectory)/\(DaemonPaths.databaseName): \(error)", errno: EIO)
        }

        // Socket: inherited from systemd, or our own.
        let listenFD: Int32
        let socketPath: String
        let ownsSocket: Bool
        let activation: SocketActivation.Choice?
        do {
            activation = try SocketActivation.choose(ServiceManager.listenFDs(unsetEnvironment: true))
        } catch {
            return fail("socket activation: \(error)", errno: EBADF)
        }
        if let activation {
            let first = activation.listener
            guard ServiceManager.isUnixStreamListener(first.fd) else {
                return fail("socket activation: the '\(first.name ?? "unnamed")' socket is not a listening AF_UNIX stream socket", errno: EBADF)
            }
            for other in activation.others {
                close(other.fd)
                Diagnostics.warning("socket activation: closed fd \(other.fd) ('\(other.name ?? "unnamed")'); scened serves the one named '\(SocketActivation.name)'")
            }
            listenFD = first.fd
            // systemd passes the listening socket in blocking mode, and the listener accepts
            // until EAGAIN: left blocking, the loop would wedge in accept() after the first
            // client (and the watchdog would kill it). sd-varlink does the same fd_nonblock().
            let flags = fcntl(listenFD, F_GETFL)
            if flags < 0 || fcntl(listenFD, F_SETFL, flags | O_NONBLOCK) < 0 {
                let code = errno
                return fail("cannot make the socket-activated listening socket non-blocking: \(String(cString: strerror(code)))", errno: code)
            }
            socketPath = UnixSocket.boundPath(first.fd) ?? "(socket-activated)"
            ownsSocket = false
        } else {
            socketPath = settings.socketPath ?? DaemonPaths.defaultSocket()
            do {
                // The directory must be one nobody else can change: else another user could move
                // the socket aside and plant an impostor.
                let directory = socketPath.lastIndex(of: "/").map { String(socketPath[..<$0]) } ?? "."
                try SafeDirectory.prepare(directory.isEmpty ? "/" : directory, mode: 0o755)
            } catch {
                return fail("socket directory: \(error)", errno: EPERM)
            }
            do {
                // Open to every local user: each call is authorized by the caller's credentials.
                listenFD = try UnixSocket.listen(path: socketPath, mode: 0o666)
            } catch {
                return fail("cannot listen on \(socketPath): \(error)", errno: error.errno)
            }
            ownsSocket = true
        }

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
            // Consumed: kept here too, it would share the engine's tables for the daemon's life,
            // and the first change would copy them all (100 MB with a million sessions).
            let host = EngineHost(engine: consume engine, clock: DaemonClock(), writer: writer,
                                  savedData: try SavedDataReader(path: store.path))
            _ = host.quarantine.add(quarantined)
            var effective = config
            effective.settings = settings
            let daemon = try Daemon(options: options, config: effective, loader: loader, loop: loop, host: host,
                                    listenFD: listenFD, socketPath: socketPath, ownsSocket: ownsSocket)
            try daemon.start()
            let code = try daemon.run()
            return code
        } catch {
            if ownsSocket { unlink(socketPath) }
            return fail("\(error)", errno: EIO)
        }
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
    static func fail(_ message: String, errno code: Int32) -> Int32 {
        Diagnostics.error(message)
        _ = ServiceManager.notify("STATUS=Failed: \(message)\nERRNO=\(code)")
        return 1
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
