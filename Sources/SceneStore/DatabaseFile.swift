import Glibc

/// The database file as the store holds it before SQLite sees it: created if missing (and only
/// then), locked against a second daemon, and its header checked, so that a file that is not an
/// SQLite database is refused without SQLite ever writing to it.
///
/// Locking: `flock(LOCK_EX | LOCK_NB)` on this descriptor, held until the store closes. SQLite
/// itself uses POSIX record locks, which on Linux are independent of flock, so the two do not
/// interfere; and because this descriptor stays open until after SQLite has closed, closing it
/// cannot drop SQLite's record locks (the POSIX "any close releases all" trap). Readers such as
/// the sqlite3 shell can still inspect a running daemon's database.
struct DatabaseFile {
    let descriptor: Int32
    /// The file did not exist and was created empty by this open.
    let created: Bool

    static let headerMagic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    static func open(path: String) throws(StoreError) -> DatabaseFile {
        guard !path.isEmpty else { throw StoreError(kind: .cantOpen, path: path, message: "empty database path") }
        try checkDirectory(of: path)

        var creating = false
        var fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            // A write-ahead log without its database holds only the latest pages; replaying it into
            // a fresh file would make a damaged database, so refuse instead of creating one.
            var st = stat()
            if stat(path + "-wal", &st) == 0 && st.st_size > 0 {
                throw StoreError(kind: .corrupt, path: path,
                                 message: "the database file is missing but its write-ahead log \(path)-wal exists; "
                                     + "refusing to create a new database over it")
            }
            creating = true
            fd = Glibc.open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0o600)
        }
        guard fd >= 0 else {
            throw StoreError(errno: errno, path: path, context: creating ? "creating" : "opening for writing")
        }
        let file = DatabaseFile(descriptor: fd, created: creating)
        do throws(StoreError) {
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw StoreError(errno: errno, path: path, context: "fstat") }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw StoreError(kind: .cantOpen, path: path, message: "not a regular file")
            }
            if !lockWithin(fd, milliseconds: 500) {
                let err = errno
                if err == EWOULDBLOCK {
                    throw StoreError(kind: .locked, path: path,
                                     message: "in use by another process (another scened holds its lock)")
                }
                throw StoreError(errno: err, path: path, context: "locking")
            }
            try checkHeader(fd: fd, size: Int64(st.st_size), path: path)
        } catch {
            file.close()
            throw error
        }
        return file
    }

    /// Takes the exclusive lock, retrying briefly: a process this one is spawning shares the
    /// open file (and so the lock of a file just closed and reopened) until it execs and its
    /// close-on-exec copy goes. Another scened holds it for good, and still gets refused.
    static func lockWithin(_ fd: Int32, milliseconds: Int) -> Bool {
        for attempt in 0...milliseconds / 10 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK, attempt < milliseconds / 10 else { return false }
            usleep(10_000)
        }
        return false
    }

    /// Releases the lock. Call only after SQLite has closed the file.
    func close() { Glibc.close(descriptor) }

    /// The directory must exist and be writable: SQLite creates the -wal and -shm files beside the
    /// database. Checked up front so the error says so, instead of a later SQLITE_CANTOPEN.
    static func checkDirectory(of path: String) throws(StoreError) {
        let directory: String
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
            let d = String(path[..<slash])
            directory = d.isEmpty ? "/" : d
        } else {
            directory = "."
        }
        var st = stat()
        guard stat(directory, &st) == 0 else {
            let err = errno
            throw StoreError(kind: err == ENOSPC ? .diskFull : .cantOpen, path: path,
                             message: "directory \(directory): \(StoreError.errnoText(err))")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(kind: .cantOpen, path: path, message: "\(directory) is not a directory")
        }
        guard access(directory, W_OK) == 0 else {
            throw StoreError(kind: .notWritable, path: path,
                             message: "directory \(directory) is not writable (it must hold the -wal and -shm files): "
                                 + StoreError.errnoText(errno))
        }
    }

    /// Checks the 100-byte header (sqlite.org/fileformat2.html §1.3). An empty file is a new
    /// database (a first start stopped before the switch to WAL wrote page 1), unless a
    /// write-ahead log with content lies beside it: SQLite takes an empty file for a new
    /// database and deletes that log (pagerOpenWalIfPresent), losing its committed transactions
    /// without a word, so such a pair is refused, as a log without its file is.
    static func checkHeader(fd: Int32, size: Int64, path: String) throws(StoreError) {
        guard size > 0 else {
            var st = stat()
            if stat(path + "-wal", &st) == 0 && st.st_size > 0 {
                throw StoreError(kind: .corrupt, path: path,
                                 message: "the database file is empty but its write-ahead log \(path)-wal is not; "
                                     + "refusing to start a new database over it")
            }
            return
        }
        guard size >= 512 else {
            throw StoreError(kind: .notADatabase, path: path,
                             message: "not an SQLite database (only \(size) bytes, less than one page)")
        }
        var header = [UInt8](repeating: 0, count: 100)
        let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 0) }
        guard n == 100 else {
            throw n < 0 ? StoreError(errno: errno, path: path, context: "reading the header")
                : StoreError(kind: .io, path: path, message: "reading the header: short read")
        }
        guard header[0..<16].elementsEqual(headerMagic) else {
            throw StoreError(kind: .notADatabase, path: path,
                             message: "not an SQLite database (the file does not begin with \"SQLite format 3\")")
        }
        func damaged(_ what: String) -> StoreError {
            StoreError(kind: .corrupt, path: path, message: "database header is damaged: \(what)")
        }
        let pageSize = Int(header[16]) << 8 | Int(header[17])
        guard pageSize == 1 || (pageSize >= 512 && pageSize <= 32768 && pageSize & (pageSize - 1) == 0) else {
            throw damaged("page size \(pageSize)")
        }
        guard (1...2).contains(header[18]), (1...2).contains(header[19]) else {
            throw damaged("file format versions \(header[18])/\(header[19])")
        }
        guard header[21] == 64, header[22] == 32, header[23] == 32 else {
            throw damaged("payload fractions \(header[21])/\(header[22])/\(header[23])")
        }
        let applicationID = Int32(bitPattern: UInt32(header[68]) << 24 | UInt32(header[69]) << 16
                                  | UInt32(header[70]) << 8 | UInt32(header[71]))
        guard applicationID == 0 || applicationID == Schema.applicationID else {
            let hex = String(UInt32(bitPattern: applicationID), radix: 16)
            throw StoreError(kind: .notADatabase, path: path,
                             message: "an SQLite database of another application (application_id 0x\(hex)), not scened's")
        }
    }
}
